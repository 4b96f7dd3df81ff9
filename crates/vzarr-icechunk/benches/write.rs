//! Writing N chunk references (default 10,000,000; `cargo bench -p vzarr-icechunk --bench
//! write -- N`): the same in-memory dataset (one array of N one-chunk rows over 100 sources)
//! written as kerchunk JSON by vzarr-kerchunk, as an Icechunk repository by vzarr's writer
//! (default options), and straight through Icechunk's own API with nothing of vzarr's: the
//! documents set, the references given to `Store::set_virtual_refs` in batches of 65,536, one
//! commit per 1,048,576 references, manifests split at 65,000 references without URL
//! compression and not cached (as the writer configures Icechunk). The last is the floor any
//! writer of Icechunk 2.3 pays. Prints the wall seconds of each.

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use icechunk::config::{
    CachingConfig, ManifestConfig, ManifestSplitCondition, ManifestSplitDim,
    ManifestSplitDimCondition, ManifestSplittingConfig,
    ManifestVirtualChunkLocationCompressionConfig,
};
use icechunk::format::format_constants::SpecVersionBin;
use icechunk::format::manifest::{VirtualChunkLocation, VirtualChunkRef};
use icechunk::format::{ChunkIndices, Path as IcPath};
use icechunk::virtual_chunks::VirtualChunkContainer;
use icechunk::{ObjectStoreConfig, Repository, RepositoryConfig, Store};
use tokio::sync::RwLock;
use vzarr_core::VirtualDataset;
use vzarr_icechunk::{RepoLocation, WriteOptions, array_document};

const BATCH: u64 = 1 << 16;
const COMMIT_EVERY: u64 = 1 << 20;

fn main() {
    let n: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let src = format!("{}/src", dir.path().display());
    let ds = common::rows_over_100_files(&src, n);

    let t = Instant::now();
    let out = std::fs::File::create(dir.path().join("refs.json")).expect("create");
    vzarr_kerchunk::write_refs(&ds, std::io::BufWriter::new(out)).expect("json");
    let json = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let loc = RepoLocation::parse(&dir.path().join("vzarr.icechunk").display().to_string())
        .expect("location");
    vzarr_icechunk::write(&ds, &loc, &WriteOptions::default()).expect("vzarr icechunk");
    let ours = t.elapsed().as_secs_f64();

    let t = Instant::now();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(icechunk_alone(
            &dir.path().join("floor.icechunk"),
            &src,
            &ds,
            n,
        ));
    let floor = t.elapsed().as_secs_f64();

    println!(
        "{n} references: kerchunk JSON {json:.2} s; Icechunk through vzarr {ours:.2} s \
         ({:.1}x JSON); Icechunk's own API alone {floor:.2} s ({:.1}x JSON)",
        ours / json,
        floor / json
    );
}

/// The references of `ds`'s array `v` written with Icechunk's API only.
async fn icechunk_alone(path: &std::path::Path, src: &str, ds: &VirtualDataset, n: u64) {
    let storage = icechunk::new_local_filesystem_storage(path)
        .await
        .expect("storage");
    let mut config = RepositoryConfig {
        caching: Some(CachingConfig {
            num_chunk_refs: Some(0),
            ..Default::default()
        }),
        manifest: Some(ManifestConfig {
            splitting: Some(ManifestSplittingConfig {
                split_sizes: Some(vec![(
                    ManifestSplitCondition::PathMatches {
                        regex: "^/v$".into(),
                    },
                    vec![ManifestSplitDim {
                        condition: ManifestSplitDimCondition::Axis(0),
                        num_chunks: 65_000,
                    }],
                )]),
            }),
            virtual_chunk_location_compression: Some(
                ManifestVirtualChunkLocationCompressionConfig {
                    min_num_chunks: Some(u16::MAX),
                    ..Default::default()
                },
            ),
            ..Default::default()
        }),
        ..Default::default()
    };
    let _replaced = config.set_virtual_chunk_container(
        VirtualChunkContainer::new(
            format!("file://{src}/"),
            ObjectStoreConfig::LocalFileSystem(src.into()),
        )
        .expect("container"),
    );
    let repo = Repository::create(storage)
        .config(config)
        .spec_version(SpecVersionBin::V2)
        .execute()
        .await
        .expect("create");
    let locations: Vec<VirtualChunkLocation> = (0..100)
        .map(|i| VirtualChunkLocation::from_url(&format!("file://{src}/f{i}.nc")).expect("url"))
        .collect();
    let node = IcPath::try_from("/v").expect("path");
    let mut start = 0u64;
    while start < n {
        let session = repo.writable_session("main").await.expect("session");
        let store = Store::from_session(Arc::new(RwLock::new(session))).await;
        if start == 0 {
            let root = br#"{"zarr_format":3,"node_type":"group","attributes":{}}"#;
            store
                .set("zarr.json", Bytes::from_static(root))
                .await
                .expect("root");
            let doc = array_document(&ds.arrays["v"]).to_string();
            store
                .set("v/zarr.json", Bytes::from(doc))
                .await
                .expect("array");
        }
        let end = (start + COMMIT_EVERY).min(n);
        for b in (start..end).step_by(BATCH as usize) {
            let batch: Vec<_> = (b..(b + BATCH).min(end))
                .map(|j| {
                    let r = VirtualChunkRef {
                        location: locations[(j % 100) as usize].clone(),
                        offset: 4096 + j * 64,
                        length: 64,
                        checksum: None,
                    };
                    (ChunkIndices(vec![j as u32, 0]), r)
                })
                .collect();
            store
                .set_virtual_refs(&node, false, batch)
                .await
                .expect("references");
        }
        store
            .session()
            .write()
            .await
            .commit("piece")
            .execute()
            .await
            .expect("commit");
        start = end;
    }
}
