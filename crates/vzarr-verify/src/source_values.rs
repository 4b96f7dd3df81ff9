//! What a reader of a source gives: values in the source's element type, as native-endian
//! bytes. Shared by vzarr's own readers (`direct.rs`), the C libraries (`c_readers.rs`) and
//! the worker process that runs them (`worker.rs`).

use vzarr_core::DataType;

/// Values read from a source: their type in the source and native-endian bytes.
#[derive(Clone, Debug)]
pub(crate) struct SourceValues {
    /// Element type as the source stores it.
    pub(crate) dtype: DataType,
    /// Native-endian element bytes, C order; for [`DataType::String`], the strings encoded as
    /// a `vlen-utf8` chunk ([`vzarr_codec::vlen_utf8`]).
    pub(crate) bytes: Vec<u8>,
}
