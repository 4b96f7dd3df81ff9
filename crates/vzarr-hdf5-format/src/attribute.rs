//! Attributes of an object, compact (attribute messages in the object header) or dense
//! (attribute info message, fractal heap, v2 B-tree record types 8 and 9) (HDF5 File Format
//! Specification 3.0, sections IV.A.2.m "Attribute Message", IV.A.2.v "Attribute Info
//! Message", III.G "Fractal Heap" and III.A.2 "Version 2 B-trees").
//!
//! Order: the order `H5Aiterate2` gives with the creation-order index (what the libhdf5
//! scanner lists): by creation order when the object tracks it; otherwise compact attributes
//! come in the order of their messages in the header (the library numbers them so), and dense
//! ones in the order of the name index, by hash of the name (the library sorts them on an
//! all-zero creation order, which the C library's merge sort leaves in that order). Sort by
//! [`Attribute::name_bytes`] for name order.

use std::ops::ControlFlow;

use bytes::Bytes;

use crate::btree::v2::BTreeV2;
use crate::decode::Cursor;
use crate::error::{Error, Result};
use crate::file::File;
use crate::heap::fractal::FractalHeap;
use crate::messages::attribute::{self, AttributeInfo, RawAttribute};
use crate::messages::dataspace::{self, Dataspace};
use crate::messages::datatype::{self, CharacterSet, Datatype};
use crate::messages::{decode_first, msg, resolve};
use crate::object_header::ObjectHeader;

/// An attribute with its raw value.
#[derive(Clone, Debug)]
pub struct Attribute {
    /// Name (decoded lossily as UTF-8).
    pub name: String,
    /// Raw name bytes.
    pub name_bytes: Vec<u8>,
    /// Character set of the name.
    pub charset: CharacterSet,
    /// Element type.
    pub datatype: Datatype,
    /// Whether the element type is a committed (named) datatype stored elsewhere in the file
    /// rather than written with the attribute.
    pub datatype_shared: bool,
    /// Shape.
    pub dataspace: Dataspace,
    /// The value: every element in the file's encoding (element count times
    /// [`Datatype::storage_size`] bytes). Variable-length elements are global heap references:
    /// read them with [`File::read_vlen`].
    pub value: Bytes,
    /// Creation order, when tracked.
    pub creation_order: Option<u32>,
}

const WHAT: &str = "attribute message";

impl File {
    /// The attribute info message of `oh`, if any.
    pub fn attribute_info(&self, oh: &ObjectHeader) -> Result<Option<AttributeInfo>> {
        decode_first(
            self,
            oh,
            msg::ATTRIBUTE_INFO,
            "attribute info message",
            |c, _| attribute::decode_info(c),
        )
    }

    /// Every attribute of the object `oh` (see the module documentation for the order).
    pub fn attributes(&self, oh: &ObjectHeader) -> Result<Vec<Attribute>> {
        let info = if oh.version > 1 {
            self.attribute_info(oh)?
        } else {
            None
        };
        if let Some(info) = info.as_ref().filter(|i| i.heap_address.is_some()) {
            return self
                .dense_attributes(info)
                .map_err(|e| e.context("dense attribute storage of the object", oh.address));
        }
        let mut out = Vec::new();
        for m in oh.find_all(msg::ATTRIBUTE) {
            let (data, addr) = crate::messages::body(self, msg::ATTRIBUTE, m)?;
            let mut a = self.decode_attribute(&data, addr)?;
            a.creation_order = m.creation_order.map(u32::from);
            out.push(a);
        }
        if oh.tracks_attribute_creation_order() {
            out.sort_by_key(|a| a.creation_order);
        }
        Ok(out)
    }

    fn dense_attributes(&self, info: &AttributeInfo) -> Result<Vec<Attribute>> {
        let (heap_addr, bt_addr) = info.heap_and_name_index("attribute info message")?;
        let heap = FractalHeap::open(self, heap_addr)?;
        let bt = BTreeV2::open(self, bt_addr, Some(8))?;
        let sizes = self.sizes();
        let mut out = Vec::new();
        bt.for_each(self, &mut |rec| {
            let mut c = Cursor::new(rec, "v2 B-tree record (type 8)", bt_addr, sizes);
            let id: [u8; 8] = c.bytes(8)?.try_into().map_err(|_| c.truncated(8))?;
            let flags = c.u8()?;
            let order = c.u32()?;
            let body = if flags & 0x02 != 0 {
                let table = self.sohm_table()?;
                let table = table.as_ref().as_ref().ok_or_else(|| {
                    Error::invalid(
                        WHAT,
                        bt_addr,
                        "shared attribute without a shared message table",
                    )
                })?;
                table.read_message(self, msg::ATTRIBUTE, &id)?
            } else {
                heap.read_object(self, &id)?
            };
            let mut a = self.decode_attribute(&body, heap_addr)?;
            a.creation_order = Some(order);
            out.push(a);
            Ok(ControlFlow::Continue(()))
        })?;
        if info.track_creation_order {
            out.sort_by_key(|a| a.creation_order);
        }
        Ok(out)
    }

    /// Decodes one attribute message body (starting at absolute offset `addr`).
    fn decode_attribute(&self, data: &Bytes, addr: u64) -> Result<Attribute> {
        let sizes = self.sizes();
        let raw: RawAttribute = {
            let mut c = Cursor::new(data, WHAT, addr, sizes);
            attribute::split(&mut c, data)?
        };
        let (dt, dt_addr) = resolve(
            self,
            msg::DATATYPE,
            if raw.datatype_shared { 0x02 } else { 0 },
            &raw.datatype,
            raw.datatype_address,
            0,
        )?;
        let datatype = datatype::decode(&mut Cursor::new(&dt, "datatype message", dt_addr, sizes))
            .map_err(|e| e.context(WHAT, addr))?;
        let (ds, ds_addr) = resolve(
            self,
            msg::DATASPACE,
            if raw.dataspace_shared { 0x02 } else { 0 },
            &raw.dataspace,
            raw.dataspace_address,
            0,
        )?;
        let dataspace =
            dataspace::decode(&mut Cursor::new(&ds, "dataspace message", ds_addr, sizes))
                .map_err(|e| e.context(WHAT, addr))?;
        let n = dataspace
            .num_elements()
            .and_then(|n| n.checked_mul(datatype.storage_size(sizes)))
            .filter(|&n| n <= raw.data.len() as u64)
            .ok_or_else(|| {
                Error::invalid(
                    WHAT,
                    addr,
                    format!(
                        "value of {:?} x {} bytes does not fit the {} bytes of the message",
                        dataspace.dims,
                        datatype.storage_size(sizes),
                        raw.data.len()
                    ),
                )
            })?;
        Ok(Attribute {
            name: String::from_utf8_lossy(&raw.name).into_owned(),
            name_bytes: raw.name,
            charset: raw.charset,
            datatype,
            datatype_shared: raw.datatype_shared,
            dataspace,
            value: raw.data.slice(..n as usize),
            creation_order: None,
        })
    }
}
