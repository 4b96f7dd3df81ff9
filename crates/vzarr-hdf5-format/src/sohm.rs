//! The shared object header message table (`SMTB`) and its heaps: where messages shared
//! between objects are stored (HDF5 File Format Specification 3.0, section III.I "Disk
//! Format: Level 1I - Shared Object Header Message Table", and section IV.A.2.p "Shared
//! Message Table Message" in the superblock extension).
//!
//! A shared message found in an object header names its heap id only; the index of the table
//! that covers the message's type gives the fractal heap to look it up in. The list
//! (`SMLI`) and B-tree indexes of the table are only needed to write, not to read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::decode::Cursor;
use crate::error::{Error, Result};
use crate::file::{File, expect_signature, lock};
use crate::heap::fractal::FractalHeap;
use crate::messages::msg;
use crate::object_header::ObjectHeader;

const WHAT: &str = "shared message table";
/// Most indexes a table may have (`H5O_SHMESG_MAX_NINDEXES`).
const MAX_INDEXES: usize = 8;

#[derive(Debug)]
struct Index {
    type_flags: u16,
    heap: Option<u64>,
}

/// The decoded table.
#[derive(Debug)]
pub(crate) struct SohmTable {
    address: u64,
    indexes: Vec<Index>,
    heaps: Mutex<HashMap<u64, Arc<FractalHeap>>>,
}

/// Loads the table named by the superblock extension `ext`, if it has one.
pub(crate) fn load(file: &File, ext: &ObjectHeader) -> Result<Option<SohmTable>> {
    let Some(m) = ext.find(msg::SHARED_TABLE) else {
        return Ok(None);
    };
    let mut c = Cursor::new(
        &m.data,
        "shared message table message",
        m.address,
        file.sizes(),
    );
    let version = c.u8()?;
    if version != 0 {
        return Err(c.invalid(format!("version {version}")));
    }
    let addr = c
        .addr()?
        .ok_or_else(|| c.invalid("undefined table address"))?;
    let n = usize::from(c.u8()?);
    if n == 0 || n > MAX_INDEXES {
        return Err(c.invalid(format!("{n} indexes")));
    }
    let so = usize::from(file.sizes().offset);
    let entry = 14 + 2 * so;
    let len = 4 + n * entry + 4;
    let img = file.read(WHAT, addr, len as u64)?;
    expect_signature(WHAT, addr, &img, "SMTB")?;
    file.verify_trailing(WHAT, addr, &img)?;
    let mut c = Cursor::new(&img, WHAT, addr, file.sizes());
    c.skip(4)?;
    let mut indexes = Vec::with_capacity(n);
    for _ in 0..n {
        let v = c.u8()?;
        if v != 0 {
            return Err(c.invalid(format!("index version {v}")));
        }
        let _index_type = c.u8()?;
        let type_flags = c.u16()?;
        let _min_size = c.u32()?;
        let _list_cutoff = c.u16()?;
        let _btree_cutoff = c.u16()?;
        let _count = c.u16()?;
        let _index_addr = c.addr()?;
        let heap = c.addr()?;
        indexes.push(Index { type_flags, heap });
    }
    Ok(Some(SohmTable {
        address: addr,
        indexes,
        heaps: Mutex::new(HashMap::new()),
    }))
}

/// The bit of a message type in an index's type flags (`1 << type`).
fn type_bit(kind: u16) -> Option<u16> {
    match kind {
        msg::DATASPACE | msg::DATATYPE | msg::FILL | msg::FILTERS | msg::ATTRIBUTE => {
            Some(1 << kind)
        }
        _ => None,
    }
}

impl SohmTable {
    /// The fractal heap holding shared messages of type `kind`.
    pub(crate) fn heap_for(&self, file: &File, kind: u16) -> Result<Arc<FractalHeap>> {
        let bit = type_bit(kind).ok_or_else(|| {
            Error::invalid(
                WHAT,
                self.address,
                format!("message type {kind:#06x} cannot be shared"),
            )
        })?;
        let heap_addr = self
            .indexes
            .iter()
            .find(|i| i.type_flags & bit != 0)
            .and_then(|i| i.heap)
            .ok_or_else(|| {
                Error::invalid(
                    WHAT,
                    self.address,
                    format!("no index with a heap for message type {kind:#06x}"),
                )
            })?;
        if let Some(h) = lock(&self.heaps).get(&heap_addr) {
            return Ok(h.clone());
        }
        let h = Arc::new(FractalHeap::open(file, heap_addr)?);
        lock(&self.heaps).insert(heap_addr, h.clone());
        Ok(h)
    }

    /// The stored body of a shared message of type `kind` with heap id `id`.
    pub(crate) fn read_message(&self, file: &File, kind: u16, id: &[u8; 8]) -> Result<Bytes> {
        self.heap_for(file, kind)?.read_object(file, id)
    }
}
