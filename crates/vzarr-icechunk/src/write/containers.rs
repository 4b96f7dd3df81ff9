//! The virtual chunk containers a dataset needs (URL prefixes listed in the repository's
//! configuration), and each referenced source's Icechunk location and checksum.

use std::collections::{BTreeSet, HashMap};

use icechunk::RepositoryConfig;
use icechunk::format::manifest::{Checksum, SecondsSinceEpoch, VirtualChunkLocation};
use icechunk::storage::ETag;
use icechunk::virtual_chunks::VirtualChunkContainer;
use vzarr_core::{SourceRecord, VirtualArray, VirtualDataset};

use crate::IcechunkError;
use crate::url::encode_file_url;

/// The URL prefixes of the virtual chunk containers a dataset needs: the prefixes its
/// provenance records, and the directory of every referenced source outside them. Sorted.
pub fn container_prefixes(ds: &VirtualDataset) -> Vec<String> {
    let mut out: BTreeSet<String> = ds.provenance.allowed_prefixes.iter().cloned().collect();
    for a in ds.arrays.values() {
        for url in a.manifest.sources() {
            if !out.iter().any(|p| url.starts_with(p.as_str()))
                && let Some(i) = url.rfind('/')
            {
                out.insert(url[..=i].to_string());
            }
        }
    }
    out.into_iter().collect()
}

/// The checksum Icechunk checks on every read of a source's chunks: the ETag where the store
/// gave one, else the modification time in whole seconds, rounded up (a reader refuses the
/// chunk when the source is modified after it; a sub-second modification time rounded down
/// would refuse the unchanged source).
fn checksum(rec: &SourceRecord) -> Option<Checksum> {
    if let Some(etag) = &rec.etag {
        return Some(Checksum::ETag(ETag(etag.clone())));
    }
    let ns = rec.mtime_ns?;
    let secs = ns.div_euclid(1_000_000_000) + i128::from(ns.rem_euclid(1_000_000_000) != 0);
    u32::try_from(secs)
        .ok()
        .map(|s| Checksum::LastModified(SecondsSinceEpoch(s)))
}

/// The Icechunk location and checksum of each source of an array.
pub(super) type Locations<'a> = HashMap<&'a str, (VirtualChunkLocation, Option<Checksum>)>;

/// Icechunk's location of each source of `array`, once. Every source must lie under a
/// container of the repository (`container_prefixes` made them so): checked here, because
/// Icechunk 2.3 checks a location at write time without percent-decoding it and at read time
/// after decoding it, so its own check would refuse `file:///dir with space/x.nc` under the
/// container `file:///dir with space/` that its readers match.
pub(super) fn array_locations<'a>(
    path: &str,
    array: &'a VirtualArray,
    ds: &VirtualDataset,
    prefixes: &[String],
) -> Result<Locations<'a>, IcechunkError> {
    let checksums: HashMap<&str, Option<Checksum>> = ds
        .provenance
        .sources
        .iter()
        .map(|s| (s.url.as_str(), checksum(s)))
        .collect();
    let ref_err = |reason: String| IcechunkError::Reference {
        array: path.to_string(),
        index: Vec::new(),
        reason,
    };
    array
        .manifest
        .sources()
        .iter()
        .map(|u| {
            if !prefixes.iter().any(|p| u.starts_with(p.as_str())) {
                return Err(ref_err(format!(
                    "{u}: outside every virtual chunk container of the repository"
                )));
            }
            VirtualChunkLocation::from_url(&encode_file_url(u))
                .map(|l| (&**u, (l, checksums.get(&**u).cloned().flatten())))
                .map_err(|e| ref_err(format!("{u}: not a URL Icechunk takes: {e}")))
        })
        .collect()
}

/// Adds to `config` the virtual chunk containers of `containers` it does not list yet (one it
/// lists is left as it is); returns whether any was added.
pub(super) fn add_missing_containers(
    config: &mut RepositoryConfig,
    containers: &[VirtualChunkContainer],
) -> Result<bool, IcechunkError> {
    let mut changed = false;
    for c in containers {
        if config.get_virtual_chunk_container(c.url_prefix()).is_none() {
            config
                .set_virtual_chunk_container(c.clone())
                .map_err(|reason| IcechunkError::Container {
                    url: c.url_prefix().to_string(),
                    reason,
                })?;
            changed = true;
        }
    }
    Ok(changed)
}
