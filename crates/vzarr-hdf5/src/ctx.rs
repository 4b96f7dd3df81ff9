//! The state of one file's scan, shared by the walk and the modules that map what it meets
//! (attributes, dimension names, layouts, strings): [`Ctx`] holds the file, its bytes, what
//! the scan found so far and the object paths by address ([`ObjectNames`]), and names the file
//! and object in the errors it makes.

use std::collections::HashMap;

use vzarr_core::{SkippedVariable, VirtualDataset};
use vzarr_hdf5_format::File;
use vzarr_hdf5_map::dims::PhonyDims;
use vzarr_hdf5_map::or_root;

use crate::storage::SourceStorage;
use crate::{Hdf5Error, ScanOptions};

/// The state of one file's scan.
pub(crate) struct Ctx<'a> {
    /// The source's URL: the name of the file in messages and the source of every chunk
    /// reference.
    pub(crate) url: String,
    /// The file's size, which every byte range must stay within.
    pub(crate) file_size: u64,
    pub(crate) opts: &'a ScanOptions,
    /// The file's structure.
    pub(crate) file: &'a File,
    /// Its bytes.
    pub(crate) storage: &'a SourceStorage,
    /// What the scan found so far.
    pub(crate) out: VirtualDataset,
    /// The phony dimensions named so far.
    pub(crate) phony: PhonyDims,
    /// Object paths by address (or why they cannot all be named), built when the first
    /// reference is resolved.
    pub(crate) names: Option<Result<ObjectNames, String>>,
    /// The source path under which each group or dataset was first met through hard links
    /// (the walk's order: depth first, links in the file's order).
    pub(crate) seen: HashMap<u64, String>,
    /// Groups and datasets met below soft links so far (bounded by the walk's
    /// `MAX_SOFT_NODES`).
    pub(crate) soft_nodes: usize,
    /// Soft links' targets resolved so far, by absolute path: a group of thousands of soft
    /// links to one place resolves it once.
    pub(crate) soft_targets: HashMap<String, Result<u64, String>>,
}

/// The path of every object of a file by its address, from one walk of the file (the first
/// path in a depth-first walk in name order, as `H5Ovisit` finds it).
#[derive(Debug, Default)]
pub(crate) struct ObjectNames(pub(crate) HashMap<u64, String>);

impl ObjectNames {
    /// Walks every object reachable from the root group by hard links.
    pub(crate) fn of_file(file: &File) -> Result<Self, String> {
        let paths = file
            .object_paths()
            .map_err(|_| "cannot visit the file's objects".to_string())?;
        if !paths.errors.is_empty() {
            return Err("cannot visit the file's objects".into());
        }
        Ok(ObjectNames(paths.by_address))
    }
}

impl Ctx<'_> {
    /// The file's object paths (walked on first use), or why they cannot all be had.
    pub(crate) fn object_names(&mut self) -> Result<&ObjectNames, &String> {
        let file = self.file;
        self.names
            .get_or_insert_with(|| ObjectNames::of_file(file))
            .as_ref()
    }

    pub(crate) fn object_error(&self, object: &str, reason: impl Into<String>) -> Hdf5Error {
        Hdf5Error::Object {
            url: self.url.clone(),
            object: object.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn structure_error(
        &self,
        object: &str,
        what: &'static str,
        source: vzarr_hdf5_format::Error,
    ) -> Hdf5Error {
        Hdf5Error::Structure {
            url: self.url.clone(),
            object: or_root(object).to_string(),
            what,
            source: Box::new(source),
        }
    }

    /// Leaves a variable (or attribute, `path@name`) out, with the reason.
    pub(crate) fn skip(&mut self, object: &str, reason: impl Into<String>) {
        self.out.skipped.push(SkippedVariable {
            path: object.to_string(),
            reason: reason.into(),
        });
    }
}
