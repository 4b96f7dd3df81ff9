//! What the integration tests of this crate share.

use vzarr_core::{
    ChunkGrid, ChunkManifest, DataType, Endian, FillValue, VirtualArray, VirtualDataset,
};

/// One array `v` of `n` one-chunk rows (16 float32 values a chunk, 64 bytes) referencing 100
/// files under `dir` in turn, at offsets 4096 + 64 i; the files are allowed.
pub(crate) fn rows_over_100_files(dir: &str, n: u64) -> VirtualDataset {
    let mut ds = VirtualDataset::new();
    let mut manifest = ChunkManifest::new_missing(n as usize);
    let files: Vec<u32> = (0..100)
        .map(|i| manifest.intern(&format!("file://{dir}/f{i}.nc")).unwrap())
        .collect();
    for i in 0..n {
        manifest
            .set_range(i as usize, files[(i % 100) as usize], 4096 + i * 64, 64)
            .unwrap();
    }
    ds.arrays.insert(
        "v".into(),
        VirtualArray {
            data_type: DataType::Float32,
            endian: Endian::Little,
            fill_value: FillValue::zero(DataType::Float32),
            codecs: vec![],
            dimension_names: vec!["t".into(), "x".into()],
            attributes: Default::default(),
            grid: ChunkGrid::regular(&[n, 16], &[1, 16]).unwrap(),
            manifest,
        },
    );
    ds.provenance.allowed_prefixes = vec![format!("file://{dir}/")];
    ds
}
