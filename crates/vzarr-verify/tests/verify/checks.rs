//! Verification of the fixtures through their manifests, corruption and staleness detection,
//! and the allowed-prefix policy.

use serde_json::json;
use vzarr_read::{ReadError, ReadOptions};
use vzarr_source::SourceError;
use vzarr_verify::{SourceReaders, VerifyError, VerifyOptions, verify};

use crate::common::*;

fn open_ignoring_stale(p: &std::path::Path) -> vzarr_read::Reader {
    let opts = ReadOptions {
        ignore_stale: true,
        ..trusting()
    };
    vzarr_read::open(p.to_str().unwrap(), opts).unwrap()
}

fn is_stale(e: &ReadError) -> bool {
    matches!(e.source_error(), Some(SourceError::Stale { .. }))
}

#[test]
fn verify_passes_on_every_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let names = good_fixtures();
    assert!(names.len() >= 14, "fixture index lists too few files");
    for name in names {
        for (split, readers) in [None, Some(4096)]
            .into_iter()
            .flat_map(|s| readers().into_iter().map(move |r| (s, r)))
        {
            let out = dir.path().join(format!("{name}.json"));
            build(&fixtures().join(&name), &out, split);
            let reader = open(&out);
            let r = verify(&reader, &with(readers)).unwrap();
            assert!(
                r.ok(),
                "{name} (split {split:?}, {readers:?}): {}\n{:#?}",
                r.summary(),
                r.mismatches
            );
            assert!(!r.readers.is_empty(), "{name}: no reader named");
            assert_eq!(r.chunks_checked, r.chunks_total, "{name}");
            let stored = reader
                .dataset()
                .arrays
                .values()
                .any(|a| a.shape().iter().all(|&d| d > 0));
            assert!(!stored || r.values_compared > 0, "{name}: nothing compared");
            // Only CF time re-encoding (single files have none) and, by vzarr's own readers,
            // object references read as paths (libhdf5 names them) are ever skipped.
            let refs = &reader.dataset().arrays;
            assert!(
                r.skipped.iter().all(|s| readers == SourceReaders::Native
                    && refs
                        .get(&s.array)
                        .is_some_and(|a| a.attributes.contains_key("links_references"))),
                "{name} ({readers:?}): {:?}",
                r.skipped
            );
        }
    }
}

#[test]
fn sampling_is_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    build(&fixtures().join("filters.h5"), &out, None);
    let reader = open(&out);
    for readers in readers() {
        let opts = VerifyOptions {
            sample: Some(7),
            seed: 42,
            ..with(readers)
        };
        let a = verify(&reader, &opts).unwrap();
        assert!(a.ok(), "{}", a.summary());
        assert_eq!(a.chunks_checked, 7);
        assert!(a.chunks_total > 7);
        let b = verify(&reader, &opts).unwrap();
        assert_eq!(a.values_compared, b.values_compared);
        assert!(a.summary().contains("(sample of"), "{}", a.summary());
    }
}

/// The offset and length of a stored chunk of `array` in a references file.
fn chunk_ref(refs: &serde_json::Value, key: &str) -> (u64, u64) {
    let r = &refs["refs"][key];
    (r[1].as_u64().unwrap(), r[2].as_u64().unwrap())
}

#[test]
fn changed_bytes_in_a_compressed_chunk_are_caught() {
    // Bit rot inside a deflate-compressed chunk, modification time kept (as bit rot does):
    // the chunk no longer decodes; verify names the variable and the chunk.
    let dir = tempfile::tempdir().unwrap();
    let src = copy_fixture("filters.h5", dir.path());
    let out = dir.path().join("f.json");
    build(&src, &out, None);
    let refs = read_json(&out);
    let (off, len) = chunk_ref(&refs, "deflate/c/1/1");
    let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&src).unwrap();
    bytes[(off + len / 2) as usize] ^= 0x5a;
    std::fs::write(&src, &bytes).unwrap();
    set_mtime(&src, mtime);
    // The change lies in the first 64 KiB: the fingerprint reports the source stale...
    let e = verify(&open(&out), &VerifyOptions::default()).unwrap_err();
    assert!(e.to_string().contains("content changed"), "{e}");
    // ... and read anyway, the values tell which chunk.
    let reader = open_ignoring_stale(&out);
    for readers in readers() {
        let r = verify(&reader, &with(readers)).unwrap();
        assert!(!r.ok());
        assert_eq!(r.failed_chunks, 1, "{readers:?}: {:#?}", r.mismatches);
        let m = &r.mismatches[0];
        assert_eq!(
            (m.array.as_str(), m.chunk.as_slice()),
            ("deflate", &[1u64, 1][..])
        );
        assert!(m.source.ends_with("filters.h5"));
        let text = m.to_string();
        assert!(text.contains("deflate chunk [1, 1]"), "{text}");
    }
}

#[test]
fn a_manifest_pointing_at_wrong_bytes_is_caught() {
    // The manifest's byte range of one chunk shifted (as a scanner bug would do).
    let dir = tempfile::tempdir().unwrap();
    let src = copy_fixture("layouts_v1.h5", dir.path());
    let out = dir.path().join("f.json");
    build(&src, &out, None);
    let mut refs = read_json(&out);
    let (off, len) = chunk_ref(&refs, "btree_v1/c/2/1");
    refs["refs"]["btree_v1/c/2/1"] = json!([format!("file://{}", src.display()), off + 4, len]);
    write_json(&out, &refs);
    for readers in readers() {
        let r = verify(&open(&out), &with(readers)).unwrap();
        assert_eq!(r.failed_chunks, 1, "{readers:?}");
        let m = &r.mismatches[0];
        assert_eq!(
            (m.array.as_str(), m.chunk.as_slice()),
            ("btree_v1", &[2u64, 1][..])
        );
        assert!(m.differing > 0);
        // Chunks of 5x10: chunk (2, 1) starts at (10, 10).
        assert_eq!(m.first_index.as_deref(), Some(&[10u64, 10][..]));
        assert!(m.reason.contains("values differ"), "{}", m.reason);
    }
}

#[test]
fn swapped_references_are_caught() {
    // Two chunks' references exchanged (each points at the other's bytes): both differ.
    let dir = tempfile::tempdir().unwrap();
    let src = copy_fixture("layouts_v1.h5", dir.path());
    let out = dir.path().join("f.json");
    build(&src, &out, None);
    let mut refs = read_json(&out);
    let (a, b) = ("btree_v1/c/0/0", "btree_v1/c/1/1");
    let ra = refs["refs"][a].clone();
    refs["refs"][a] = refs["refs"][b].clone();
    refs["refs"][b] = ra;
    write_json(&out, &refs);
    for readers in readers() {
        let r = verify(&open(&out), &with(readers)).unwrap();
        assert_eq!(r.failed_chunks, 2, "{readers:?}: {:#?}", r.mismatches);
        let chunks: Vec<&[u64]> = r.mismatches.iter().map(|m| m.chunk.as_slice()).collect();
        assert_eq!(chunks, [&[0u64, 0][..], &[1, 1][..]]);
        assert!(
            r.mismatches.iter().all(|m| m.differing > 0),
            "{:#?}",
            r.mismatches
        );
    }
}

#[test]
fn changed_bytes_of_an_inline_chunk_are_caught() {
    // A compact dataset is kept inline in the manifest.
    let dir = tempfile::tempdir().unwrap();
    let src = copy_fixture("layouts_v1.h5", dir.path());
    let out = dir.path().join("f.json");
    build(&src, &out, None);
    let reader = open(&out);
    let inline = match reader.dataset().arrays["compact"].manifest.get(0) {
        vzarr_core::ChunkRef::Inline(b) => b.to_vec(),
        other => panic!("compact is not inline: {other:?}"),
    };
    drop(reader);

    // One value changed in the manifest's inline copy: a value mismatch at [0, 2].
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut changed = inline.clone();
    changed[8] ^= 0x01;
    let mut refs = read_json(&out);
    refs["refs"]["compact/c/0/0"] = json!(format!("base64:{}", b64.encode(&changed)));
    let tampered = dir.path().join("tampered.json");
    write_json(&tampered, &refs);
    for readers in readers() {
        let r = verify(&open(&tampered), &with(readers)).unwrap();
        assert_eq!(r.failed_chunks, 1, "{readers:?}: {:#?}", r.mismatches);
        let m = &r.mismatches[0];
        assert_eq!(
            (m.array.as_str(), m.chunk.as_slice()),
            ("compact", &[0u64, 0][..])
        );
        assert_eq!(m.differing, 1);
        assert_eq!(m.first_index.as_deref(), Some(&[0u64, 2][..]));
        assert!(m.reason.contains("manifest -7, source -8"), "{}", m.reason);
    }

    // The same bytes changed in the source (modification time kept): the object header's
    // checksum no longer matches, HDF5 refuses the dataset, and verify names the chunk.
    let mtime = std::fs::metadata(&src).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&src).unwrap();
    let at = bytes
        .windows(inline.len())
        .position(|w| w == inline.as_slice())
        .expect("compact data in the file");
    bytes[at + 8] ^= 0x01;
    std::fs::write(&src, &bytes).unwrap();
    set_mtime(&src, mtime);
    for readers in readers() {
        let r = verify(&open_ignoring_stale(&out), &with(readers)).unwrap();
        assert_eq!(r.failed_chunks, 1, "{readers:?}: {:#?}", r.mismatches);
        let m = &r.mismatches[0];
        assert_eq!(
            (m.array.as_str(), m.chunk.as_slice()),
            ("compact", &[0u64, 0][..])
        );
        assert!(
            m.reason.contains("reading the source directly failed"),
            "{}",
            m.reason
        );
    }
}

#[test]
fn changed_sources_are_reported_stale() {
    let dir = tempfile::tempdir().unwrap();
    let src = copy_fixture("nc3_classic.nc", dir.path());
    let out = dir.path().join("f.json");
    build(&src, &out, None);
    // Size changed.
    let mut bytes = std::fs::read(&src).unwrap();
    bytes.push(0);
    std::fs::write(&src, &bytes).unwrap();
    let reader = open(&out);
    let e = verify(&reader, &VerifyOptions::default()).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(
            e,
            VerifyError::Sources {
                first: SourceError::Stale { .. },
                more: 0
            }
        ),
        "{text}"
    );
    assert!(text.contains("nc3_classic.nc"), "{text}");
    assert!(
        text.contains(&format!(
            "size changed from {} to {} bytes",
            bytes.len() - 1,
            bytes.len()
        )),
        "{text}"
    );
    assert_eq!(reader.stats().bytes, 0, "nothing fetched");
    // A plain read refuses too, before fetching.
    let e = reader.array("tas").unwrap().read_all_raw().unwrap_err();
    assert!(is_stale(&e), "{e}");
    assert_eq!(reader.stats().bytes, 0);
    // Only the modification time changed.
    bytes.pop();
    std::fs::write(&src, &bytes).unwrap();
    set_mtime(
        &src,
        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000),
    );
    let e = verify(&open(&out), &VerifyOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("modification time changed from"), "{e}");
    assert!(e.contains("to 2001-09-09T01:46:40.000000000Z"), "{e}");
    // Ignoring staleness reads anyway (the bytes are the same).
    let opts = ReadOptions {
        ignore_stale: true,
        ..trusting()
    };
    let reader = vzarr_read::open(out.to_str().unwrap(), opts).unwrap();
    assert!(verify(&reader, &VerifyOptions::default()).unwrap().ok());
    // A source that is gone.
    std::fs::remove_file(&src).unwrap();
    let e = verify(&open(&out), &VerifyOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no longer exists"), "{e}");
}

fn refused(out: &std::path::Path, opts: ReadOptions) -> String {
    match vzarr_read::open(out.to_str().unwrap(), opts) {
        Err(e)
            if matches!(
                e.source_error(),
                Some(SourceError::NotAllowed(_) | SourceError::BadUrl { .. })
            ) =>
        {
            e.to_string()
        }
        Err(e) => panic!("expected a refusal, got {e}"),
        Ok(_) => panic!("expected a refusal"),
    }
}

#[test]
fn urls_outside_the_allowed_prefixes_are_refused_before_fetching() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("archive");
    std::fs::create_dir(&sub).unwrap();
    let src = copy_fixture("nc3_classic.nc", &sub);
    let out = dir.path().join("f.json");
    build(&src, &out, None);
    let good = read_json(&out);
    let key = "tas/c/0/0/0";
    let (off, len) = chunk_ref(&good, key);
    let with_url = |url: &str| {
        let mut v = good.clone();
        v["refs"][key] = json!([url, off, len]);
        let p = dir.path().join("bad.json");
        write_json(&p, &v);
        p
    };
    let parent = sub.display().to_string();
    // The user allows the archive directory; the references record it too.
    let allowing = || ReadOptions {
        allow_prefixes: vec![parent.clone()],
        ..Default::default()
    };
    for opts in [allowing(), trusting()] {
        for (url, want) in [
            (
                "file:///etc/passwd".to_string(),
                "not under an allowed prefix",
            ),
            ("/etc/passwd".to_string(), "not under an allowed prefix"),
            (
                format!("file://{parent}/../../../etc/passwd"),
                "resolves to file:///etc/passwd",
            ),
            (format!("file://{parent}/%2e%2e/x.nc"), "`..`"),
            (format!("{parent}/./nc3_classic.nc"), "`.` or `..`"),
            (
                "s3://another-bucket/nc3_classic.nc".to_string(),
                "not under an allowed prefix",
            ),
            ("relative/nc3_classic.nc".to_string(), "relative"),
        ] {
            let e = refused(&with_url(&url), opts.clone());
            assert!(e.contains(want), "{url}: {e}");
            assert!(e.contains("(array tas)"), "{url}: {e}");
        }
    }
    // Another bucket with a recorded S3 prefix: no request is made (there is no server).
    let mut v = good.clone();
    v["vzarr"]["allowed_prefixes"] =
        json!([format!("file://{parent}/"), "s3://archive-bucket/data/"]);
    v["refs"][key] = json!(["s3://other-bucket/data/nc3_classic.nc", off, len]);
    let p = dir.path().join("bucket.json");
    write_json(&p, &v);
    let e = refused(&p, trusting());
    assert!(e.contains("s3://other-bucket/data/nc3_classic.nc"), "{e}");
    assert!(e.contains("s3://archive-bucket/data"), "{e}");
    // A prefix of a sibling directory does not match.
    let mut v = good.clone();
    v["vzarr"]["allowed_prefixes"] = json!([format!("file://{parent}-other/")]);
    write_json(&p, &v);
    refused(&p, trusting());

    // Nothing allowed: refused, whatever the references record.
    let e = refused(&out, ReadOptions::default());
    assert!(e.contains("no allowed prefixes"), "{e}");
    // No recorded prefixes: what the user allows counts (relative prefixes made absolute).
    let mut v = good.clone();
    v.as_object_mut().unwrap().remove("vzarr");
    let bare = dir.path().join("bare.json");
    write_json(&bare, &v);
    let e = refused(&bare, trusting());
    assert!(e.contains("no allowed prefixes"), "{e}");
    let reader = vzarr_read::open(bare.to_str().unwrap(), allowing()).unwrap();
    assert!(verify(&reader, &VerifyOptions::default()).unwrap().ok());

    // A tampered manifest that records `/` does not widen what the user allows.
    let mut v = good.clone();
    v["vzarr"]["allowed_prefixes"] = json!(["file:///"]);
    v["refs"][key] = json!(["file:///etc/passwd", 0, 10]);
    write_json(&p, &v);
    let e = refused(&p, allowing());
    assert!(e.contains("file:///etc/passwd"), "{e}");
    assert!(e.contains("not under an allowed prefix"), "{e}");
    // A source under what the user allows but outside what the references record.
    let mut v = good.clone();
    v["vzarr"]["allowed_prefixes"] = json!([format!("file://{parent}/sub/")]);
    write_json(&p, &v);
    let e = refused(&p, allowing());
    assert!(
        e.contains("outside the prefixes the references record"),
        "{e}"
    );
}

#[test]
fn malformed_references_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.json");
    std::fs::write(&p, b"{\"version\": 1, \"refs\": {\"zarr.json\": 1}}").unwrap();
    let e = vzarr_read::open(p.to_str().unwrap(), ReadOptions::default())
        .err()
        .unwrap();
    assert!(
        matches!(e, ReadError::Parse(vzarr_read::ParseError::BadKey { .. })),
        "{e}"
    );
    let e = vzarr_read::open(
        dir.path().join("missing.json").to_str().unwrap(),
        ReadOptions::default(),
    )
    .err()
    .unwrap();
    assert!(matches!(e, ReadError::Load { .. }), "{e}");
    // A prefix the user gives that is not a directory or URL prefix we can use.
    let out = dir.path().join("ok.json");
    build(&fixtures().join("nc3_classic.nc"), &out, None);
    let opts = ReadOptions {
        allow_prefixes: vec!["ftp://host/dir/".into()],
        ..Default::default()
    };
    let e = vzarr_read::open(out.to_str().unwrap(), opts).err().unwrap();
    assert!(matches!(e, ReadError::Prefix(_)), "{e}");
    assert!(e.to_string().contains("ftp://host/dir/"), "{e}");
}

/// Combines the sample monthly archive with the planner and writes its references.
fn build_archive(
    out: &std::path::Path,
    concat: vzarr_plan::Concat,
    time_units: Option<&str>,
    files: usize,
) {
    let mut paths: Vec<_> = std::fs::read_dir(fixtures().join("archive"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "nc"))
        .collect();
    paths.sort();
    paths.truncate(files);
    let scanned = paths.iter().map(|p| scan(p)).collect();
    let ds = plan(scanned, concat, time_units);
    vzarr_kerchunk::write_file(&ds, out).unwrap();
}

#[test]
fn verify_passes_on_the_combined_archive() {
    for readers in readers() {
        combined_archive(readers);
    }
}

fn combined_archive(readers: vzarr_verify::SourceReaders) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("archive.json");
    build_archive(&out, vzarr_plan::Concat::Existing("time".into()), None, 12);
    let reader = open(&out);
    assert!(reader.provenance().concat.is_some());
    let r = verify(&reader, &with(readers)).unwrap();
    assert!(r.ok(), "{}\n{:#?}", r.summary(), r.mismatches);
    assert_eq!(r.chunks_checked, r.chunks_total);
    // A sample reads fewer chunks, the same ones for the same seed.
    let opts = VerifyOptions {
        sample: Some(5),
        seed: 1,
        ..with(readers)
    };
    let a = verify(&reader, &opts).unwrap();
    assert!(a.ok() && a.chunks_checked == 5);

    assert!(r.skipped.is_empty(), "{:#?}", r.skipped);

    // Without the provenance block, arrays spread over several files cannot be mapped back
    // to their files: skipped with the reason, not reported as differences.
    let mut bare = read_json(&out);
    bare.as_object_mut().unwrap().remove("vzarr");
    let p = dir.path().join("bare.json");
    write_json(&p, &bare);
    let opts = ReadOptions {
        allow_prefixes: vec![fixtures().join("archive").to_str().unwrap().to_string()],
        ..Default::default()
    };
    let r = verify(
        &vzarr_read::open(p.to_str().unwrap(), opts).unwrap(),
        &with(readers),
    )
    .unwrap();
    assert!(r.ok(), "{:#?}", r.mismatches);
    let tas = r
        .skipped
        .iter()
        .find(|s| s.array == "tas")
        .expect("tas skipped");
    assert!(tas.reason.contains("no concatenation"), "{}", tas.reason);

    // Time re-encoded into other units: compared as instants.
    let out2 = dir.path().join("archive_units.json");
    build_archive(
        &out2,
        vzarr_plan::Concat::Existing("time".into()),
        Some("hours since 1990-01-01"),
        12,
    );
    let r = verify(&open(&out2), &with(readers)).unwrap();
    assert!(r.ok(), "{}\n{:#?}", r.summary(), r.mismatches);
    assert!(r.skipped.is_empty(), "{:#?}", r.skipped);
    // A time value shifted by an hour in the references is caught.
    let mut refs = read_json(&out2);
    let meta: serde_json::Value =
        serde_json::from_str(refs["refs"]["time/zarr.json"].as_str().unwrap()).unwrap();
    assert_eq!(meta["data_type"], "float64");
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = refs["refs"]
        .as_object()
        .unwrap()
        .keys()
        .find(|k| k.starts_with("time/c/"))
        .unwrap()
        .clone();
    let mut raw = b64
        .decode(
            refs["refs"][&key]
                .as_str()
                .unwrap()
                .trim_start_matches("base64:"),
        )
        .unwrap();
    let v = f64::from_le_bytes(raw[40 * 8..41 * 8].try_into().unwrap());
    raw[40 * 8..41 * 8].copy_from_slice(&(v + 1.0).to_le_bytes());
    refs["refs"][&key] = json!(format!("base64:{}", b64.encode(&raw)));
    let p = dir.path().join("archive_shifted.json");
    write_json(&p, &refs);
    let r = verify(&open(&p), &with(readers)).unwrap();
    assert_eq!(r.failed_chunks, 1, "{:#?}", r.mismatches);
    assert_eq!(r.mismatches[0].array, "time");
    assert_eq!(r.mismatches[0].first_index.as_deref(), Some(&[40u64][..]));

    // Stacked along a new dimension.
    let out3 = dir.path().join("stacked.json");
    build_archive(
        &out3,
        vzarr_plan::Concat::New {
            dim: "member".into(),
            labels: None,
        },
        None,
        1,
    );
    let r = verify(&open(&out3), &with(readers)).unwrap();
    assert!(r.ok(), "{}\n{:#?}", r.summary(), r.mismatches);
}

/// A DMR++ sidecar of bes (`../shared/dmrpp`, or `VZARR_DMRPP_DIR`) with its granule and the
/// `_mvs.h5` file of values Hyrax computed (fixtures/dmrpp-companions) side by side: verified
/// by each reader, the arrays in the `_mvs.h5` against that file, Hyrax's renamed ones
/// (`Data_Fields`) at the path its `fullnamepath` gives, and the values the sidecar holds that
/// the granule has no variable for (`eos5_cf_projection`) skipped with the reason.
#[test]
fn sidecar_builds_verify_against_their_granules_and_companions() {
    let data = std::env::var_os("VZARR_DMRPP_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/dmrpp")
        });
    let dir = tempfile::tempdir().unwrap();
    let here = data.join("bes/modules/fileout_netcdf/data");
    let mvs = fixtures().join("dmrpp-companions/modules/fileout_netcdf/data");
    for (from, name) in [
        (&here, "grid_2_2d_sin.h5.dmrpp"),
        (&here, "grid_2_2d_sin.h5"),
        (&mvs, "grid_2_2d_sin.h5_mvs.h5"),
    ] {
        std::fs::copy(from.join(name), dir.path().join(name))
            .unwrap_or_else(|e| panic!("{}: {e}", from.join(name).display()));
    }
    let out = dir.path().join("sin.json");
    build(&dir.path().join("grid_2_2d_sin.h5.dmrpp"), &out, None);
    let reader = open(&out);
    let companions = &reader.dataset().provenance.companions;
    assert_eq!(companions.len(), 1, "{companions:?}");
    for readers in readers() {
        let r = verify(&reader, &with(readers)).unwrap();
        assert!(r.ok(), "{readers:?}: {}\n{:#?}", r.summary(), r.mismatches);
        let skipped: Vec<&str> = r.skipped.iter().map(|s| s.array.as_str()).collect();
        assert_eq!(
            skipped,
            [
                "HDFEOS/GRIDS/SinGrid1/eos5_cf_projection",
                "HDFEOS/GRIDS/SinGrid2/eos5_cf_projection"
            ],
            "{readers:?}: {:?}",
            r.skipped
        );
        assert!(r.values_compared > 40, "{readers:?}: {}", r.summary());
    }
}
