//! Which file the others are checked against: chosen by agreement, not by position.
//!
//! Files are grouped by what must agree between them (the same variables, and for each its
//! data type, byte order, fill value, codecs up to compression level, dimensions, chunking
//! off the combined axis and decoding attributes; the whole metadata of a variable kept
//! once). The reference is the first file, by URL, of the largest group (ties: the group
//! whose first URL sorts first), so a file that disagrees with the others is the one an
//! error names, never one of the majority, whatever the input order. Every other file is
//! then checked against the reference, in URL order: the first that disagrees is named as
//! the odd file of the error ([`PlanError::file`]).
//!
//! Variables kept once must also hold the same values in every file; those are compared
//! later ([`crate::compat::check_identical`]), by agreement too ([`largest_group`]).

use std::collections::{BTreeSet, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};

use vzarr_core::{Codec, VirtualArray};

use crate::Concat;
use crate::compat::{DECODING_ATTRS, check_compatible};
use crate::error::PlanError;
use crate::input::{Input, Version, attr_str, axis_of, join, leaf, parent};
use crate::time::is_cf_time_units;

/// How the files are combined, as far as agreement is concerned.
pub(crate) enum Axis<'a> {
    /// Along the existing dimension `dim`, ordered by the variable at path `by`.
    Existing {
        /// The dimension.
        dim: &'a str,
        /// The ordering variable (the dimension's coordinate unless one was given).
        by: &'a str,
    },
    /// Stacked along a new dimension: every variable is stacked but dimension coordinates
    /// (and their bounds), kept once.
    New,
}

impl<'a> Axis<'a> {
    /// The axis of `concat` with the ordering variable `order_by`.
    pub(crate) fn of(concat: &'a Concat, order_by: Option<&'a str>) -> Self {
        match concat {
            Concat::Existing(dim) => Axis::Existing {
                dim,
                by: order_by.unwrap_or(dim),
            },
            Concat::New { .. } => Axis::New,
        }
    }
}

/// What one variable of a file must agree on.
enum Rule {
    /// Kept once: the whole metadata must be the same (values are compared later).
    Identical,
    /// Combined along axis `skip` (none when stacked): [`check_compatible`], with the
    /// attributes `ignore` allowed to differ.
    Compatible {
        skip: Option<usize>,
        ignore: &'static [&'static str],
    },
}

/// The time attributes the planner re-encodes, allowed to differ between files.
const RETIMED: &[&str] = &["units", "_FillValue"];

/// What variable `path` (`a` in `input`) must agree on.
fn rule(axis: &Axis<'_>, path: &str, a: &VirtualArray, input: &Input) -> Rule {
    match axis {
        Axis::Existing { dim, by } => {
            let Some(k) = axis_of(a, dim) else {
                return Rule::Identical;
            };
            // A CF time variable along the dimension may differ in units and fill attribute
            // (the ordering coordinate and its bounds are re-encoded; whether the others can
            // be combined is the planner's later check, after the files are ordered).
            let cf = |v: &VirtualArray| attr_str(v, "units").is_some_and(is_cf_time_units);
            let bounds = input
                .ds
                .arrays
                .get(*by)
                .filter(|c| cf(c))
                .and_then(|c| attr_str(c, "bounds"))
                .map(|b| join(parent(by), b));
            let retimed = cf(a) || Some(path) == bounds.as_deref();
            Rule::Compatible {
                skip: Some(k),
                ignore: if retimed { RETIMED } else { &[] },
            }
        }
        Axis::New => {
            let coordinate = |p: &str, v: &VirtualArray| {
                v.dimension_names.len() == 1 && v.dimension_names[0] == leaf(p)
            };
            let once = coordinate(path, a)
                || input.ds.arrays.iter().any(|(p, v)| {
                    coordinate(p, v)
                        && attr_str(v, "bounds").is_some_and(|b| join(parent(p), b) == path)
                });
            if once {
                Rule::Identical
            } else {
                Rule::Compatible {
                    skip: None,
                    ignore: &[],
                }
            }
        }
    }
}

/// A codec as far as decoding goes: levels of the compressors that ignore them left out, as
/// [`Codec::decodes_like`] does.
fn hash_codec(c: &Codec, h: &mut DefaultHasher) {
    std::mem::discriminant(c).hash(h);
    match c {
        Codec::Zlib { .. } | Codec::Zstd { .. } | Codec::Bz2 { .. } | Codec::Blosc { .. } => {}
        Codec::Bitshuffle {
            element_size,
            block_size,
            compression,
            ..
        } => (element_size, block_size, format!("{compression:?}")).hash(h),
        other => other.hash(h),
    }
}

/// A digest of what `input` must agree on with the others: files with different digests
/// disagree (two with the same digest almost surely agree; the check against the reference
/// decides).
fn digest(input: &Input, axis: &Axis<'_>) -> u64 {
    let mut h = DefaultHasher::new();
    let paths: BTreeSet<&String> = input.ds.arrays.keys().collect();
    let skipped: BTreeSet<&String> = input.ds.skipped.iter().map(|s| &s.path).collect();
    (&paths, &skipped).hash(&mut h);
    for path in paths {
        let a = &input.ds.arrays[path];
        match rule(axis, path, a, input) {
            Rule::Identical => a.zarr_metadata().to_string().hash(&mut h),
            Rule::Compatible { skip, ignore } => {
                a.data_type.name().hash(&mut h);
                if a.data_type.has_endianness() {
                    format!("{:?}", a.endian).hash(&mut h);
                }
                a.fill_value.hash(&mut h);
                a.codecs.len().hash(&mut h);
                for c in &a.codecs {
                    hash_codec(c, &mut h);
                }
                a.dimension_names.hash(&mut h);
                for (k, d) in a.grid.dims().iter().enumerate() {
                    if Some(k) != skip {
                        d.hash(&mut h);
                    }
                }
                for key in DECODING_ATTRS.iter().filter(|k| !ignore.contains(k)) {
                    a.attributes.get(*key).map(ToString::to_string).hash(&mut h);
                }
            }
        }
    }
    h.finish()
}

/// The groups of `0..n` that agree, each in URL order, in the order of their first URL:
/// `same(i, j)` says whether members `i` and `j` agree, `urls` orders them.
fn groups(urls: &[&str], mut same: impl FnMut(usize, usize) -> bool) -> Vec<Vec<usize>> {
    let mut by_url: Vec<usize> = (0..urls.len()).collect();
    by_url.sort_by(|&a, &b| urls[a].cmp(urls[b]).then(a.cmp(&b)));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in by_url {
        match groups.iter_mut().find(|g| same(g[0], i)) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// The largest group of `0..urls.len()` whose members agree (`same`), ties going to the group
/// whose first URL sorts first; its members in URL order. Agreement must be an equivalence.
pub(crate) fn largest_group(urls: &[&str], same: impl FnMut(usize, usize) -> bool) -> Vec<usize> {
    let mut best: Vec<usize> = Vec::new();
    // Groups come in the order of their first URL: a later one wins only when larger.
    for g in groups(urls, same) {
        if g.len() > best.len() {
            best = g;
        }
    }
    best
}

/// The position of the input the others are checked against: the first, by URL, of the
/// largest group of inputs that agree (see the module documentation).
pub(crate) fn reference(inputs: &[Input], axis: &Axis<'_>) -> usize {
    let digests: Vec<u64> = inputs.iter().map(|i| digest(i, axis)).collect();
    let urls: Vec<&str> = inputs.iter().map(|i| i.url.as_str()).collect();
    // Inputs with equal digests in one group: counted with a map, not compared pairwise.
    let mut first_of: HashMap<u64, usize> = HashMap::new();
    let mut by_url: Vec<usize> = (0..inputs.len()).collect();
    by_url.sort_by(|&a, &b| urls[a].cmp(urls[b]).then(a.cmp(&b)));
    let mut count: Vec<usize> = vec![0; inputs.len()];
    for &i in &by_url {
        let first = *first_of.entry(digests[i]).or_insert(i);
        count[first] += 1;
    }
    // The first input by URL of the largest group (a strictly larger group wins).
    let mut best = by_url[0];
    for &i in &by_url {
        if count[i] > count[best] {
            best = i;
        }
    }
    best
}

/// Checks every input against the reference `r` (in URL order): the same variables, and each
/// variable what it must agree on; the error names the input that disagrees. What a variable
/// kept once holds (its metadata and values) is left to the planner's check of it.
pub(crate) fn check_against(inputs: &[Input], r: usize, axis: &Axis<'_>) -> Result<(), PlanError> {
    let reference = &inputs[r];
    let mut others: Vec<&Input> = inputs
        .iter()
        .enumerate()
        .filter(|&(k, _)| k != r)
        .map(|(_, i)| i)
        .collect();
    others.sort_by(|a, b| a.url.cmp(&b.url).then(a.pos.cmp(&b.pos)));
    for other in others {
        same_variables(reference, other)?;
        for (path, a) in &reference.ds.arrays {
            let Rule::Compatible { skip, ignore } = rule(axis, path, a, reference) else {
                continue;
            };
            let b = &other.ds.arrays[path];
            check_compatible(
                path,
                Version {
                    url: &reference.url,
                    array: a,
                },
                Version {
                    url: &other.url,
                    array: b,
                },
                skip,
                ignore,
            )?;
        }
    }
    Ok(())
}

/// Checks that `other` has the variables of `reference` (arrays, and variables the scanner
/// left out) and no others; the error names `other` as the odd file.
fn same_variables(reference: &Input, other: &Input) -> Result<(), PlanError> {
    let missing = |variable: &str, present: &Input, absent: String| PlanError::MissingVariable {
        variable: variable.into(),
        present: present.url.clone(),
        absent,
        odd: other.url.clone(),
    };
    let left_out = |input: &Input, path: &str| {
        input
            .ds
            .skipped
            .iter()
            .find(|s| s.path == path)
            .map(|s| s.reason.clone())
    };
    for path in reference.ds.arrays.keys() {
        if !other.ds.arrays.contains_key(path) {
            let absent = match left_out(other, path) {
                Some(why) => format!("{} (left out there: {why})", other.url),
                None => other.url.clone(),
            };
            return Err(missing(path, reference, absent));
        }
    }
    for path in other.ds.arrays.keys() {
        if !reference.ds.arrays.contains_key(path) {
            let absent = match left_out(reference, path) {
                Some(why) => format!("{} (left out there: {why})", reference.url),
                None => reference.url.clone(),
            };
            return Err(missing(path, other, absent));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_group_wins_ties_by_first_url() {
        let same = |v: &'static [u8]| move |i: usize, j: usize| v[i] == v[j];
        // The odd one first in input order and by URL: the others win.
        let urls = ["a", "b", "c", "d"];
        assert_eq!(largest_group(&urls, same(&[1, 0, 0, 0])), vec![1, 2, 3]);
        // Two groups of two: the one holding the first URL.
        let urls = ["d", "a", "c", "b"];
        assert_eq!(largest_group(&urls, same(&[0, 1, 0, 1])), vec![1, 3]);
        assert_eq!(largest_group(&urls, same(&[1, 0, 1, 0])), vec![1, 3]);
        // Alone, each is its own group: the first URL.
        assert_eq!(largest_group(&urls, same(&[0, 1, 2, 3])), vec![1]);
    }
}
