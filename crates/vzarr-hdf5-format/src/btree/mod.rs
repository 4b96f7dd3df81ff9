//! B-trees: version 1 (groups and chunk indexes of layout versions 1-3) and version 2 (dense
//! links and attributes, huge heap objects, chunk indexes of layout version 4+) (HDF5 File
//! Format Specification 3.0, sections III.A.1 and III.A.2).

pub(crate) mod v1;
pub(crate) mod v2;
