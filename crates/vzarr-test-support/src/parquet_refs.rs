//! Record files of kerchunk's Parquet references, as fsspec's `LazyReferenceMapper` writes
//! them (columns `path`, `offset`, `size`, `raw`), written with the parquet crate.

use std::sync::Arc;

use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

/// A row of a record file: path (URL, `None` for no reference), offset, size, raw (inline
/// bytes).
pub type Row<'a> = (Option<&'a str>, i64, i64, Option<&'a [u8]>);

/// The bytes of a record file holding `rows`.
///
/// # Panics
/// If the parquet crate fails to write (tests only).
pub fn record_file(rows: &[Row<'_>]) -> Vec<u8> {
    let schema = Arc::new(
        parse_message_type(
            "message schema { optional binary path (UTF8); required int64 offset; \
             required int64 size; optional binary raw; }",
        )
        .expect("schema"),
    );
    let mut out = Vec::new();
    let mut w = SerializedFileWriter::new(&mut out, schema, Arc::new(WriterProperties::default()))
        .expect("writer");
    let mut rg = w.next_row_group().expect("row group");
    let defs = |f: &dyn Fn(usize) -> bool| -> Vec<i16> {
        (0..rows.len()).map(|i| i16::from(f(i))).collect()
    };
    let mut col = rg.next_column().expect("column").expect("path");
    let paths: Vec<ByteArray> = rows
        .iter()
        .filter_map(|r| r.0)
        .map(ByteArray::from)
        .collect();
    col.typed::<ByteArrayType>()
        .write_batch(&paths, Some(&defs(&|i| rows[i].0.is_some())), None)
        .expect("paths");
    col.close().expect("close");
    for k in [1, 2] {
        let mut col = rg.next_column().expect("column").expect("offset, size");
        let v: Vec<i64> = rows
            .iter()
            .map(|r| if k == 1 { r.1 } else { r.2 })
            .collect();
        col.typed::<Int64Type>()
            .write_batch(&v, None, None)
            .expect("ints");
        col.close().expect("close");
    }
    let mut col = rg.next_column().expect("column").expect("raw");
    let raws: Vec<ByteArray> = rows
        .iter()
        .filter_map(|r| r.3)
        .map(|b| ByteArray::from(b.to_vec()))
        .collect();
    col.typed::<ByteArrayType>()
        .write_batch(&raws, Some(&defs(&|i| rows[i].3.is_some())), None)
        .expect("raws");
    col.close().expect("close");
    rg.close().expect("row group");
    w.close().expect("file");
    out
}
