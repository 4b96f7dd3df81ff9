//! Appending to an existing output: its recorded sources plus the new ones are planned again
//! (the old ones' scans come from the scan cache when given), which gives the same output as
//! a full rebuild.

use std::path::Path;

use serde::Deserialize;
use vzarr_core::Provenance;
use vzarr_plan::Concat;
use vzarr_scan::inputs::SourceRef;

use crate::BuildError;

/// The part of a reference file an append reads: vzarr's provenance block.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    vzarr: Option<Provenance>,
}

/// The sources and provenance of the reference file `output`, parsed as `head` (its JSON).
fn recorded(
    output: &str,
    head: Result<Head, serde_json::Error>,
) -> Result<(Vec<SourceRef>, Provenance), BuildError> {
    let append_error = |reason: String| BuildError::Append {
        output: output.to_string(),
        reason,
    };
    let head = head.map_err(|e| append_error(format!("not a vzarr reference file: {e}")))?;
    let prov = head.vzarr.ok_or_else(|| {
        append_error("has no vzarr provenance block; rebuild it instead of appending".into())
    })?;
    Ok((sources_of(&prov)?, prov))
}

/// The sources of an existing output, in its concatenation order, and how it was combined.
pub fn recorded_sources(output: &Path) -> Result<(Vec<SourceRef>, Provenance), BuildError> {
    let file = std::fs::File::open(output).map_err(|e| BuildError::io(output, e))?;
    recorded(
        &output.display().to_string(),
        serde_json::from_reader(std::io::BufReader::new(file)),
    )
}

/// Most bytes of a reference file on object storage read to append to it.
pub const MAX_REMOTE_REFERENCES_BYTES: u64 = 4 << 30;

/// [`recorded_sources`] of a reference file on object storage (read whole, at most
/// [`MAX_REMOTE_REFERENCES_BYTES`]).
pub fn recorded_sources_at(
    output: &vzarr_source::Location,
) -> Result<(Vec<SourceRef>, Provenance), BuildError> {
    let url = output.url();
    let src = vzarr_source::open_source(&url).map_err(BuildError::Output)?;
    if src.size() > MAX_REMOTE_REFERENCES_BYTES {
        return Err(BuildError::Append {
            output: url,
            reason: format!(
                "{} bytes, more than the {MAX_REMOTE_REFERENCES_BYTES} read to append to it",
                src.size()
            ),
        });
    }
    let bytes = src.read(0..src.size()).map_err(BuildError::Output)?;
    recorded(&url, serde_json::from_slice(&bytes))
}

/// The sources a provenance records, in concatenation order.
fn sources_of(prov: &Provenance) -> Result<Vec<SourceRef>, BuildError> {
    let urls: Vec<&str> = match &prov.concat {
        Some(c) => c.pieces.iter().map(|p| p.url.as_str()).collect(),
        None => prov.sources.iter().map(|s| s.url.as_str()).collect(),
    };
    Ok(urls
        .into_iter()
        .map(SourceRef::parse)
        .collect::<Result<_, _>>()?)
}

/// The sources and the combination of an append to `output`: its recorded sources followed
/// by those of `inputs` that are new, concatenated along the dimension it was built with
/// (`concat`, if given, must be that one).
pub fn plan_append(
    output: &Path,
    inputs: Vec<SourceRef>,
    concat: Option<&Concat>,
) -> Result<(Vec<SourceRef>, Option<Concat>), BuildError> {
    let (_, prov) = recorded_sources(output)?;
    plan_append_recorded(&output.display().to_string(), &prov, inputs, concat)
}

/// [`plan_append`] for an output stored elsewhere (an Icechunk repository), given the
/// provenance it records; `output` names it in errors.
pub fn plan_append_recorded(
    output: &str,
    prov: &Provenance,
    inputs: Vec<SourceRef>,
    concat: Option<&Concat>,
) -> Result<(Vec<SourceRef>, Option<Concat>), BuildError> {
    let append_error = |reason: String| BuildError::Append {
        output: output.to_string(),
        reason,
    };
    let old = sources_of(prov)?;
    let mut concat = concat.cloned();
    if let Some(c) = &prov.concat {
        if c.new_dim {
            return Err(append_error(
                "appending to a stack along a new dimension is not supported; rebuild it".into(),
            ));
        }
        match &concat {
            Some(Concat::Existing(d)) if *d != c.dim => {
                return Err(append_error(format!(
                    "it was concatenated along {:?}, not {d:?}",
                    c.dim
                )));
            }
            Some(Concat::Existing(_)) => {}
            Some(_) => {
                return Err(append_error(format!(
                    "it was concatenated along {:?}, not stacked",
                    c.dim
                )));
            }
            None => concat = Some(Concat::Existing(c.dim.clone())),
        }
    }
    let new: Vec<SourceRef> = inputs.into_iter().filter(|s| !old.contains(s)).collect();
    if new.is_empty() {
        return Err(append_error(
            "nothing to append: every input is already in it".into(),
        ));
    }
    Ok((old.into_iter().chain(new).collect(), concat))
}
