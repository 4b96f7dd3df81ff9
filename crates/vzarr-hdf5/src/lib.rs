//! vzarr-hdf5
