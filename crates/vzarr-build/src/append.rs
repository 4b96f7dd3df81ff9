//! Appending to an existing output: what it records (its provenance, read from the start of
//! a reference file or from a repository's tip commit), and the sources of an append. Where
//! an append cannot be planned at the output's tail (`tail`), its recorded sources plus the
//! new ones are planned again (the old ones' scans from the scan cache when given), which
//! gives the same output as a full rebuild.

use std::path::Path;

use vzarr_core::Provenance;
use vzarr_plan::Concat;
use vzarr_scan::inputs::SourceRef;

use crate::{BuildError, BuildOptions};

/// The provenance block of the reference file read from `reader` (named `output` in
/// errors), with the sources it records. The JSON is read only as far as the block: vzarr
/// writes it before the references, so a file of many gigabytes costs its first kilobytes.
fn recorded(
    output: &str,
    reader: impl std::io::Read,
) -> Result<(Vec<SourceRef>, Provenance), BuildError> {
    let append_error = |reason: String| BuildError::Append {
        output: output.to_string(),
        reason,
    };
    let mut found = None;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let parsed = serde::Deserializer::deserialize_map(&mut de, ProvenanceOnly(&mut found));
    let prov = match (found, parsed) {
        // Found: whatever the parser says of the rest, which was not read.
        (Some(p), _) => p,
        (None, Err(e)) if e.is_io() => return Err(append_error(format!("cannot be read: {e}"))),
        (None, Err(e)) => return Err(append_error(format!("not a vzarr reference file: {e}"))),
        (None, Ok(())) => {
            return Err(append_error(
                "has no vzarr provenance block; rebuild it instead of appending".into(),
            ));
        }
    };
    Ok((sources_of(&prov)?, prov))
}

/// Visits a reference file's top-level object up to its `vzarr` member, which it puts in
/// the slot, and stops there (the deserializer then reports the rest unread, an error the
/// caller ignores once the slot is filled); members before it are skipped unparsed.
struct ProvenanceOnly<'a>(&'a mut Option<Provenance>);

impl<'de> serde::de::Visitor<'de> for ProvenanceOnly<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "vzarr" {
                *self.0 = Some(map.next_value()?);
                return Ok(());
            }
            map.next_value::<serde::de::IgnoredAny>()?;
        }
        Ok(())
    }
}

/// The sources of an existing output, in its concatenation order, and how it was combined.
pub fn recorded_sources(output: &Path) -> Result<(Vec<SourceRef>, Provenance), BuildError> {
    let file = std::fs::File::open(output).map_err(|e| BuildError::io(output, e))?;
    recorded(&output.display().to_string(), std::io::BufReader::new(file))
}

/// [`recorded_sources`] of a reference file on object storage (read from its start only as
/// far as the provenance block).
pub fn recorded_sources_at(
    output: &vzarr_source::Location,
) -> Result<(Vec<SourceRef>, Provenance), BuildError> {
    let url = output.url();
    let src = vzarr_source::open_source(&url).map_err(BuildError::Output)?;
    recorded(&url, vzarr_source::SourceReader::new(src))
}

/// How many sources a provenance records.
pub(crate) fn recorded_count(prov: &Provenance) -> usize {
    match &prov.concat {
        Some(c) => c.pieces.len(),
        None => prov.sources.len(),
    }
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

/// The sources of an append to the output named `output` (an Icechunk repository or a
/// reference file), given the provenance it records: its recorded sources followed by those
/// of `inputs` that are new. `opts` gets how the output was combined: the dimension it was
/// concatenated along and the variable that ordered its files (when given, each must be that
/// one), and the small-chunk policy it was built with (unless `opts` has one).
pub fn plan_append_recorded(
    output: &str,
    prov: &Provenance,
    inputs: Vec<SourceRef>,
    opts: &mut BuildOptions,
) -> Result<Vec<SourceRef>, BuildError> {
    let append_error = |reason: String| BuildError::Append {
        output: output.to_string(),
        reason,
    };
    let old = sources_of(prov)?;
    if let Some(c) = &prov.concat {
        if c.new_dim {
            return Err(append_error(
                "appending to a stack along a new dimension is not supported; rebuild it".into(),
            ));
        }
        match &opts.concat {
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
            None => opts.concat = Some(Concat::Existing(c.dim.clone())),
        }
        match (&c.order_by, &opts.order_by) {
            (recorded, Some(given)) if recorded.as_ref() != Some(given) => {
                let was = match recorded {
                    Some(v) => format!("variable {v:?}"),
                    None => format!("its coordinate {:?}", c.dim),
                };
                return Err(append_error(format!(
                    "its files were ordered by {was}, not by {given:?}"
                )));
            }
            _ => opts.order_by.clone_from(&c.order_by),
        }
    }
    // Small chunks as the output was built, unless the append says otherwise.
    if opts.small_chunks.is_none() {
        opts.small_chunks = prov.small_chunks;
    }
    let new: Vec<SourceRef> = inputs.into_iter().filter(|s| !old.contains(s)).collect();
    if new.is_empty() {
        return Err(append_error(
            "nothing to append: every input is already in it".into(),
        ));
    }
    Ok(old.into_iter().chain(new).collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn provenance_json() -> String {
        r#"{"sources":[{"url":"s3://b/a.nc","size":10},{"url":"s3://b/b.nc","size":20}],"allowed_prefixes":["s3://b/"]}"#.into()
    }

    fn err(r: Result<(Vec<SourceRef>, Provenance), BuildError>) -> String {
        r.err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn the_provenance_block_is_read_and_nothing_after_it() {
        // What follows the block is not even JSON: it is not read.
        let text = format!(
            r#"{{"version":1,"vzarr":{},"refs":{{"zarr.json": not json at all"#,
            provenance_json()
        );
        let (sources, prov) = recorded("refs.json", text.as_bytes()).unwrap();
        assert_eq!(sources.len(), 2);
        assert_eq!(prov.sources[1].url, "s3://b/b.nc");
        // A block after the references is found too.
        let text = format!(r#"{{"refs":{{"a":[1,2]}},"vzarr":{}}}"#, provenance_json());
        assert_eq!(recorded("refs.json", text.as_bytes()).unwrap().0.len(), 2);
    }

    #[test]
    fn other_files_are_refused_by_name() {
        let e = err(recorded("x.json", &b"[1, 2]"[..]));
        assert!(
            e.contains("x.json") && e.contains("not a vzarr reference file"),
            "{e}"
        );
        let e = err(recorded("x.json", &b"{\"version\":1,\"refs\":{}}"[..]));
        assert!(
            e.contains("x.json") && e.contains("no vzarr provenance block"),
            "{e}"
        );
        let e = err(recorded(
            "x.json",
            &b"{\"version\":1,\"vzarr\":{\"sources\":7}}"[..],
        ));
        assert!(e.contains("not a vzarr reference file"), "{e}");
    }

    #[test]
    fn a_large_remote_file_costs_one_read() {
        let mut text = format!(r#"{{"version":1,"vzarr":{},"refs":{{"#, provenance_json());
        while text.len() < 20 << 20 {
            text.push_str(r#""v/0.0":["s3://b/a.nc",123456,7890],"#);
        }
        text.push_str(r#""v/zarr.json":"{}"}}"#);
        let mem = Arc::new(vzarr_source::MemSource::new(
            "s3://b/refs.json",
            text.into_bytes(),
        ));
        let (sources, _) = recorded(
            "s3://b/refs.json",
            vzarr_source::SourceReader::new(mem.clone()),
        )
        .unwrap();
        assert_eq!(sources.len(), 2);
        assert_eq!(mem.reads(), 1);
    }
}
