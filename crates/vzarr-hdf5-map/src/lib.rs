//! How vzarr spells HDF5 objects in Zarr v3: the one mapping from what a reader finds in an
//! HDF5 or NetCDF4 file (a datatype's facts, an attribute's stored values, a fill value's
//! bytes, the dimension scales attached to a dataset, contiguous and compact storage) to
//! vzarr-core's model ([`vzarr_core::VirtualArray`], attributes, dimension names, chunk
//! references), or the reason an object has none.
//!
//! Two readers fill it: the native scanner (`vzarr-hdf5`, the file's structure parsed in
//! pure Rust) and the libhdf5 oracle (`vzarr-hdf5-oracle`, the same asked of the HDF5
//! library). Each decides what the file holds; this crate only decides how Zarr says it, so a
//! rule (a data type, a reserved attribute, a fill value, a phony dimension) is written once,
//! and the differential test between the two compares two readers of the file, not two
//! copies of the mapping. The reference is the HDF5 File Format Specification 3.0, section
//! IV.A.2 (header messages), the HDF5 Dimension Scale Specification and the NetCDF User
//! Guide's conventions for netCDF-4 files.
//!
//! # Modules
//!
//! | module   | what it does |
//! |----------|--------------|
//! | [`types`]  | datatype facts to [`types::TypeInfo`], and that to a Zarr data type and byte order, or why not |
//! | [`attrs`]  | attribute values as JSON; bookkeeping dropped; `_FillValue` in xarray's encoding |
//! | [`fill`]   | the dataset fill value (what unwritten chunks read as) |
//! | [`dims`]   | dimension names: scales' names, phony dimensions as netCDF-C numbers them |
//! | [`chunks`] | contiguous and compact storage to chunk references; a dataset's parts to an array |
//! | [`masked`] | a chunk stored with some filters skipped (a filter mask) re-encoded with them all |

#![forbid(unsafe_code)]

pub mod attrs;
pub mod chunks;
pub mod compound;
pub mod dims;
pub mod fill;
pub mod masked;
pub mod types;

/// Why a dataset is left out whatever its data type: what a reader finds of its dataspace and
/// storage that Zarr has no spelling for.
pub mod refusal {
    /// A null dataspace.
    pub const NULL_DATASPACE: &str = "null dataspace: the dataset holds no data";
    /// Raw data in external files (`H5Pset_external`).
    pub const EXTERNAL_FILES: &str = "raw data in external files (H5Pset_external)";
    /// Contiguous storage with a filter pipeline (HDF5 only filters chunks; such a dataset
    /// is corrupt or of a writer that misread the format).
    pub const CONTIGUOUS_WITH_FILTERS: &str = "contiguous dataset with filters";
    /// A virtual dataset (VDS).
    pub const VIRTUAL_DATASET: &str = "virtual dataset (VDS): its data lives in other datasets";
    /// Region references (a dataset and a selection of it): no Zarr spelling, as VirtualiZarr
    /// refuses them.
    pub const REGION_REFERENCES: &str =
        "region references (a dataset and a selection of it): no convention spells them";
    /// Attribute references (HDF5 1.12's `H5R_ATTR`): no Zarr spelling.
    pub const ATTRIBUTE_REFERENCES: &str =
        "attribute references (HDF5 1.12's H5R_ATTR): no convention spells them";
    /// Object references when the scan does not read references (they are then read as the
    /// paths of their targets).
    pub const OBJECT_REFERENCES_NOT_READ: &str = "object references: read as the paths of their targets only when links and references \
         are asked for";
}

/// What became of a dataset.
#[derive(Debug)]
pub enum Scanned {
    /// A virtual array.
    Array(Box<vzarr_core::VirtualArray>),
    /// Left out, with the reason.
    Refused(String),
    /// A netCDF dimension without a variable: no array.
    DimensionOnly,
}

/// The path of `name` in the group at `parent` (`""` for the root).
pub fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

/// A group path for messages: `/` for the root.
pub fn or_root(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("g", "a"), "g/a");
        assert_eq!(or_root(""), "/");
        assert_eq!(or_root("g"), "g");
    }
}
