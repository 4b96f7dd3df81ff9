//! vzarr-kerchunk
