//! Upgrading existing references to vzarr's output: references already parsed into the model
//! (kerchunk's, with Zarr v2 or Zarr v3 metadata, JSON or Parquet; `vzarr_read::load`) become
//! what a build writes. Their metadata was translated when parsed; here their sources are
//! checked and recorded, and the small-chunk policy is applied as a build applies it:
//!
//! 1. every source URL is made absolute (`/data/a.nc` becomes `file:///data/a.nc`) and
//!    checked against the allowed prefixes before any byte of it is read (references are
//!    untrusted: they may name any file);
//! 2. every source is opened once and its size, modification time and ETag recorded as the
//!    provenance (a reader later refuses sources changed since); a reference past the end of
//!    its source is an error naming it (such references are stale or wrong: `vzarr verify`
//!    tells which);
//! 3. small chunks are merged and inlined ([`vzarr_plan::compact`]); inline chunks of the
//!    references are kept.

use std::collections::BTreeMap;
use std::sync::Arc;

use vzarr_core::{
    ChunkManifest, ChunkRef, Provenance, SmallChunkPolicy, SourceRecord, VirtualDataset,
};
use vzarr_kerchunk::ParsedRefs;
use vzarr_plan::CompactReport;
use vzarr_source::{AllowPrefixes, Memo, PrefixPolicy, Recorded, SourceStore, Stores, parse_url};

use crate::BuildError;

/// How to upgrade references.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct UpgradeOptions {
    /// Where the references came from (recorded in the provenance, named in errors).
    pub origin: String,
    /// Prefixes (local directories, URL prefixes) the sources may be read from.
    pub allow_prefixes: Vec<String>,
    /// Allow whatever sources the references name (for references the user made or trusts).
    pub trust_references: bool,
    /// How small chunks are merged and inlined (the default policy when `None`).
    pub small_chunks: Option<SmallChunkPolicy>,
}

impl UpgradeOptions {
    /// Options for the references at `origin`, their sources allowed under `allow_prefixes`.
    pub fn new(origin: &str, allow_prefixes: Vec<String>) -> Self {
        UpgradeOptions {
            origin: origin.to_string(),
            allow_prefixes,
            ..Default::default()
        }
    }
}

/// Upgraded references.
#[derive(Debug)]
#[non_exhaustive]
pub struct Upgraded {
    /// The dataset, ready for a writer.
    pub dataset: VirtualDataset,
    /// What was merged and inlined.
    pub small_chunks: CompactReport,
}

/// The sources of upgraded references, checked: each an absolute URL under the allowed
/// prefixes, opened once (through `store`) and recorded.
struct Checked {
    dataset: VirtualDataset,
    records: Vec<SourceRecord>,
    store: Arc<Memo<AllowPrefixes<Stores>>>,
}

/// Steps 1 and 2 of the module documentation.
fn check_sources(refs: ParsedRefs, opts: &UpgradeOptions) -> Result<Checked, BuildError> {
    let ParsedRefs {
        dataset: mut ds,
        whole_files,
        ..
    } = refs;
    let bad = |reason: String| BuildError::Upgrade {
        origin: opts.origin.clone(),
        reason,
    };
    // 1. Absolute URLs (of byte ranges, and of whole-file chunks).
    let mut urls: BTreeMap<String, String> = BTreeMap::new();
    let named = ds.arrays.iter().flat_map(|(path, a)| {
        a.manifest
            .sources()
            .iter()
            .map(move |u| (path.as_str(), &**u))
    });
    let whole = whole_files.urls().iter().map(|u| ("", u.as_str()));
    for (path, u) in named.chain(whole) {
        if urls.contains_key(u) {
            continue;
        }
        let loc = parse_url(u).map_err(|e| {
            let of = if path.is_empty() {
                String::new()
            } else {
                format!("array {path}: ")
            };
            bad(format!(
                "{of}source {u:?} is not an absolute path or URL vzarr reads: {e}"
            ))
        })?;
        urls.insert(u.to_string(), loc.url());
    }
    for a in ds.arrays.values_mut() {
        if a.manifest.sources().iter().any(|u| urls[&**u] != **u) {
            a.manifest = renamed(&a.manifest, &urls).map_err(|e| bad(e.to_string()))?;
        }
    }
    // 2. Sources checked against the allowed prefixes, opened once, recorded.
    let mut sources: Vec<String> = urls.values().cloned().collect();
    sources.sort();
    sources.dedup();
    let mut allowed = opts.allow_prefixes.clone();
    if opts.trust_references {
        allowed.extend(sources.iter().map(|u| {
            u.rsplit_once('/')
                .map_or(u.clone(), |(d, _)| format!("{d}/"))
        }));
    }
    let src_err = |source| BuildError::UpgradeSource {
        origin: opts.origin.clone(),
        source,
    };
    let policy = PrefixPolicy::new(&[], &allowed).map_err(src_err)?;
    let store = Arc::new(Memo::new(AllowPrefixes::new(Stores::default(), policy)));
    let mut records: Vec<SourceRecord> = Vec::with_capacity(sources.len());
    for url in &sources {
        let src = store.open(url).map_err(src_err)?;
        records.push(src.record().clone());
    }
    // Whole-file chunks: the byte range of the whole source, now that its size is known.
    let sizes: BTreeMap<&str, u64> = sources
        .iter()
        .zip(&records)
        .map(|(u, r)| (u.as_str(), r.size))
        .collect();
    whole_files.resolve::<BuildError>(&mut ds, &opts.origin, |u: &str| {
        let url = &urls[u];
        Ok((url.clone(), sizes[url.as_str()]))
    })?;
    Ok(Checked {
        dataset: ds,
        records,
        store,
    })
}

/// The sources the references point into (absolute URLs, sorted), each checked against the
/// allowed prefixes and opened: what a rebuild from the sources (`vzarr build` of them) may
/// scan.
pub fn sources(refs: ParsedRefs, opts: &UpgradeOptions) -> Result<Vec<String>, BuildError> {
    Ok(check_sources(refs, opts)?
        .records
        .into_iter()
        .map(|r| r.url)
        .collect())
}

/// Upgrades parsed references (see the module documentation).
pub fn upgrade(refs: ParsedRefs, opts: &UpgradeOptions) -> Result<Upgraded, BuildError> {
    let Checked {
        dataset: mut ds,
        records,
        store,
    } = check_sources(refs, opts)?;
    let bad = |reason: String| BuildError::Upgrade {
        origin: opts.origin.clone(),
        reason,
    };
    let sizes: BTreeMap<&str, u64> = records.iter().map(|r| (r.url.as_str(), r.size)).collect();
    for (path, a) in &ds.arrays {
        for (i, r) in a.manifest.iter_stored() {
            if let ChunkRef::Range {
                source,
                offset,
                length,
            } = r
            {
                let size = sizes[source];
                if offset.saturating_add(length) > size {
                    let index = a.grid.chunk_index(i as u64);
                    return Err(bad(format!(
                        "array {path} chunk {index:?}: the reference ({length} bytes at offset {offset}) goes past the end of {source} ({size} bytes): the references are stale or wrong"
                    )));
                }
            }
        }
    }
    ds.provenance = Provenance {
        allowed_prefixes: vzarr_core::prefixes_of(&records),
        sources: records.clone(),
        upgraded_from: Some(opts.origin.clone()),
        ..Default::default()
    };
    // 3. Small chunks, read through the same policy, sources opened from their records.
    let recorded = Recorded::new(store, records);
    let policy = opts.small_chunks.unwrap_or_default();
    let small_chunks = vzarr_plan::compact(&mut ds, &policy, vzarr_plan::Grids::Any, &recorded)?;
    Ok(Upgraded {
        dataset: ds,
        small_chunks,
    })
}

/// `m` with its sources renamed by `urls`.
fn renamed(
    m: &ChunkManifest,
    urls: &BTreeMap<String, String>,
) -> Result<ChunkManifest, vzarr_core::CoreError> {
    let mut out = ChunkManifest::new_missing_expecting(m.len(), m.stored());
    for (i, r) in m.iter_stored() {
        match r {
            ChunkRef::Range {
                source,
                offset,
                length,
            } => {
                let id = out.intern(&urls[source])?;
                out.set_range(i, id, offset, length)?;
            }
            ChunkRef::Inline(b) => out.set_inline(i, b.to_vec())?,
            ChunkRef::Missing => {}
        }
    }
    Ok(out)
}
