//! Global heap collections (`GCOL`): variable-length data and region references (HDF5 File
//! Format Specification 3.0, section III.E "Disk Format: Level 1E - Global Heap"), and the
//! global heap id stored in raw data (address of a collection and an object index).

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use crate::decode::Cursor;
use crate::error::{Error, Result};
use crate::file::{File, lock};

const WHAT: &str = "global heap collection";
/// Collections kept decoded (most variable-length values of a file share a few).
const CACHE: usize = 16;
/// Bytes read first at a collection (its usual minimum size).
const FIRST_READ: u64 = 4096;

/// A decoded collection: its bytes and where each object is.
#[derive(Debug)]
pub(crate) struct Collection {
    data: Bytes,
    objects: HashMap<u16, Range<usize>>,
}

/// The most recently used collections.
#[derive(Debug, Default)]
pub(crate) struct GlobalHeapCache {
    entries: VecDeque<(u64, Arc<Collection>)>,
}

/// A reference to an object in a global heap collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalHeapId {
    /// Absolute file offset of the collection; `None` when undefined (an empty value).
    pub collection: Option<u64>,
    /// Index of the object in the collection.
    pub index: u32,
}

/// A variable-length element as stored in raw data: its length (elements of a sequence, or
/// bytes of a string) and where its data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlenElement {
    /// Number of base-type elements (bytes for strings).
    pub length: u32,
    /// Where the data is.
    pub id: GlobalHeapId,
}

/// Decodes a global heap id (address + 4-byte index) from `c`.
pub(crate) fn decode_id(c: &mut Cursor) -> Result<GlobalHeapId> {
    let collection = c.addr()?;
    let index = c.u32()?;
    Ok(GlobalHeapId { collection, index })
}

fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

fn parse(addr: u64, data: Bytes, file: &File) -> Result<Collection> {
    let sl = usize::from(file.sizes().length);
    // The collection header and each object header are padded to 8 bytes.
    let hdr = align8(8 + sl);
    let objhdr = align8(8 + sl);
    let mut c = Cursor::new(&data, WHAT, addr, file.sizes());
    c.skip(hdr)?;
    let mut objects = HashMap::new();
    while c.remaining() >= objhdr {
        let begin = c.pos();
        let index = c.u16()?;
        let _refcount = c.u16()?;
        c.skip(4)?;
        let size = c.length()?;
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if index == 0 {
            // Free space; its size counts its own header.
            if size < objhdr || size > data.len() - begin {
                break;
            }
            c = Cursor::new(&data, WHAT, addr, file.sizes());
            c.skip(begin + size)?;
            continue;
        }
        let need = size
            .checked_add(7)
            .map(|n| objhdr + n / 8 * 8)
            .filter(|&n| n <= data.len() - begin)
            .ok_or_else(|| {
                c.invalid(format!(
                    "object {index} of {size} bytes extends past the collection"
                ))
            })?;
        let start = begin + objhdr;
        objects.entry(index).or_insert(start..start + size);
        c = Cursor::new(&data, WHAT, addr, file.sizes());
        c.skip(begin + need)?;
    }
    Ok(Collection { data, objects })
}

fn load(file: &File, addr: u64) -> Result<Arc<Collection>> {
    if let Some((_, col)) = lock(&file.global_heap)
        .entries
        .iter()
        .find(|(a, _)| *a == addr)
    {
        return Ok(col.clone());
    }
    let first = file.read_upto(WHAT, addr, FIRST_READ)?;
    let mut c = Cursor::new(&first, WHAT, addr, file.sizes());
    c.prefix("GCOL", 1)?;
    c.skip(3)?;
    let size = c.length()?;
    if size < c.pos() as u64 {
        return Err(c.invalid(format!("collection size {size} smaller than its header")));
    }
    let data = if size <= first.len() as u64 {
        first.slice(..size as usize)
    } else {
        file.read(WHAT, addr, size)?
    };
    let col = Arc::new(parse(addr, data, file)?);
    let mut cache = lock(&file.global_heap);
    if cache.entries.len() >= CACHE {
        cache.entries.pop_front();
    }
    cache.entries.push_back((addr, col.clone()));
    Ok(col)
}

impl File {
    /// The bytes of object `index` of the global heap collection at absolute offset
    /// `collection`.
    pub fn global_heap_object(&self, collection: u64, index: u32) -> Result<Bytes> {
        let col = load(self, collection)?;
        let r = u16::try_from(index)
            .ok()
            .and_then(|i| col.objects.get(&i))
            .ok_or_else(|| {
                Error::invalid(WHAT, collection, format!("no object with index {index}"))
            })?;
        Ok(col.data.slice(r.clone()))
    }

    /// Decodes a variable-length element (`4 + size of offsets + 4` bytes of raw data).
    pub fn decode_vlen(&self, element: &[u8]) -> Result<VlenElement> {
        let mut c = Cursor::new(element, "variable-length element", 0, self.sizes());
        let length = c.u32()?;
        let id = decode_id(&mut c)?;
        Ok(VlenElement { length, id })
    }

    /// The data of every variable-length element of a raw value (`element_size` bytes each),
    /// as [`File::read_vlen`] gives them; the collections they live in are prefetched
    /// together first.
    pub fn read_vlens(
        &self,
        value: &[u8],
        element_size: usize,
        base_size: u64,
    ) -> Result<Vec<Bytes>> {
        if element_size == 0 {
            return Ok(Vec::new());
        }
        let mut cols: Vec<u64> = value
            .chunks_exact(element_size)
            .filter_map(|e| self.decode_vlen(e).ok()?.id.collection)
            .collect();
        cols.sort_unstable();
        cols.dedup();
        let ranges: Vec<Range<u64>> = cols
            .iter()
            .map(|&a| a..a.saturating_add(FIRST_READ))
            .collect();
        self.prefetch(&ranges);
        value
            .chunks_exact(element_size)
            .map(|e| self.read_vlen(e, base_size))
            .collect()
    }

    /// The data of a variable-length element: `length * base_size` bytes from the global heap
    /// (empty when the length is 0 or the collection address is undefined).
    pub fn read_vlen(&self, element: &[u8], base_size: u64) -> Result<Bytes> {
        let v = self.decode_vlen(element)?;
        let Some(col) = v.id.collection else {
            return Ok(Bytes::new());
        };
        if v.length == 0 {
            return Ok(Bytes::new());
        }
        let obj = self.global_heap_object(col, v.id.index)?;
        let want = u64::from(v.length)
            .checked_mul(base_size)
            .filter(|&n| n <= obj.len() as u64)
            .ok_or_else(|| {
                Error::invalid(
                    WHAT,
                    col,
                    format!(
                        "object {} has {} bytes, fewer than {} elements of {base_size} bytes",
                        v.id.index,
                        obj.len(),
                        v.length
                    ),
                )
            })?;
        Ok(obj.slice(..want as usize))
    }
}
