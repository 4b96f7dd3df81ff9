//! numpy-like selections: `VAR`, `VAR[0:3,10,:]`, `g/VAR[-1, ::2, ...]`.
//!
//! Per axis: `i` (a single index, the axis is dropped), `start:stop[:step]` with any part
//! left out, `:`, negative indices counted from the end, and one `...` standing for the axes
//! not listed. Slices are clamped to the axis like numpy's; a single index outside the axis
//! is an error. Steps must be positive.

use std::ops::Range;

use crate::ReadError;

/// One axis of a selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AxisSelection {
    /// A single index (the axis is dropped from the result).
    Index(i64),
    /// A slice.
    Slice {
        /// First index (default 0).
        start: Option<i64>,
        /// End index, exclusive (default the axis length).
        stop: Option<i64>,
        /// Step (default 1).
        step: Option<i64>,
    },
    /// `...`: as many full slices as needed.
    Ellipsis,
}

/// A parsed selection: the variable path and one entry per listed axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The selection as written.
    pub spec: String,
    /// Array path.
    pub var: String,
    /// Listed axes (fewer than the array's axes select the rest whole).
    pub axes: Vec<AxisSelection>,
}

/// A selection resolved against a shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedSelection {
    /// Bounding box to read, per axis.
    pub ranges: Vec<Range<u64>>,
    /// Step per axis (1 for a single index).
    pub steps: Vec<u64>,
    /// Whether each axis is kept in the result (false for a single index).
    pub keep: Vec<bool>,
}

impl ResolvedSelection {
    /// Number of selected elements along each axis.
    pub fn counts(&self) -> Vec<u64> {
        self.ranges
            .iter()
            .zip(&self.steps)
            .map(|(r, &s)| (r.end - r.start).div_ceil(s))
            .collect()
    }

    /// Shape of the result (single-index axes dropped).
    pub fn shape(&self) -> Vec<u64> {
        self.counts()
            .into_iter()
            .zip(&self.keep)
            .filter(|(_, k)| **k)
            .map(|(c, _)| c)
            .collect()
    }
}

fn parse_int(s: &str, spec: &str) -> Result<Option<i64>, ReadError> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    s.parse::<i64>()
        .map(Some)
        .map_err(|_| ReadError::Selection {
            spec: spec.to_string(),
            reason: format!("{s:?} is not an integer"),
        })
}

/// Parses `VAR` or `VAR[...]`.
pub fn parse_selection(spec: &str) -> Result<Selection, ReadError> {
    let bad = |reason: &str| ReadError::Selection {
        spec: spec.to_string(),
        reason: reason.to_string(),
    };
    let s = spec.trim();
    let (var, inner) = match s.find('[') {
        None => (s, None),
        Some(i) => {
            let rest = &s[i + 1..];
            let body = rest
                .strip_suffix(']')
                .ok_or_else(|| bad("missing closing `]`"))?;
            if body.contains('[') || body.contains(']') {
                return Err(bad("nested brackets"));
            }
            (&s[..i], Some(body))
        }
    };
    let var = var.trim().trim_start_matches('/');
    if var.is_empty() {
        return Err(bad("no variable name"));
    }
    let mut axes = Vec::new();
    if let Some(body) = inner
        && !body.trim().is_empty()
    {
        for item in body.split(',') {
            let item = item.trim();
            if item == "..." {
                if axes.contains(&AxisSelection::Ellipsis) {
                    return Err(bad("more than one `...`"));
                }
                axes.push(AxisSelection::Ellipsis);
                continue;
            }
            let parts: Vec<&str> = item.split(':').collect();
            match parts.len() {
                1 => {
                    let i = parse_int(parts[0], spec)?.ok_or_else(|| bad("empty index"))?;
                    axes.push(AxisSelection::Index(i));
                }
                2 | 3 => {
                    let step = if parts.len() == 3 {
                        parse_int(parts[2], spec)?
                    } else {
                        None
                    };
                    if step.is_some_and(|s| s <= 0) {
                        return Err(bad("steps must be positive"));
                    }
                    axes.push(AxisSelection::Slice {
                        start: parse_int(parts[0], spec)?,
                        stop: parse_int(parts[1], spec)?,
                        step,
                    });
                }
                _ => return Err(bad(&format!("{item:?} is not an index or a slice"))),
            }
        }
    }
    Ok(Selection {
        spec: spec.to_string(),
        var: var.to_string(),
        axes,
    })
}

impl Selection {
    /// Resolves the selection against an array shape.
    pub fn resolve(&self, shape: &[u64]) -> Result<ResolvedSelection, ReadError> {
        let bad = |reason: String| ReadError::Selection {
            spec: self.spec.clone(),
            reason,
        };
        let listed = self
            .axes
            .iter()
            .filter(|a| **a != AxisSelection::Ellipsis)
            .count();
        if listed > shape.len() {
            return Err(bad(format!(
                "{listed} indices for an array of {} dimensions",
                shape.len()
            )));
        }
        let mut expanded = Vec::with_capacity(shape.len());
        for a in &self.axes {
            if *a == AxisSelection::Ellipsis {
                for _ in 0..shape.len() - listed {
                    expanded.push(AxisSelection::Slice {
                        start: None,
                        stop: None,
                        step: None,
                    });
                }
            } else {
                expanded.push(a.clone());
            }
        }
        while expanded.len() < shape.len() {
            expanded.push(AxisSelection::Slice {
                start: None,
                stop: None,
                step: None,
            });
        }
        let mut out = ResolvedSelection {
            ranges: Vec::new(),
            steps: Vec::new(),
            keep: Vec::new(),
        };
        for (axis, (sel, &n)) in expanded.iter().zip(shape).enumerate() {
            let n_i = i128::from(n);
            match *sel {
                AxisSelection::Index(i) => {
                    let j = if i < 0 {
                        n_i + i128::from(i)
                    } else {
                        i128::from(i)
                    };
                    if j < 0 || j >= n_i {
                        return Err(bad(format!(
                            "index {i} is out of bounds for axis {axis} of length {n}"
                        )));
                    }
                    let j = j as u64;
                    out.ranges.push(j..j + 1);
                    out.steps.push(1);
                    out.keep.push(false);
                }
                AxisSelection::Slice { start, stop, step } => {
                    let clamp = |v: Option<i64>, default: i128| -> u64 {
                        let v = v.map_or(default, |v| {
                            if v < 0 {
                                n_i + i128::from(v)
                            } else {
                                i128::from(v)
                            }
                        });
                        v.clamp(0, n_i) as u64
                    };
                    let a = clamp(start, 0);
                    let b = clamp(stop, n_i).max(a);
                    out.ranges.push(a..b);
                    out.steps.push(step.unwrap_or(1) as u64);
                    out.keep.push(true);
                }
                AxisSelection::Ellipsis => unreachable!("expanded above"),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        let s = parse_selection("tas[0:3, 10, :]").unwrap();
        assert_eq!(s.var, "tas");
        assert_eq!(
            s.axes,
            vec![
                AxisSelection::Slice {
                    start: Some(0),
                    stop: Some(3),
                    step: None
                },
                AxisSelection::Index(10),
                AxisSelection::Slice {
                    start: None,
                    stop: None,
                    step: None
                },
            ]
        );
        assert_eq!(parse_selection("g/v").unwrap().axes, vec![]);
        assert_eq!(parse_selection("/g/v[]").unwrap().var, "g/v");
        for bad in [
            "v[1",
            "[1]",
            "v[a]",
            "v[1:2:0]",
            "v[1:2:3:4]",
            "v[...,...]",
            "v[,]",
        ] {
            assert!(parse_selection(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resolves_like_numpy() {
        let r = parse_selection("v[-3:, 2, ::2]")
            .unwrap()
            .resolve(&[10, 5, 7])
            .unwrap();
        assert_eq!(r.ranges, vec![7..10, 2..3, 0..7]);
        assert_eq!(r.counts(), vec![3, 1, 4]);
        assert_eq!(r.shape(), vec![3, 4]);
        let r = parse_selection("v[..., -1]")
            .unwrap()
            .resolve(&[4, 6])
            .unwrap();
        assert_eq!(r.ranges, vec![0..4, 5..6]);
        let r = parse_selection("v[5:2, 100:200]")
            .unwrap()
            .resolve(&[10, 50])
            .unwrap();
        assert_eq!(r.shape(), vec![0, 0]);
        let r = parse_selection("v[-100:3]")
            .unwrap()
            .resolve(&[10])
            .unwrap();
        assert_eq!(r.ranges, vec![0..3]);
        assert!(parse_selection("v[10]").unwrap().resolve(&[10]).is_err());
        assert!(parse_selection("v[-11]").unwrap().resolve(&[10]).is_err());
        assert!(parse_selection("v[1,2]").unwrap().resolve(&[10]).is_err());
        let r = parse_selection("v").unwrap().resolve(&[]).unwrap();
        assert!(r.ranges.is_empty());
    }
}
