//! [`SourceReader`]: a source read from its start as a [`std::io::Read`], for parsers that
//! may stop long before the end (e.g. at the provenance block at the start of a reference
//! file of many gigabytes).

use std::io;
use std::sync::Arc;

use bytes::{Buf, Bytes};

use crate::ByteSource;

/// Bytes of the first read.
const FIRST_READ: u64 = 64 << 10;

/// Bytes of one read at most (each read is twice the one before, up to this).
const MAX_READ: u64 = 8 << 20;

/// Reads a source from its start in ranged reads of 64 KiB, then twice as many each time up
/// to 8 MiB: a parser that stops early costs one or two requests, one that reads to the end
/// holds at most 8 MiB of it at a time.
pub struct SourceReader {
    src: Arc<dyn ByteSource>,
    /// Offset of the next read.
    pos: u64,
    /// Bytes read and not yet consumed.
    buf: Bytes,
    next_len: u64,
}

impl SourceReader {
    /// A reader at the start of `src`.
    pub fn new(src: Arc<dyn ByteSource>) -> Self {
        SourceReader {
            src,
            pos: 0,
            buf: Bytes::new(),
            next_len: FIRST_READ,
        }
    }
}

impl io::Read for SourceReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.buf.is_empty() {
            let size = self.src.size();
            if self.pos >= size || out.is_empty() {
                return Ok(0);
            }
            let len = self.next_len.min(size - self.pos);
            self.buf = self
                .src
                .read(self.pos..self.pos + len)
                .map_err(io::Error::other)?;
            if self.buf.is_empty() {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
            }
            self.pos += self.buf.len() as u64;
            self.next_len = (self.next_len * 2).min(MAX_READ);
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf.advance(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::MemSource;

    #[test]
    fn reads_the_whole_source_in_growing_reads() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let mem = Arc::new(MemSource::new("mem://x", data.clone()));
        let mut r = SourceReader::new(mem.clone());
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        assert_eq!(got, data);
        // 64 KiB, 128, 256, 512 and the last 48,576 bytes.
        assert_eq!(mem.reads(), 5);
    }

    #[test]
    fn a_parser_that_stops_early_reads_only_the_start() {
        let data = vec![7u8; 10 << 20];
        let mem = Arc::new(MemSource::new("mem://x", data));
        let mut r = SourceReader::new(mem.clone());
        let mut first = [0u8; 1000];
        r.read_exact(&mut first).unwrap();
        assert_eq!(mem.reads(), 1);
    }
}
