//! Object headers, version 1 and version 2, with their continuation blocks (HDF5 File Format
//! Specification 3.0, section IV.A.1 "Object Header Prefix": IV.A.1.a "Version 1 Data Object
//! Header Prefix", IV.A.1.b "Version 2 Data Object Header Prefix"; section IV.A.2.q "Object
//! Header Continuation Message"; the `OCHK` continuation block).
//!
//! An object header is decoded into its list of raw messages, in the order the library
//! iterates them (chunk 0 first, then each continuation block in the order it was found).
//! The message bodies are decoded on demand by [`crate::messages`].

use std::collections::HashSet;
use std::ops::Range;

use bytes::Bytes;

use crate::decode::Cursor;
use crate::error::{Error, Result};
use crate::file::{File, expect_signature};
use crate::messages::msg;

/// Most continuation blocks one object header may have.
const MAX_CHUNKS: usize = 1 << 16;
/// Bytes read first at an object header, hoping it holds the whole first chunk.
pub(crate) const FIRST_READ: u64 = 512;

/// Access, modification, change and birth times of an object (seconds since the epoch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectTimes {
    /// Last access.
    pub access: u32,
    /// Last modification of the data.
    pub modification: u32,
    /// Last change of the metadata.
    pub change: u32,
    /// Creation.
    pub birth: u32,
}

/// One message of an object header, undecoded.
#[derive(Clone, Debug)]
pub struct Message {
    /// Message type (0x0001 dataspace, 0x0003 datatype, ...).
    pub kind: u16,
    /// Message flags (bit 1: shared, bit 7: fail if unknown, ...).
    pub flags: u8,
    /// Creation order of the message, when the header tracks it.
    pub creation_order: Option<u16>,
    /// Absolute file offset of the message body.
    pub address: u64,
    /// The message body.
    pub data: Bytes,
}

impl Message {
    /// Whether the body is a reference to a shared message stored elsewhere.
    pub fn is_shared(&self) -> bool {
        self.flags & 0x02 != 0
    }
}

/// A decoded object header.
#[derive(Clone, Debug)]
pub struct ObjectHeader {
    /// Absolute file offset of the header.
    pub address: u64,
    /// Header version (1 or 2).
    pub version: u8,
    /// Version 2 header flags (0 for version 1).
    pub flags: u8,
    /// Object reference count (version 1 headers).
    pub reference_count: Option<u32>,
    /// Times stored in a version 2 header.
    pub times: Option<ObjectTimes>,
    /// Maximum compact / minimum dense attribute counts stored in a version 2 header.
    pub attribute_phase_change: Option<(u16, u16)>,
    /// The messages, in iteration order.
    pub messages: Vec<Message>,
}

impl ObjectHeader {
    /// Whether attribute creation order is tracked (version 2 header flag bit 2).
    pub fn tracks_attribute_creation_order(&self) -> bool {
        self.version > 1 && self.flags & 0x04 != 0
    }

    /// The first message of type `kind`.
    pub fn find(&self, kind: u16) -> Option<&Message> {
        self.messages.iter().find(|m| m.kind == kind)
    }

    /// Every message of type `kind`, in order.
    pub fn find_all(&self, kind: u16) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(move |m| m.kind == kind)
    }

    /// Whether there is a message of type `kind`.
    pub fn has(&self, kind: u16) -> bool {
        self.find(kind).is_some()
    }
}

const WHAT: &str = "object header";
const WHAT_CONT: &str = "object header continuation block";

/// Reads the object header at absolute offset `addr`.
pub(crate) fn read(file: &File, addr: u64) -> Result<ObjectHeader> {
    read_with(file, addr, false)
}

/// [`read`], or with `available` the header without the continuation blocks that cannot be
/// read (see [`File::object_header_available`]).
pub(crate) fn read_with(file: &File, addr: u64, available: bool) -> Result<ObjectHeader> {
    read_inner(file, addr, available).map_err(|e| match e {
        // Errors that already name this header need no extra layer.
        e @ (Error::Signature { .. }
        | Error::Checksum { .. }
        | Error::OutOfBounds { .. }
        | Error::Version { .. })
            if error_address(&e) == Some(addr) =>
        {
            e
        }
        e => e.context(WHAT, addr),
    })
}

fn error_address(e: &Error) -> Option<u64> {
    match e {
        Error::Signature { address, .. }
        | Error::Checksum { address, .. }
        | Error::OutOfBounds { address, .. }
        | Error::Version { address, .. } => Some(*address),
        _ => None,
    }
}

fn read_inner(file: &File, addr: u64, available: bool) -> Result<ObjectHeader> {
    let first = file.read_upto(WHAT, addr, FIRST_READ)?;
    let sizes = file.sizes();
    let mut oh = ObjectHeader {
        address: addr,
        version: 0,
        flags: 0,
        reference_count: None,
        times: None,
        attribute_phase_change: None,
        messages: Vec::new(),
    };
    // Prefix: where chunk 0's messages are, and how long chunk 0 is in all.
    let (chunk0, msgs): (Bytes, Range<usize>) = if first.starts_with(b"OHDR") {
        let mut c = Cursor::new(&first, WHAT, addr, sizes);
        c.skip(4)?;
        c.version(2)?;
        let flags = c.u8()?;
        oh.version = 2;
        oh.flags = flags;
        if flags & 0xc0 != 0 {
            return Err(c.invalid(format!("unknown header flags {flags:#04x}")));
        }
        if flags & 0x20 != 0 {
            oh.times = Some(ObjectTimes {
                access: c.u32()?,
                modification: c.u32()?,
                change: c.u32()?,
                birth: c.u32()?,
            });
        }
        if flags & 0x10 != 0 {
            oh.attribute_phase_change = Some((c.u16()?, c.u16()?));
        }
        let size0 = c.uint(1 << (flags & 0x03))?;
        let start = c.pos();
        let total = (start as u64)
            .checked_add(size0)
            .and_then(|n| n.checked_add(4))
            .ok_or_else(|| c.invalid("chunk 0 size overflows"))?;
        let image = if total <= first.len() as u64 {
            first.slice(..total as usize)
        } else {
            file.read(WHAT, addr, total)?
        };
        file.verify_trailing(WHAT, addr, &image)?;
        let end = image.len() - 4;
        (image, start..end)
    } else {
        let mut c = Cursor::new(&first, WHAT, addr, sizes);
        let version = c.u8()?;
        if version != 1 {
            if version == 0 || version > 2 {
                expect_signature(WHAT, addr, &first, "OHDR")?;
            }
            return Err(Error::Version {
                structure: WHAT,
                address: addr,
                version,
            });
        }
        c.skip(1)?;
        let _nmesgs = c.u16()?;
        oh.version = 1;
        oh.reference_count = Some(c.u32()?);
        let size0 = u64::from(c.u32()?);
        // The prefix is padded to 16 bytes.
        let total = 16 + size0;
        let image = if total <= first.len() as u64 {
            first.slice(..total as usize)
        } else {
            file.read(WHAT, addr, total)?
        };
        (image, 16..total as usize)
    };

    let mut seen: HashSet<u64> = HashSet::new();
    seen.insert(addr);
    let mut pending: Vec<(u64, u64)> = Vec::new();
    parse_messages(&mut oh, &chunk0, msgs, addr, sizes, &mut pending)?;
    // Continuation blocks, in the order found (a queue, as the library reads them).
    let mut next = 0;
    while next < pending.len() {
        if pending.len() > MAX_CHUNKS {
            return Err(Error::limit(
                WHAT,
                addr,
                format!("more than {MAX_CHUNKS} continuation blocks"),
            ));
        }
        if next == 0 || pending.len() - next > 1 {
            let ranges: Vec<Range<u64>> = pending[next..]
                .iter()
                .map(|&(a, l)| a..a.saturating_add(l))
                .collect();
            file.prefetch(&ranges);
        }
        let (caddr, clen) = pending[next];
        next += 1;
        if !seen.insert(caddr) {
            return Err(Error::Cycle {
                structure: WHAT_CONT,
                address: caddr,
                from: addr,
            });
        }
        let block = match file.read(WHAT_CONT, caddr, clen) {
            Ok(b) => b,
            Err(_) if available => continue,
            Err(e) => return Err(e),
        };
        let range = if oh.version == 1 {
            0..block.len()
        } else {
            expect_signature(WHAT_CONT, caddr, &block, "OCHK")?;
            file.verify_trailing(WHAT_CONT, caddr, &block)?;
            4..block.len() - 4
        };
        parse_messages(&mut oh, &block, range, caddr, sizes, &mut pending)
            .map_err(|e| e.context(WHAT_CONT, caddr))?;
    }
    Ok(oh)
}

/// Decodes the messages in `image[range]` (a chunk starting at absolute offset `chunk_addr`),
/// queueing continuation blocks.
fn parse_messages(
    oh: &mut ObjectHeader,
    image: &Bytes,
    range: Range<usize>,
    chunk_addr: u64,
    sizes: crate::decode::Sizes,
    pending: &mut Vec<(u64, u64)>,
) -> Result<()> {
    let region = image
        .get(range.clone())
        .ok_or_else(|| Error::invalid(WHAT, chunk_addr, "message region outside the chunk"))?;
    let region_addr = chunk_addr.saturating_add(range.start as u64);
    let mut c = Cursor::new(region, WHAT, region_addr, sizes);
    let v1 = oh.version == 1;
    let tracked = !v1 && oh.flags & 0x04 != 0;
    let header_len = if v1 {
        8
    } else if tracked {
        6
    } else {
        4
    };
    while c.remaining() >= header_len {
        let kind = if v1 { c.u16()? } else { u16::from(c.u8()?) };
        let size = usize::from(c.u16()?);
        let flags = c.u8()?;
        let creation_order = if v1 {
            c.skip(3)?;
            None
        } else if tracked {
            Some(c.u16()?)
        } else {
            None
        };
        if v1 && size % 8 != 0 {
            return Err(c.invalid(format!("message of {size} bytes is not 8-byte aligned")));
        }
        if flags & 0x02 != 0 && flags & 0x04 != 0 {
            return Err(c.invalid("message flagged both shared and not shareable"));
        }
        let start = range.start + c.pos();
        let address = chunk_addr.saturating_add(start as u64);
        c.skip(size)?;
        let data = image.slice(start..start + size);
        match kind {
            msg::CONTINUATION => {
                let mut mc = Cursor::new(&data, "continuation message", address, sizes);
                let target = mc
                    .addr()?
                    .ok_or_else(|| mc.invalid("undefined continuation block address"))?;
                let len = mc.length()?;
                let min = if v1 { 1 } else { 8 };
                if len < min {
                    return Err(mc.invalid(format!("continuation block of {len} bytes")));
                }
                pending.push((target, len));
            }
            k if k > msg::LAST_KNOWN && flags & 0x80 != 0 => {
                return Err(Error::unsupported(
                    "object header message",
                    address,
                    format!("unknown message type {k:#06x} flagged \"fail if unknown\""),
                ));
            }
            _ => {}
        }
        oh.messages.push(Message {
            kind,
            flags,
            creation_order,
            address,
            data,
        });
    }
    Ok(())
}
