//! References stored in raw data: classic object references (an address), classic region
//! references (a global heap id of an address and a selection) and the references of HDF5
//! 1.12+ (a type byte, flags and either the object token inline or a global heap blob)
//! (HDF5 File Format Specification 3.0, section IV.A.2.d "Datatype Message", class 7
//! "Reference"; appendix D, sections VIII.B "Reference Encoding (Revised)" and VIII.C
//! "Reference Encoding (Backward Compatibility)"; section III.E "Global Heap").

use bytes::Bytes;

use crate::decode::{Cursor, decode_addr, le_uint};
use crate::error::{Error, Result};
use crate::file::File;
use crate::heap::global::decode_id;
use crate::messages::datatype::{Datatype, ReferenceKind, TypeClass, VlenKind};

const WHAT: &str = "reference";

/// A decoded, non-null reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// Kind of reference.
    pub kind: ReferenceKind,
    /// Absolute file offset of the referenced object's header (in `file` when external).
    pub object: u64,
    /// The file the object is in, for references to other files.
    pub file: Option<String>,
    /// The attribute's name, for attribute references.
    pub attribute: Option<String>,
    /// The encoded selection, for region references.
    pub selection: Option<Bytes>,
}

impl File {
    /// Decodes one reference element of kind `kind`; `None` for a null reference.
    pub fn decode_reference(
        &self,
        kind: ReferenceKind,
        element: &[u8],
    ) -> Result<Option<Reference>> {
        let sizes = self.sizes();
        let so = usize::from(sizes.offset);
        let mut c = Cursor::new(element, WHAT, 0, sizes);
        let plain = |object, selection| Reference {
            kind,
            object,
            file: None,
            attribute: None,
            selection,
        };
        match kind {
            ReferenceKind::Object1 => {
                let raw = c.bytes(so)?;
                if raw.iter().all(|&b| b == 0) {
                    return Ok(None);
                }
                match decode_addr(raw, sizes.base) {
                    Some(None) => Ok(None),
                    Some(Some(a)) => Ok(Some(plain(a, None))),
                    None => Err(c.invalid("object address overflows")),
                }
            }
            ReferenceKind::DatasetRegion1 => {
                let id = decode_id(&mut c)?;
                let Some(col) = id.collection.filter(|&a| a != sizes.base) else {
                    return Ok(None);
                };
                let obj = self.global_heap_object(col, id.index)?;
                let mut r = Cursor::new(&obj, "region reference", col, sizes);
                let object = r
                    .addr()?
                    .ok_or_else(|| r.invalid("region of an undefined object"))?;
                Ok(Some(plain(object, Some(obj.slice(so..)))))
            }
            _ => self.decode_new_reference(element),
        }
    }

    fn decode_new_reference(&self, element: &[u8]) -> Result<Option<Reference>> {
        let sizes = self.sizes();
        let mut c = Cursor::new(element, WHAT, 0, sizes);
        let rtype = c.u8()?;
        let flags = c.u8()?;
        let kind = match rtype {
            0 => return Ok(None),
            2 => ReferenceKind::Object2,
            3 => ReferenceKind::DatasetRegion2,
            4 => ReferenceKind::Attribute,
            t => return Err(c.invalid(format!("reference type {t}"))),
        };
        let external = flags & 0x01 != 0;
        let blob: Bytes;
        let mut b = if kind == ReferenceKind::Object2 && !external {
            // Stored inline: token size, token.
            Cursor::new(&element[2..], WHAT, 0, sizes)
        } else {
            let _size = c.u32()?;
            let id = decode_id(&mut c)?;
            let Some(col) = id.collection.filter(|&a| a != sizes.base) else {
                return Ok(None);
            };
            blob = self.global_heap_object(col, id.index)?;
            Cursor::new(&blob, "reference blob", col, sizes)
        };
        let token_len = usize::from(b.u8()?);
        let token = b.bytes(token_len)?;
        if token_len > 16 {
            return Err(b.invalid(format!("object token of {token_len} bytes")));
        }
        let object = sizes
            .base
            .checked_add(le_uint(token))
            .ok_or_else(|| Error::invalid(WHAT, 0, "object address overflows"))?;
        let string = |b: &mut Cursor| -> Result<String> {
            let n = usize::from(b.u16()?);
            Ok(String::from_utf8_lossy(b.bytes(n)?).into_owned())
        };
        let file = if external {
            Some(string(&mut b)?)
        } else {
            None
        };
        let (attribute, selection) = match kind {
            ReferenceKind::Attribute => (Some(string(&mut b)?), None),
            ReferenceKind::DatasetRegion2 => {
                let rest = b.bytes(b.remaining())?;
                (None, Some(Bytes::copy_from_slice(rest)))
            }
            _ => (None, None),
        };
        Ok(Some(Reference {
            kind,
            object,
            file,
            attribute,
            selection,
        }))
    }

    /// The references in a raw value of type `datatype`: a reference type gives one per
    /// element, a variable-length sequence of references gives the references of each
    /// element (read from the global heap) — the form of `DIMENSION_LIST`.
    pub fn references(
        &self,
        datatype: &Datatype,
        value: &[u8],
    ) -> Result<Vec<Vec<Option<Reference>>>> {
        let sizes = self.sizes();
        let esize = datatype.storage_size(sizes) as usize;
        if esize == 0 {
            return Ok(Vec::new());
        }
        match &datatype.class {
            TypeClass::Reference { kind } => value
                .chunks_exact(esize)
                .map(|e| Ok(vec![self.decode_reference(*kind, e)?]))
                .collect(),
            TypeClass::VariableLength {
                kind: VlenKind::Sequence,
                base,
            } => {
                let TypeClass::Reference { kind } = base.class else {
                    return Err(Error::invalid(
                        WHAT,
                        0,
                        "sequence of something other than references",
                    ));
                };
                let rsize = base.storage_size(sizes);
                value
                    .chunks_exact(esize)
                    .map(|e| {
                        let data = self.read_vlen(e, rsize)?;
                        data.chunks_exact(rsize as usize)
                            .map(|r| self.decode_reference(kind, r))
                            .collect()
                    })
                    .collect()
            }
            _ => Err(Error::invalid(WHAT, 0, "not a reference type")),
        }
    }
}
