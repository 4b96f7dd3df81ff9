//! The cursor over a NetCDF3 header's bytes: fetches more from the source as needed (at least
//! doubling what was read, up to [`MAX_HEADER_BYTES`]) and reads the grammar's items: counts
//! and offsets of the file's version, names, list headers, attribute lists and variable
//! entries, each checked against the rest of the file (netcdf-c
//! `docs/file_format_specifications.md`).

use vzarr_source::ByteSource;

use super::{
    AttrValue, Attribute, MAX_HEADER_BYTES, MAX_VAR_DIMS, NC_ATTRIBUTE, NcType, RawVar, prealloc,
};
use crate::Nc3Error;

/// A cursor over the header bytes that fetches more from the source as needed.
pub(super) struct Reader<'a> {
    pub(super) src: &'a dyn ByteSource,
    pub(super) size: u64,
    pub(super) buf: Vec<u8>,
    pub(super) pos: usize,
    pub(super) reads: u32,
    pub(super) bytes_read: u64,
    pub(super) version: u8,
}

impl Reader<'_> {
    fn url(&self) -> String {
        self.src.url().to_string()
    }

    pub(super) fn offset(&self) -> u64 {
        self.pos as u64
    }

    fn remaining(&self) -> u64 {
        self.size.saturating_sub(self.offset())
    }

    /// Bytes of a count (`NON_NEG`): 8 in CDF-5, else 4.
    pub(super) fn count_size(&self) -> u64 {
        if self.version == 5 { 8 } else { 4 }
    }

    /// Reads from the source until the buffer holds the first `end` bytes of the file.
    pub(super) fn fill_to(&mut self, end: u64) -> Result<(), Nc3Error> {
        let have = self.buf.len() as u64;
        if end <= have {
            return Ok(());
        }
        let bytes = self.src.read(have..end)?;
        self.reads = self.reads.saturating_add(1);
        self.bytes_read = self.bytes_read.saturating_add(bytes.len() as u64);
        self.buf.extend_from_slice(&bytes);
        Ok(())
    }

    /// Makes sure `n` bytes from the cursor are in the buffer, reading more (at least doubling
    /// what was read) if not.
    fn ensure(&mut self, n: u64, what: &str) -> Result<(), Nc3Error> {
        let offset = self.offset();
        let end = offset.checked_add(n);
        let truncated = || Nc3Error::TruncatedHeader {
            url: self.url(),
            what: what.to_string(),
            offset,
            need: n,
            size: self.size,
        };
        let Some(end) = end else {
            return Err(truncated());
        };
        if end <= self.buf.len() as u64 {
            return Ok(());
        }
        if end > self.size {
            return Err(truncated());
        }
        if end > MAX_HEADER_BYTES {
            return Err(Nc3Error::HeaderTooLarge {
                url: self.url(),
                what: what.to_string(),
                offset,
                limit: MAX_HEADER_BYTES,
            });
        }
        let doubled = (self.buf.len() as u64).saturating_mul(2);
        let target = end.max(doubled.min(self.size).min(MAX_HEADER_BYTES));
        self.fill_to(target)
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&[u8], Nc3Error> {
        self.ensure(n, what)?;
        let start = self.pos;
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| start.checked_add(n))
            .filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(Nc3Error::TruncatedHeader {
                url: self.url(),
                what: what.to_string(),
                offset: self.offset(),
                need: n,
                size: self.size,
            });
        };
        self.pos = end;
        Ok(self.buf.get(start..end).unwrap_or_default())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Nc3Error> {
        let b = self.take(N as u64, what)?;
        let mut a = [0u8; N];
        for (d, s) in a.iter_mut().zip(b) {
            *d = *s;
        }
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32, Nc3Error> {
        self.array::<4>(what).map(u32::from_be_bytes)
    }

    fn u64(&mut self, what: &str) -> Result<u64, Nc3Error> {
        self.array::<8>(what).map(u64::from_be_bytes)
    }

    /// A `NON_NEG` count or length: 64-bit in CDF-5, else 32-bit.
    pub(super) fn count(&mut self, what: &str) -> Result<u64, Nc3Error> {
        if self.version == 5 {
            self.u64(what)
        } else {
            self.u32(what).map(u64::from)
        }
    }

    /// An `OFFSET`: 32-bit in CDF-1, 64-bit in CDF-2 and CDF-5.
    fn offset_field(&mut self, what: &str) -> Result<u64, Nc3Error> {
        if self.version == 1 {
            self.u32(what).map(u64::from)
        } else {
            self.u64(what)
        }
    }

    /// Errors unless `need` bytes (implied by `count`, read at `at`) fit in the rest of the file.
    fn check_fits(&self, count: u64, need: u64, what: &str, at: u64) -> Result<(), Nc3Error> {
        let remaining = self.remaining();
        if need > remaining {
            return Err(Nc3Error::AbsurdCount {
                url: self.url(),
                what: what.to_string(),
                count,
                offset: at,
                need,
                remaining,
            });
        }
        Ok(())
    }

    /// A list header (`ABSENT` or tag + count); returns the count, checked against the file.
    pub(super) fn list(&mut self, tag: u32, what: &str, min_item: u64) -> Result<u64, Nc3Error> {
        let tag_off = self.offset();
        let found = self.u32(&format!("tag of the {what}"))?;
        let count_off = self.offset();
        let n = self.count(&format!("length of the {what}"))?;
        if n == 0 {
            // ABSENT; netcdf-c accepts any tag with a zero count.
            return Ok(0);
        }
        if found != tag {
            return Err(Nc3Error::BadTag {
                url: self.url(),
                what: what.to_string(),
                tag: found,
                expected: tag,
                offset: tag_off,
            });
        }
        let need = n.saturating_mul(min_item);
        self.check_fits(n, need, &format!("length of the {what}"), count_off)?;
        Ok(n)
    }

    /// A name: count, bytes, padding to 4; must be UTF-8.
    pub(super) fn name(&mut self, what: &str) -> Result<String, Nc3Error> {
        let at = self.offset();
        let n = self.count(what)?;
        let padded = n.checked_next_multiple_of(4).unwrap_or(u64::MAX);
        self.check_fits(n, padded, what, at)?;
        let raw = self.take(padded, what)?;
        let text = raw
            .get(..usize::try_from(n).unwrap_or(usize::MAX))
            .unwrap_or(raw);
        match std::str::from_utf8(text) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => Err(Nc3Error::BadName {
                url: self.url(),
                what: what.to_string(),
                offset: at,
                reason: format!("not UTF-8 ({e})"),
            }),
        }
    }

    fn nc_type(&mut self, what: &str) -> Result<NcType, Nc3Error> {
        let code = self.u32(&format!("type of {what}"))?;
        NcType::from_code(code, self.version).ok_or_else(|| Nc3Error::UnknownType {
            url: self.url(),
            what: what.to_string(),
            code,
            version: self.version,
            hint: if (7..=11).contains(&code) {
                " (types 7-11 need CDF-5)".into()
            } else {
                String::new()
            },
        })
    }

    pub(super) fn att_list(&mut self, owner: &str) -> Result<Vec<Attribute>, Nc3Error> {
        let min_attr = self.count_size() * 2 + 4;
        let n = self.list(
            NC_ATTRIBUTE,
            &format!("attribute list of {owner}"),
            min_attr,
        )?;
        let mut out = Vec::with_capacity(prealloc(n));
        for i in 0..n {
            let name = self.name(&format!("name of attribute {i} of {owner}"))?;
            let what = format!("attribute '{name}' of {owner}");
            let t = self.nc_type(&what)?;
            let at = self.offset();
            let count = self.count(&format!("length of {what}"))?;
            let bytes = count.saturating_mul(t.size());
            let padded = bytes.checked_next_multiple_of(4).unwrap_or(u64::MAX);
            self.check_fits(count, padded, &format!("length of {what}"), at)?;
            let raw = self.take(padded, &format!("values of {what}"))?;
            let raw = raw
                .get(..usize::try_from(bytes).unwrap_or(usize::MAX))
                .unwrap_or(raw);
            out.push(Attribute {
                name,
                value: AttrValue::decode(t, raw),
            });
        }
        Ok(out)
    }

    pub(super) fn var(&mut self, i: u64, ndims: usize) -> Result<RawVar, Nc3Error> {
        let name = self.name(&format!("name of variable {i}"))?;
        let what = format!("variable '{name}'");
        let at = self.offset();
        let rank = self.count(&format!("number of dimensions of {what}"))?;
        if rank > MAX_VAR_DIMS {
            return Err(Nc3Error::TooManyDims {
                url: self.url(),
                var: name,
                rank,
                max: MAX_VAR_DIMS,
            });
        }
        let idsize = self.count_size();
        let need = rank.saturating_mul(idsize);
        self.check_fits(rank, need, &format!("number of dimensions of {what}"), at)?;
        let mut dimids = Vec::with_capacity(prealloc(rank));
        for axis in 0..rank {
            let id = self.count(&format!("dimension id {axis} of {what}"))?;
            let idx = usize::try_from(id)
                .ok()
                .filter(|&d| d < ndims)
                .ok_or_else(|| Nc3Error::BadDimId {
                    url: self.url(),
                    var: name.clone(),
                    dimid: id,
                    ndims,
                })?;
            dimids.push(idx);
        }
        let attributes = self.att_list(&what)?;
        let nc_type = self.nc_type(&what)?;
        let vsize = self.count(&format!("vsize of {what}"))?;
        let begin = self.offset_field(&format!("begin of {what}"))?;
        Ok(RawVar {
            name,
            dimids,
            attributes,
            nc_type,
            vsize,
            begin,
        })
    }
}
