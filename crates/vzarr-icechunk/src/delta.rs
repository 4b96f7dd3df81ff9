//! A commit's provenance as a change to its parent's: what an append adds (its sources, its
//! pieces along the concatenation dimension) rather than every source again.
//!
//! Icechunk 2.3 keeps the properties of every commit in its `repo` object, which every commit
//! rewrites: a provenance of every source in every commit made that object, and each append,
//! grow with the square of the appends (909 KB a commit at 3,285 daily files). An append's
//! commit records a [`Delta`] under [`DELTA_KEY`] instead; every [`FULL_EVERY`]-th commit of a
//! chain (and any build) records the whole provenance under [`crate::PROPERTY_KEY`]. Reading
//! walks the ancestry back to the last whole one and applies the changes forward.

use std::collections::BTreeMap;

use futures::StreamExt as _;
use icechunk::Repository;
use icechunk::format::snapshot::SnapshotInfo;
use icechunk::repository::VersionInfo;
use serde_json::Value;
use vzarr_core::{ConcatPiece, Provenance, SourceRecord};

use crate::{IcechunkError, PROPERTY_KEY};

/// The commit metadata key of a provenance recorded as a change to the parent commit's.
pub const DELTA_KEY: &str = "vzarr_delta";

/// A chain of changes is cut by a whole provenance every this many commits.
pub const FULL_EVERY: usize = 64;

/// The most commits read back to a whole provenance (a repository written by vzarr needs at
/// most [`FULL_EVERY`]).
const MAX_CHAIN: usize = 4096;

/// A provenance as a change to the parent commit's.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Delta {
    /// The parent commit (snapshot id).
    base: String,
    /// The provenance without its sources, pieces and per-piece units.
    rest: Provenance,
    /// Sources added or changed since the parent (by URL).
    sources: Vec<SourceRecord>,
    /// URLs of the parent's sources no longer recorded.
    removed: Vec<String>,
    /// How many of the parent's pieces (and per-piece units) come first.
    keep: usize,
    /// The pieces after those.
    pieces: Vec<ConcatPiece>,
    /// Per re-encoded time array, the units of the pieces after the kept ones.
    units: Vec<Vec<String>>,
    /// How many of the parent's recorded input locations come first (an append names its
    /// files there): `None` when `rest` holds them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    locations_keep: Option<usize>,
    /// The input locations after those.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    locations: Vec<String>,
}

/// `new` as a change to `parent` (the provenance of commit `base`), if it can be one (both
/// concatenations of the same arrays); checked by applying it.
pub(crate) fn delta(parent: &Provenance, base: &str, new: &Provenance) -> Option<Delta> {
    let (pc, nc) = (parent.concat.as_ref()?, new.concat.as_ref()?);
    if pc.retimed.len() != nc.retimed.len() {
        return None;
    }
    let keep = pc
        .pieces
        .iter()
        .zip(&nc.pieces)
        .take_while(|(a, b)| a == b)
        .count();
    if pc.retimed.iter().any(|r| r.source_units.len() < keep) {
        return None;
    }
    let old: BTreeMap<&str, &SourceRecord> =
        parent.sources.iter().map(|s| (s.url.as_str(), s)).collect();
    let now: BTreeMap<&str, &SourceRecord> =
        new.sources.iter().map(|s| (s.url.as_str(), s)).collect();
    let mut rest = new.clone();
    rest.sources.clear();
    // Input locations an append extends: the parent's, then the new ones.
    let (mut locations_keep, mut locations) = (None, Vec::new());
    if let (Some(pi), Some(ri)) = (&parent.inputs, &mut rest.inputs)
        && ri.locations.starts_with(&pi.locations)
    {
        locations_keep = Some(pi.locations.len());
        locations = ri.locations.split_off(pi.locations.len());
        ri.locations.clear();
    }
    if let Some(c) = &mut rest.concat {
        c.pieces.clear();
        for r in &mut c.retimed {
            r.source_units.clear();
        }
    }
    let d = Delta {
        base: base.to_string(),
        rest,
        sources: new
            .sources
            .iter()
            .filter(|s| old.get(s.url.as_str()) != Some(s))
            .cloned()
            .collect(),
        removed: parent
            .sources
            .iter()
            .filter(|s| !now.contains_key(s.url.as_str()))
            .map(|s| s.url.clone())
            .collect(),
        keep,
        pieces: nc.pieces.get(keep..)?.to_vec(),
        units: nc
            .retimed
            .iter()
            .map(|r| r.source_units.get(keep..).map(<[String]>::to_vec))
            .collect::<Option<_>>()?,
        locations_keep,
        locations,
    };
    (apply(parent, &d).as_ref() == Some(new)).then_some(d)
}

/// The provenance `d` describes, given its parent's.
pub(crate) fn apply(parent: &Provenance, d: &Delta) -> Option<Provenance> {
    let pc = parent.concat.as_ref()?;
    let mut out = d.rest.clone();
    let mut sources: BTreeMap<String, SourceRecord> = parent
        .sources
        .iter()
        .filter(|s| !d.removed.contains(&s.url))
        .map(|s| (s.url.clone(), s.clone()))
        .collect();
    for s in &d.sources {
        sources.insert(s.url.clone(), s.clone());
    }
    out.sources = sources.into_values().collect();
    if let Some(keep) = d.locations_keep {
        let kept = parent.inputs.as_ref()?.locations.get(..keep)?;
        let i = out.inputs.as_mut()?;
        i.locations = kept.to_vec();
        i.locations.extend(d.locations.iter().cloned());
    }
    let c = out.concat.as_mut()?;
    if c.retimed.len() != d.units.len() || pc.retimed.len() != d.units.len() {
        return None;
    }
    c.pieces = pc.pieces.get(..d.keep)?.to_vec();
    c.pieces.extend(d.pieces.iter().cloned());
    for ((r, p), u) in c.retimed.iter_mut().zip(&pc.retimed).zip(&d.units) {
        r.source_units = p.source_units.get(..d.keep)?.to_vec();
        r.source_units.extend(u.iter().cloned());
    }
    Some(out)
}

/// What a commit records of its provenance.
enum Recorded {
    Whole(Provenance),
    Change(Delta),
    Nothing,
}

fn recorded(info: &SnapshotInfo, at: &str) -> Result<Recorded, IcechunkError> {
    let parse = |v: &Value, what: &str| {
        IcechunkError::content(at, what, format!("not a vzarr provenance: {v:.80}"))
    };
    if let Some(v) = info.metadata.get(PROPERTY_KEY) {
        return serde_json::from_value(v.clone())
            .map(Recorded::Whole)
            .map_err(|_| parse(v, "the commit's vzarr metadata"));
    }
    if let Some(v) = info.metadata.get(DELTA_KEY) {
        return serde_json::from_value(v.clone())
            .map(Recorded::Change)
            .map_err(|_| parse(v, "the commit's vzarr_delta metadata"));
    }
    Ok(Recorded::Nothing)
}

/// The chain of recorded changes a commit's provenance ends ([`provenance_at`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Chain {
    /// How many commits record a change (0 for a whole provenance, or none).
    pub(crate) changes: usize,
    /// When the commit recording the whole provenance they apply to was written (`None`
    /// when no provenance is recorded).
    pub(crate) base_written: Option<chrono::DateTime<chrono::Utc>>,
}

/// The commit at `version` and the provenance it records (`None` when not written by vzarr),
/// with the chain of changes it ends.
pub(crate) async fn provenance_at(
    repo: &Repository,
    at: &str,
    version: &VersionInfo,
) -> Result<(Option<SnapshotInfo>, Option<Provenance>, Chain), IcechunkError> {
    let ancestry = repo
        .ancestry(version)
        .await
        .map_err(|e| IcechunkError::icechunk(at, "reading the history", e))?;
    let mut ancestry = std::pin::pin!(ancestry);
    let mut tip = None;
    let mut changes: Vec<Delta> = Vec::new();
    let broken = |why: String| IcechunkError::content(at, "the commits' vzarr metadata", why);
    while let Some(info) = ancestry.next().await {
        let info = info.map_err(|e| IcechunkError::icechunk(at, "reading the history", e))?;
        if let Some(d) = changes.last()
            && d.base != info.id.to_string()
        {
            return Err(broken(format!(
                "a change recorded against commit {} follows commit {}: the history was cut \
                 below it, as Icechunk's snapshot expiration does without vzarr's checkpoint \
                 first; the values still read, but the record of the sources is lost (rebuild \
                 the repository to append to it or sync it)",
                d.base, info.id
            )));
        }
        let rec = recorded(&info, at)?;
        let written = info.flushed_at;
        if tip.is_none() {
            tip = Some(info);
        }
        match rec {
            Recorded::Whole(mut p) => {
                let chain = Chain {
                    changes: changes.len(),
                    base_written: Some(written),
                };
                while let Some(d) = changes.pop() {
                    p = apply(&p, &d).ok_or_else(|| {
                        broken(format!("a change does not apply to commit {}", d.base))
                    })?;
                }
                return Ok((tip, Some(p), chain));
            }
            Recorded::Change(d) => {
                if changes.len() >= MAX_CHAIN {
                    return Err(broken(format!(
                        "more than {MAX_CHAIN} commits back to a whole provenance"
                    )));
                }
                changes.push(d);
            }
            Recorded::Nothing if changes.is_empty() => return Ok((tip, None, Chain::default())),
            Recorded::Nothing => {
                return Err(broken(format!(
                    "commit {} records no provenance for a change to apply to",
                    tip.as_ref().map(|t| t.id.to_string()).unwrap_or_default()
                )));
            }
        }
    }
    if changes.is_empty() {
        Ok((tip, None, Chain::default()))
    } else {
        Err(broken("no whole provenance in the history".into()))
    }
}

#[cfg(test)]
mod tests {
    use vzarr_core::{ConcatInfo, Retimed};

    use super::*;

    fn prov(days: usize) -> Provenance {
        let url = |k: usize| format!("file:///d/{k:05}.nc");
        Provenance {
            sources: (0..days)
                .map(|k| SourceRecord {
                    url: url(k),
                    size: 100 + k as u64,
                    mtime_ns: Some(k as i128),
                    etag: None,
                    fingerprint: None,
                })
                .collect(),
            allowed_prefixes: vec!["file:///d/".into()],
            concat: Some(ConcatInfo {
                dim: "time".into(),
                order_by: None,
                new_dim: false,
                pieces: (0..days)
                    .map(|k| ConcatPiece {
                        url: url(k),
                        start: k as u64,
                        len: 1,
                    })
                    .collect(),
                arrays: vec!["time".into(), "tas".into()],
                retimed: vec![Retimed {
                    array: "time".into(),
                    calendar: "standard".into(),
                    units: "days since 2000-01-01".into(),
                    source_units: (0..days).map(|k| format!("days since {k}")).collect(),
                }],
            }),
            ..Default::default()
        }
    }

    #[test]
    fn an_append_is_recorded_as_what_it_adds() {
        let (parent, new) = (prov(1000), prov(1001));
        let d = delta(&parent, "base", &new).unwrap();
        assert_eq!((d.sources.len(), d.pieces.len(), d.keep), (1, 1, 1000));
        assert_eq!(apply(&parent, &d).unwrap(), new);
        // Small: what the append adds, not every source.
        let whole = serde_json::to_string(&new).unwrap().len();
        let change = serde_json::to_string(&d).unwrap().len();
        assert!(change * 50 < whole, "{change} of {whole}");
        // A file re-processed mid-axis: its record changes, the pieces after it are kept
        // as they come.
        let mut changed = prov(1001);
        changed.sources[10].size += 1;
        let d = delta(&parent, "base", &changed).unwrap();
        assert_eq!(d.sources.len(), 2);
        assert_eq!(apply(&parent, &d).unwrap(), changed);
        // A removed file.
        let mut fewer = prov(999);
        fewer.sources.remove(5);
        fewer.concat.as_mut().unwrap().pieces.remove(5);
        fewer.concat.as_mut().unwrap().retimed[0]
            .source_units
            .remove(5);
        let d = delta(&parent, "base", &fewer).unwrap();
        assert_eq!(apply(&parent, &d).unwrap(), fewer);
        // Input locations extended by the append's file: recorded as that file alone.
        let mut p = prov(1000);
        p.inputs = Some(vzarr_core::Inputs {
            locations: (0..500).map(|k| format!("file:///d/{k:05}.nc")).collect(),
            catalogs: vec!["file:///c.txt".into()],
            ..Default::default()
        });
        let mut n = prov(1001);
        n.inputs = p.inputs.clone();
        n.inputs
            .as_mut()
            .unwrap()
            .locations
            .push("file:///d/01000.nc".into());
        let d = delta(&p, "base", &n).unwrap();
        assert_eq!((d.locations_keep, d.locations.len()), (Some(500), 1));
        assert!(d.rest.inputs.as_ref().unwrap().locations.is_empty());
        assert_eq!(apply(&p, &d).unwrap(), n);
        // Not a concatenation: no change can be recorded.
        assert!(delta(&Provenance::default(), "base", &new).is_none());
    }
}
