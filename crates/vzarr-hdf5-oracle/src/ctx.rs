//! The state of one file's scan, shared by the walk and the modules that map what it meets
//! (dimension names, layouts): [`Ctx`] holds the file, what the scan found so far and the
//! object paths by address ([`ObjectNames`]), and names the file and object in the errors it
//! makes.

use std::collections::HashMap;

use hdf5_sys::h5::haddr_t;
use hdf5_sys::h5i::hid_t;
use vzarr_core::{SkippedVariable, VirtualDataset};
use vzarr_hdf5_map::dims::PhonyDims;

use crate::ffi;
use crate::{Hdf5Error, ScanOptions};

/// The state of one file's scan.
pub(crate) struct Ctx<'a> {
    /// The file path, for messages.
    pub(crate) path: String,
    /// The file's URL, the source of every chunk reference.
    pub(crate) url: String,
    /// The file's size, which every byte range must stay within.
    pub(crate) file_size: u64,
    pub(crate) opts: &'a ScanOptions,
    /// What the scan found so far.
    pub(crate) out: VirtualDataset,
    /// The phony dimensions named so far.
    pub(crate) phony: PhonyDims,
    /// The root group, for resolving object references.
    pub(crate) root: hid_t,
    /// Object paths by address, built when the first reference is resolved.
    pub(crate) names: Option<ObjectNames>,
}

impl Ctx<'_> {
    pub(crate) fn object_error(&self, object: &str, reason: impl Into<String>) -> Hdf5Error {
        Hdf5Error::Object {
            path: self.path.clone(),
            object: object.to_string(),
            reason: reason.into(),
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

/// The path of every object of a file by its address, from one visit of the file (what
/// `H5Rget_obj_name` finds by visiting the file once per reference).
#[derive(Debug, Default)]
pub(crate) struct ObjectNames(pub(crate) HashMap<haddr_t, String>);

impl ObjectNames {
    /// Visits every object reachable from the root group `root`.
    pub(crate) fn of_file(root: hid_t) -> Result<Self, String> {
        ffi::object::paths_by_address(root)
            .map(ObjectNames)
            .ok_or_else(|| "cannot visit the file's objects".into())
    }
}
