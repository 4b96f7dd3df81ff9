//! Sharded builds: `vzarr scan --shard K/N` scans every N-th source starting at K into a
//! partial file ([`scan_shard`], [`write_partial`]); `vzarr combine` plans from all N partials
//! ([`read_partials`]) and gives the same output as a one-process build.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::{Value, json};
use vzarr_core::VirtualDataset;
use vzarr_core::record::{from_record, to_record};
use vzarr_scan::inputs::SourceRef;

use crate::{BuildError, BuildOptions, Failure, Scanned, scan_sources};

/// Shard `k` (from 0) of `n`: the sources at positions `k`, `k + n`, `k + 2n`, ...
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which shard (0-based).
    pub k: usize,
    /// Number of shards.
    pub n: usize,
}

impl Shard {
    /// The whole list as one shard.
    pub const ALL: Shard = Shard { k: 0, n: 1 };

    /// Whether the source at position `i` belongs to this shard.
    pub fn contains(&self, i: usize) -> bool {
        i % self.n == self.k
    }
}

impl FromStr for Shard {
    type Err = BuildError;

    /// `K/N` with `0 <= K < N`.
    fn from_str(s: &str) -> Result<Self, BuildError> {
        let bad = |reason| BuildError::BadShard {
            spec: s.to_string(),
            reason,
        };
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| bad("expected K/N, e.g. 0/8"))?;
        let k: usize = k.trim().parse().map_err(|_| bad("K is not a number"))?;
        let n: usize = n.trim().parse().map_err(|_| bad("N is not a number"))?;
        if n == 0 || k >= n {
            return Err(bad("need 0 <= K < N"));
        }
        Ok(Shard { k, n })
    }
}

/// Scans the sources of `shard` among `all`; positions in the result are positions in `all`.
pub fn scan_shard(
    all: &[SourceRef],
    shard: Shard,
    opts: &BuildOptions,
    progress: &(dyn Fn(&SourceRef, bool) + Sync),
) -> Result<Scanned, BuildError> {
    let mine: Vec<usize> = (0..all.len()).filter(|&i| shard.contains(i)).collect();
    let list: Vec<SourceRef> = mine.iter().map(|&i| all[i].clone()).collect();
    let mut scanned = scan_sources(&list, opts, progress)?;
    for (pos, _) in scanned.datasets.iter_mut() {
        *pos = mine[*pos];
    }
    for (pos, _) in scanned.failures.iter_mut() {
        *pos = mine[*pos];
    }
    Ok(scanned)
}

/// Writes the scans of `shard` (positions in `scanned` are positions among all `total`
/// sources) to `path`, atomically, with the inputs the sources were found in (for the
/// combined output to record: [`crate::BuildOptions::inputs`]).
pub fn write_partial(
    path: &Path,
    shard: Shard,
    total: usize,
    scanned: &Scanned,
    inputs: Option<&vzarr_core::Inputs>,
) -> Result<(), BuildError> {
    let mut entries: Vec<(usize, Value)> = scanned
        .datasets
        .iter()
        .map(|(i, ds)| (*i, json!({"index": i, "record": to_record(ds)})))
        .collect();
    entries.extend(
        scanned
            .failures
            .iter()
            .map(|(i, f)| (*i, json!({"index": i, "failure": f}))),
    );
    entries.sort_by_key(|(i, _)| *i);
    let mut doc = json!({
        "vzarr_partial": 1,
        "shard": [shard.k, shard.n],
        "total": total,
        "warnings": scanned.warnings,
        "scans": entries.into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
    });
    if let Some(i) = inputs {
        doc["inputs"] = json!(i);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let io = |e: std::io::Error| BuildError::io(path, e);
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io)?;
    serde_json::to_writer(std::io::BufWriter::new(&mut tmp), &doc).map_err(|e| io(e.into()))?;
    tmp.flush().map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// The content of all partial scans: datasets in source order, failures, warnings, and the
/// inputs the sources were found in (when they record them).
pub type Partials = (
    Vec<VirtualDataset>,
    Vec<Failure>,
    Vec<String>,
    Option<vzarr_core::Inputs>,
);

/// Reads the partials of every shard and returns the datasets in source order, the failures,
/// the warnings and the inputs; a missing, repeated or inconsistent shard is an error.
pub fn read_partials(paths: &[PathBuf]) -> Result<Partials, BuildError> {
    let mut shards: Vec<(usize, usize, usize)> = Vec::new();
    let mut entries: Vec<(usize, Result<VirtualDataset, Failure>)> = Vec::new();
    let mut warnings = Vec::new();
    let mut inputs: Vec<Option<vzarr_core::Inputs>> = Vec::new();
    for p in paths {
        let text = std::fs::read(p).map_err(|e| BuildError::io(p, e))?;
        let bad = |what: &str| BuildError::NotAPartial {
            path: p.display().to_string(),
            what: what.to_string(),
        };
        let v: Value = serde_json::from_slice(&text).map_err(|e| bad(&format!("not JSON: {e}")))?;
        if v.get("vzarr_partial").and_then(Value::as_u64) != Some(1) {
            return Err(bad("no version 1 marker"));
        }
        let shard = v
            .get("shard")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no shard"))?;
        let k = shard
            .first()
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("shard"))? as usize;
        let n = shard
            .get(1)
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("shard"))? as usize;
        let total = v
            .get("total")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("total"))? as usize;
        shards.push((k, n, total));
        inputs.push(match v.get("inputs") {
            Some(i) => Some(serde_json::from_value(i.clone()).map_err(|_| bad("inputs"))?),
            None => None,
        });
        if let Some(w) = v.get("warnings").and_then(Value::as_array) {
            warnings.extend(w.iter().filter_map(Value::as_str).map(str::to_string));
        }
        for e in v
            .get("scans")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no scans"))?
        {
            let i = e
                .get("index")
                .and_then(Value::as_u64)
                .ok_or_else(|| bad("index"))? as usize;
            if i % n != k || i >= total {
                return Err(bad(&format!("source {i} does not belong to shard {k}/{n}")));
            }
            if let Some(rec) = e.get("record") {
                entries.push((i, Ok(from_record(rec).map_err(|e| bad(&e.to_string()))?)));
            } else {
                let f: Failure =
                    serde_json::from_value(e.get("failure").cloned().unwrap_or_default())
                        .map_err(|_| bad("failure entry"))?;
                entries.push((i, Err(f)));
            }
        }
    }
    let (n, total) = match shards.first() {
        Some(&(_, n, t)) => (n, t),
        None => return Err(BuildError::Shards("no partial scans given".into())),
    };
    if inputs.windows(2).any(|w| w[0] != w[1]) {
        return Err(BuildError::Shards(
            "the partial scans were listed from different inputs".into(),
        ));
    }
    if shards.iter().any(|&(_, m, t)| m != n || t != total) {
        return Err(BuildError::Shards(
            "the partial scans come from different shardings (N or the source count differ)".into(),
        ));
    }
    let mut ks: Vec<usize> = shards.iter().map(|s| s.0).collect();
    ks.sort_unstable();
    if ks != (0..n).collect::<Vec<_>>() {
        let list = |v: Vec<usize>| {
            v.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let missing = list((0..n).filter(|k| ks.binary_search(k).is_err()).collect());
        let mut twice: Vec<usize> = ks
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        twice.dedup();
        let mut problems = Vec::new();
        if !missing.is_empty() {
            problems.push(format!("missing shard(s) {missing} of {n}"));
        }
        if !twice.is_empty() {
            problems.push(format!("shard(s) {} given more than once", list(twice)));
        }
        let mut msg = problems.join("; ");
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        return Err(BuildError::Shards(format!(
            "{msg}need the partial scans of shards 0..{n} exactly once each; got {ks:?}"
        )));
    }
    entries.sort_by_key(|(i, _)| *i);
    let mut datasets = Vec::new();
    let mut failures = Vec::new();
    for (_, e) in entries {
        match e {
            Ok(ds) => datasets.push(ds),
            Err(f) => failures.push(f),
        }
    }
    let inputs = inputs.into_iter().next().flatten();
    Ok((datasets, failures, warnings, inputs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vzarr_scan::batch::BatchSummary;

    #[test]
    fn shards_parse() {
        assert_eq!("0/4".parse::<Shard>().unwrap(), Shard { k: 0, n: 4 });
        assert_eq!(" 3 / 4 ".parse::<Shard>().unwrap(), Shard { k: 3, n: 4 });
        for bad in ["4/4", "1/0", "x", "a/3", "1/b"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert!(Shard { k: 1, n: 3 }.contains(4));
        assert!(!Shard { k: 1, n: 3 }.contains(5));
    }

    #[test]
    fn combine_names_missing_and_repeated_shards() {
        let dir = tempfile::tempdir().unwrap();
        let part = |k: usize| {
            let p = dir.path().join(format!("part-{k}.json"));
            let scanned = Scanned {
                datasets: vec![],
                failures: vec![],
                warnings: vec![],
                summary: BatchSummary::default(),
            };
            write_partial(&p, Shard { k, n: 5 }, 12, &scanned, None).unwrap();
            p
        };
        let err = |paths: &[std::path::PathBuf]| match read_partials(paths) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("combined an incomplete set of partials"),
        };
        let e = err(&[part(0), part(1), part(3), part(4)]);
        assert!(e.starts_with("missing shard(s) 2 of 5: "), "{e}");
        assert!(e.contains("exactly once each; got [0, 1, 3, 4]"), "{e}");
        let e = err(&[part(4), part(1), part(1), part(0)]);
        assert!(
            e.starts_with("missing shard(s) 2, 3 of 5; shard(s) 1 given more than once: "),
            "{e}"
        );
    }
}
