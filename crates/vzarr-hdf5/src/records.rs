//! Compounds with variable-length string members (h5py's
//! `[("id", "i4"), ("name", h5py.string_dtype())]`): their string members are global heap ids,
//! not text, so such a dataset cannot be referenced in place. As VirtualiZarr 2.8's HDF5
//! parser reads them, the values are read at scan time and stored inline as a Zarr `struct`
//! in which each string member is a `fixed_length_utf32` field (numpy `U<n>`) as wide as its
//! longest value (at least 1 code point), every other member a field of its own type in
//! little-endian order; zarr-python reads them as the numpy structured array h5py gives, the
//! strings as `str`.
//!
//! - The chunk grid is the dataset's, each chunk cut to the array's length where it is
//!   longer (one chunk for contiguous and compact datasets); stored chunks are decoded
//!   through the dataset's filters first, their bytes `bytes`-encoded alone (no further
//!   codec); chunks never written stay missing and read as the fill value: the dataset's fill
//!   value read as its elements are (its strings from the heap), else zeros and empty strings.
//! - Strings are read as the HDF5 library hands them out (up to the first NUL, a NULL string
//!   empty); text that is not UTF-8 leaves the dataset out.
//! - Bounded by [`crate::ScanOptions::max_string_bytes`]: the text and fixed members read
//!   (and each stored chunk's elements) count against it as they are read, and the inline
//!   chunks at their fixed width must fit it too; a dataset past it is left out with the size
//!   and the limit.
//! - Object reference members (when the scan reads references) are read the same way, each
//!   element the path of its target (`references`), the member a `fixed_length_utf32` field.
//! - Left out, with the reason: a member that is a variable-length sequence, of an array data
//!   type, a region reference, or of a type no struct field maps to (opaque, ...).

use vzarr_core::{ChunkGrid, ChunkManifest, Codec, DataType, Endian, FillValue, StructField};
use vzarr_hdf5_format::{CompoundMember, Dataset, Datatype, FillStatus, Layout, Sizes};
use vzarr_hdf5_format::{ReferenceKind, TypeClass, VlenKind};
use vzarr_hdf5_map::refusal;

use crate::Hdf5Error;
use crate::ctx::{Ctx, ObjectNames};
use crate::layout::Chunks;
use crate::references::RefPaths;
use crate::strings::{Budget, Refusal, each_raw_chunk, text_of, too_many};
use crate::types::element_type;

/// How the values of fixed members are held while read: per element, their bytes.
const HELD: &str = "read into fixed-length struct fields";

/// A member of a compound with variable-length string members, in offset order.
#[derive(Clone, Debug)]
pub(crate) enum Member {
    /// A member of a fixed size, as a struct field maps it.
    Fixed {
        name: String,
        offset: usize,
        data_type: DataType,
        endian: Endian,
    },
    /// A variable-length string (a global heap id of `size` bytes), or an object reference of
    /// `size` bytes read as its target's path (`references`).
    Text {
        name: String,
        offset: usize,
        size: usize,
        reference: Option<ReferenceKind>,
    },
}

fn is_text(m: &CompoundMember) -> bool {
    matches!(
        m.datatype.class,
        TypeClass::VariableLength {
            kind: VlenKind::String { .. },
            ..
        }
    )
}

fn reference_kind(m: &CompoundMember) -> Option<ReferenceKind> {
    match m.datatype.class {
        TypeClass::Reference { kind } => Some(kind),
        _ => None,
    }
}

/// Whether a member of `members` holds object references.
pub(crate) fn has_references(members: &[Member]) -> bool {
    members.iter().any(|m| {
        matches!(
            m,
            Member::Text {
                reference: Some(_),
                ..
            }
        )
    })
}

/// The names of the members of `members` that hold object references, in member order.
pub(crate) fn reference_names(members: &[Member]) -> Vec<String> {
    members
        .iter()
        .filter_map(|m| match m {
            Member::Text {
                name,
                reference: Some(_),
                ..
            } => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// The members of `t` in offset order when it is a compound with at least one
/// variable-length string member or (with `references`) object reference member: `Some(Ok)`
/// when every other member maps to a struct field, `Some(Err(reason))` when one does not;
/// `None` for any other type. `sizes`: the file's.
pub(crate) fn members(
    t: &Datatype,
    sizes: Sizes,
    references: bool,
) -> Option<Result<Vec<Member>, String>> {
    let TypeClass::Compound { members } = &t.class else {
        return None;
    };
    if !members
        .iter()
        .any(|m| is_text(m) || reference_kind(m).is_some())
    {
        return None;
    }
    let why = |reason: String| {
        format!("unsupported data type (compound type with variable-length strings): {reason}")
    };
    for m in members {
        let Some(kind) = reference_kind(m) else {
            continue;
        };
        let refused = match crate::references::unspellable(kind) {
            Some(why) => why,
            None if !references => refusal::OBJECT_REFERENCES_NOT_READ.to_string(),
            None => continue,
        };
        return Some(Err(format!(
            "compound type whose member {:?} holds {refused}",
            m.name
        )));
    }
    let mut sorted: Vec<&CompoundMember> = members.iter().collect();
    sorted.sort_by_key(|m| m.offset);
    let mut out = Vec::with_capacity(sorted.len());
    for m in sorted {
        let (name, offset) = (m.name.clone(), m.offset as usize);
        let reference = reference_kind(m);
        let size = if is_text(m) || reference.is_some() {
            let size = m.datatype.storage_size(sizes) as usize;
            out.push(Member::Text {
                name,
                offset,
                size,
                reference,
            });
            size
        } else {
            let kind = match &m.datatype.class {
                TypeClass::VariableLength { .. } => Some("a variable-length sequence"),
                TypeClass::Array { .. } => Some("of an array data type"),
                _ => None,
            };
            if let Some(kind) = kind {
                return Some(Err(why(format!("member {:?} is {kind}", m.name))));
            }
            let mapped = match element_type(&m.datatype) {
                Ok(mapped) => mapped,
                Err(e) => return Some(Err(why(format!("member {:?}: {e}", m.name)))),
            };
            let size = mapped.data_type.size();
            out.push(Member::Fixed {
                name,
                offset,
                data_type: mapped.data_type,
                endian: mapped.endian,
            });
            size
        };
        if offset.saturating_add(size) > t.size as usize {
            return Some(Err(why(format!(
                "member {:?} at byte {offset} of {size} bytes ends past the compound's {} bytes",
                m.name, t.size
            ))));
        }
    }
    Some(Ok(out))
}

/// Elements read: their fixed members' bytes (little-endian, in member order) and their
/// strings (in member order), element after element.
#[derive(Default)]
struct Values {
    fixed: Vec<u8>,
    texts: Vec<String>,
}

/// Reads elements of a compound with string members.
struct Reader<'a, 'c> {
    ctx: &'a Ctx<'c>,
    path: &'a str,
    members: &'a [Member],
    /// The paths of reference members' targets, relative to the dataset.
    paths: Option<RefPaths<'a>>,
    /// Longest string of each text member so far, in code points.
    widths: Vec<usize>,
}

impl Reader<'_, '_> {
    fn structure_error(&self, source: vzarr_hdf5_format::Error) -> Hdf5Error {
        Hdf5Error::Structure {
            url: self.ctx.url.clone(),
            object: self.path.to_string(),
            what: "variable-length string",
            source: Box::new(source),
        }
    }

    /// Appends the element `e` (its stored bytes) to `out`, counting what it holds.
    fn element(
        &mut self,
        e: &[u8],
        out: &mut Values,
        budget: &mut Budget,
        at: impl Fn() -> String,
    ) -> Result<Result<(), Refusal>, Hdf5Error> {
        let file = self.ctx.file;
        let mut k = 0;
        for m in self.members {
            match m {
                Member::Fixed {
                    offset,
                    data_type,
                    endian,
                    ..
                } => {
                    let n = data_type.size();
                    if let Err(r) = budget.add(n as u64) {
                        return Ok(Err(r));
                    }
                    let start = out.fixed.len();
                    out.fixed.extend_from_slice(&e[*offset..*offset + n]);
                    if *endian == Endian::Big {
                        data_type.swap_element(&mut out.fixed[start..]);
                    }
                }
                Member::Text {
                    offset,
                    size,
                    name,
                    reference: Some(kind),
                } => {
                    let id = &e[*offset..*offset + *size];
                    let Some(paths) = self.paths.as_mut() else {
                        return Ok(Err(refusal::OBJECT_REFERENCES_NOT_READ.into()));
                    };
                    let (ctx, path) = (self.ctx, self.path);
                    let text = match paths.path(file, *kind, id).map_err(|source| {
                        Hdf5Error::Structure {
                            url: ctx.url.clone(),
                            object: path.to_string(),
                            what: "object reference",
                            source: Box::new(source),
                        }
                    })? {
                        Ok(t) => t,
                        Err(r) => return Ok(Err(format!("member {name:?}: {r}"))),
                    };
                    if let Err(r) = budget.add((text.len() as u64).saturating_add(24)) {
                        return Ok(Err(r));
                    }
                    self.widths[k] = self.widths[k].max(text.chars().count());
                    out.texts.push(text);
                    k += 1;
                }
                Member::Text {
                    offset,
                    size,
                    name,
                    reference: None,
                } => {
                    let id = &e[*offset..*offset + *size];
                    let v = file.decode_vlen(id).map_err(|e| self.structure_error(e))?;
                    // Counted as stored (and a String's own bytes) before it is read.
                    if let Err(r) = budget.add(u64::from(v.length).saturating_add(24)) {
                        return Ok(Err(r));
                    }
                    let bytes = file.read_vlen(id, 1).map_err(|e| self.structure_error(e))?;
                    let what = || format!("{} of member {name:?}", at());
                    let text = match text_of(&bytes, what) {
                        Ok(t) => t,
                        Err(r) => return Ok(Err(r)),
                    };
                    self.widths[k] = self.widths[k].max(text.chars().count());
                    out.texts.push(text);
                    k += 1;
                }
            }
        }
        Ok(Ok(()))
    }
}

/// The positions of a chunk of `shape` elements (C order) with the leading corner `valid`
/// inside the array: for each, its C-order position in a chunk of `nominal` elements, or
/// `None` outside the array.
fn positions(shape: &[u64], valid: &[u64], nominal: &[u64]) -> Vec<Option<usize>> {
    let n: u64 = shape.iter().product();
    let mut out = Vec::with_capacity(n as usize);
    let mut idx = vec![0u64; shape.len()];
    for _ in 0..n {
        let inside = idx.iter().zip(valid).all(|(i, v)| i < v);
        out.push(
            inside.then(|| idx.iter().zip(nominal).fold(0u64, |a, (&i, &d)| a * d + i) as usize),
        );
        for k in (0..idx.len()).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// One stored chunk read: its index and its elements (`None`: outside the array).
struct ReadChunk {
    index: Vec<u64>,
    elements: Vec<Option<usize>>,
    values: Values,
}

/// What a compound dataset with string members becomes: its `struct` data type, its fill
/// value and its inline chunks (see the module documentation); `Ok(Err(reason))` when it is
/// left out. `codecs`: its filters, on the stored elements.
pub(crate) fn record_chunks(
    ctx: &Ctx,
    ds: &Dataset,
    shape: &[u64],
    codecs: &[Codec],
    members: &[Member],
    names: Option<&ObjectNames>,
    path: &str,
) -> Result<Result<(DataType, FillValue, Chunks), Refusal>, Hdf5Error> {
    let limit = ctx.opts.max_string_bytes;
    let es = ds.element_size(ctx.file) as usize;
    let end = members
        .iter()
        .map(|m| match m {
            Member::Fixed {
                offset, data_type, ..
            } => offset + data_type.size(),
            Member::Text { offset, size, .. } => offset + size,
        })
        .max()
        .unwrap_or(0);
    if end > es {
        return Err(ctx.object_error(
            path,
            format!("compound members end at byte {end} of {es}-byte elements"),
        ));
    }
    let model = |e: vzarr_core::CoreError| ctx.object_error(path, e.to_string());
    let whole: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
    let chunked = matches!(ds.layout.layout, Layout::Chunked(_));
    let stored_chunk = match &ds.layout.layout {
        Layout::Chunked(ch) => ch.chunk_dims.clone(),
        _ => whole.clone(),
    };
    if stored_chunk.len() != shape.len() || stored_chunk.contains(&0) {
        return Err(ctx.object_error(path, "chunk shape unreadable"));
    }
    // Each chunk's elements as stored, bounded before any is read.
    let per_chunk = stored_chunk
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .filter(|&n| n.saturating_mul(es as u64) <= limit);
    if per_chunk.is_none() {
        return Ok(Err(too_many(
            format!("chunks of {stored_chunk:?} elements of {es} bytes"),
            limit,
        )));
    }
    let raw_grid = ChunkGrid::regular(shape, &stored_chunk).map_err(model)?;
    // Inline chunks can be cut: a chunk longer than the array is as long as the array.
    let out_chunk: Vec<u64> = stored_chunk
        .iter()
        .zip(&whole)
        .map(|(&c, &s)| c.min(s))
        .collect();
    let grid = ChunkGrid::regular(shape, &out_chunk).map_err(model)?;
    let mut budget = Budget::new(limit, HELD);
    let mut reader = Reader {
        ctx,
        path,
        members,
        paths: names.map(|n| RefPaths::new(n, path)),
        widths: vec![
            0;
            members
                .iter()
                .filter(|m| matches!(m, Member::Text { .. }))
                .count()
        ],
    };
    let mut read: Vec<ReadChunk> = Vec::new();
    let done = each_raw_chunk(
        ctx,
        ds,
        &raw_grid,
        codecs,
        es,
        path,
        0,
        &mut budget,
        |index, raw, budget| {
            let (nominal, valid) = if chunked {
                (raw_grid.chunk_shape(index), grid.chunk_valid_shape(index))
            } else {
                (shape.to_vec(), shape.to_vec())
            };
            let elements = positions(&grid.chunk_shape(index), &valid, &nominal);
            let mut values = Values::default();
            for &p in elements.iter().flatten() {
                let Some(e) = raw.get(p * es..(p + 1) * es) else {
                    return Err(ctx.object_error(path, "chunk shorter than its elements"));
                };
                let at = || format!("in chunk {index:?} at element {p}");
                if let Err(r) = reader.element(e, &mut values, budget, at)? {
                    return Ok(Err(r));
                }
            }
            read.push(ReadChunk {
                index: index.to_vec(),
                elements,
                values,
            });
            Ok(Ok(()))
        },
    )?;
    if let Err(r) = done {
        return Ok(Err(r));
    }
    // The fill value: the dataset's, read as an element is, else zeros and empty strings.
    let mut fill = Values::default();
    match ds.fill_value.value.as_deref() {
        Some(v) if ds.fill_value.status == FillStatus::UserDefined && v.len() == es => {
            let at = || "of the fill value".to_string();
            if let Err(r) = reader.element(v, &mut fill, &mut budget, at)? {
                return Ok(Err(r));
            }
        }
        _ => {
            for m in members {
                match m {
                    Member::Fixed { data_type, .. } => {
                        fill.fixed.extend(std::iter::repeat_n(0, data_type.size()));
                    }
                    Member::Text { .. } => fill.texts.push(String::new()),
                }
            }
        }
    }
    let widths: Vec<usize> = reader.widths.iter().map(|&w| w.max(1)).collect();
    let fields: Vec<StructField> = {
        let mut k = 0;
        members
            .iter()
            .map(|m| match m {
                Member::Fixed {
                    name, data_type, ..
                } => StructField {
                    name: name.clone(),
                    data_type: data_type.clone(),
                },
                Member::Text { name, .. } => {
                    k += 1;
                    StructField {
                        name: name.clone(),
                        data_type: DataType::FixedUtf32(widths[k - 1]),
                    }
                }
            })
            .collect()
    };
    let dt = DataType::Struct(fields.into());
    // What the inline chunks take at these widths, bounded before they are made.
    let packed = dt.size() as u64;
    let out_elements: u64 = read.iter().map(|c| c.elements.len() as u64).sum();
    let total = out_elements.saturating_mul(packed);
    if total > limit {
        return Ok(Err(format!(
            "compound with variable-length strings: {total} bytes as fixed-length struct \
             fields exceed the limit of {limit} bytes for one array (--max-string-bytes): \
             left out"
        )));
    }
    let fixed_len: usize = members
        .iter()
        .map(|m| match m {
            Member::Fixed { data_type, .. } => data_type.size(),
            Member::Text { .. } => 0,
        })
        .sum();
    let texts = widths.len();
    let pack = |values: &Values, k: usize, out: &mut Vec<u8>| {
        let mut fixed = &values.fixed[k * fixed_len..(k + 1) * fixed_len];
        let mut t = 0;
        for m in members {
            match m {
                Member::Fixed { data_type, .. } => {
                    let (now, rest) = fixed.split_at(data_type.size());
                    out.extend_from_slice(now);
                    fixed = rest;
                }
                Member::Text { .. } => {
                    let text = &values.texts[k * texts + t];
                    // Every string fits its member's width, the longest of them.
                    out.extend(vzarr_core::utf32_bytes(text, widths[t]).unwrap_or_default());
                    t += 1;
                }
            }
        }
    };
    let mut fill_bytes = Vec::with_capacity(packed as usize);
    pack(&fill, 0, &mut fill_bytes);
    let fill_value = FillValue::from_le_bytes(dt.clone(), &fill_bytes).map_err(model)?;
    let n = usize::try_from(grid.n_chunks().map_err(model)?)
        .map_err(|_| ctx.object_error(path, "too many chunks"))?;
    let mut manifest = ChunkManifest::new_missing(n);
    for c in read {
        let mut bytes = Vec::with_capacity(c.elements.len() * packed as usize);
        let mut k = 0;
        for p in &c.elements {
            match p {
                Some(_) => {
                    pack(&c.values, k, &mut bytes);
                    k += 1;
                }
                None => bytes.extend_from_slice(&fill_bytes),
            }
        }
        let lin = grid
            .linear_index(&c.index)
            .ok_or_else(|| ctx.object_error(path, "chunk index outside the grid"))?;
        manifest.set_inline(lin as usize, bytes).map_err(model)?;
    }
    Ok(Ok((dt, fill_value, Chunks { grid, manifest })))
}

#[cfg(test)]
mod tests {
    use super::positions;

    #[test]
    fn positions_of_a_cut_chunk_in_the_stored_one() {
        // A 2 x 3 chunk cut from a stored 4 x 3, valid 2 x 2: rows of the stored chunk.
        assert_eq!(
            positions(&[2, 3], &[2, 2], &[4, 3]),
            vec![Some(0), Some(1), None, Some(3), Some(4), None]
        );
        // 0-d: one element.
        assert_eq!(positions(&[], &[], &[]), vec![Some(0)]);
    }
}
