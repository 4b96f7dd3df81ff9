//! The frame of the combined dataset: groups, unlimited dimensions and skipped variables of
//! the inputs, the provenance of every source, and chunk references copied over.

use vzarr_core::{
    ChunkManifest, ChunkRef, ConcatInfo, Provenance, SkippedVariable, SourceRecord, VirtualDataset,
};

use crate::error::PlanError;
use crate::input::Input;

/// The combined dataset without arrays: the first file's groups, every file's unlimited
/// dimensions, the skipped variables.
pub(crate) fn base_dataset(ordered: &[&Input], skipped: Vec<SkippedVariable>) -> VirtualDataset {
    let mut out = VirtualDataset::new();
    out.groups = ordered[0].ds.groups.clone();
    out.skipped = skipped;
    for i in ordered {
        out.unlimited_dims
            .extend(i.ds.unlimited_dims.iter().cloned());
    }
    out
}

/// Every source once, by URL, with the prefixes they allow and how they were combined.
pub(crate) fn combined_provenance(ordered: &[&Input], concat: ConcatInfo) -> Provenance {
    let mut sources: Vec<SourceRecord> = ordered
        .iter()
        .flat_map(|i| i.ds.provenance.sources.iter().cloned())
        .collect();
    sources.sort_by(|a, b| a.url.cmp(&b.url));
    sources.dedup_by(|a, b| a.url == b.url);
    let allowed_prefixes = vzarr_core::prefixes_of(&sources);
    let companions = companions_of(ordered.iter().map(|i| &i.ds.provenance));
    Provenance {
        sources,
        allowed_prefixes,
        concat: Some(concat),
        small_chunks: None,
        upgraded_from: None,
        inputs: None,
        companions,
    }
}

/// The companions (`Provenance::companions`) of the provenances `of` combined: each once,
/// sorted, but for those that are some input's own file.
pub(crate) fn companions_of<'a>(of: impl Iterator<Item = &'a Provenance> + Clone) -> Vec<String> {
    let own: std::collections::HashSet<&str> = of
        .clone()
        .flat_map(|p| p.own_sources().map(|s| s.url.as_str()))
        .collect();
    let mut v: Vec<String> = of
        .flat_map(|p| p.companions.iter())
        .filter(|u| !own.contains(u.as_str()))
        .cloned()
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Copies a chunk reference into `out` at position `i`.
pub(crate) fn copy_ref(
    out: &mut ChunkManifest,
    i: usize,
    r: ChunkRef<'_>,
) -> Result<(), PlanError> {
    match r {
        ChunkRef::Missing => {}
        ChunkRef::Inline(b) => out.set_inline(i, b.to_vec())?,
        ChunkRef::Range {
            source,
            offset,
            length,
        } => {
            let sid = out.intern(source)?;
            out.set_range(i, sid, offset, length)?;
        }
    }
    Ok(())
}
