//! Object-store byte access against an S3-compatible server: `moto` started on loopback with
//! `$VZARR_INTEROP_PYTHON -m moto.server` (see `support/moto.rs`). Without the variable the
//! test says so and passes; with it, a missing moto is a failure.
//!
//! One test function only: it sets the AWS_* environment variables the S3 client reads.

use std::path::PathBuf;

use rayon::prelude::*;
use vzarr_source::{
    ByteSource, Clients, Memo, ObjectSource, Recorded, SourceError, SourceRecord, SourceStore,
    Stores, list_prefix, locate, open_source,
};
use vzarr_test_support::moto::{interop_python, s3_put, set_s3_env, start_moto};

const BUCKET: &str = "vzarr-source-test";

fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn urls(listed: &[SourceRecord]) -> Vec<&str> {
    listed.iter().map(|o| o.url.as_str()).collect()
}

#[test]
fn object_sources_listings_and_range_reads_on_s3() {
    let Some(python) = interop_python("the vzarr-source S3 test") else {
        return;
    };
    let moto = start_moto(&python);
    // SAFETY: the only test of this binary; nothing else reads the environment concurrently.
    unsafe { set_s3_env(&moto.endpoint) };

    let dir = tempfile::tempdir().unwrap();
    let objects: Vec<(&str, Vec<u8>)> = vec![
        ("data/a.nc", data(10_000, 1)),
        ("data/sub/b.nc", data(300, 2)),
        ("data/sub/deeper/c d.bin", data(7, 3)),
        ("data/z.nc", data(1, 4)),
        ("database/x.nc", data(5, 5)),
        ("other/y.nc", data(6, 6)),
    ];
    let mut uploads = Vec::new();
    for (i, (key, bytes)) in objects.iter().enumerate() {
        let p = dir.path().join(format!("{i}.bin"));
        std::fs::write(&p, bytes).unwrap();
        uploads.push((p, BUCKET.to_string(), key.to_string()));
    }
    s3_put(&python, &moto.endpoint, &[BUCKET], &uploads);
    let url = |key: &str| format!("s3://{BUCKET}/{key}");
    let a = &objects[0].1;

    // HEAD at open, then ranged GETs checked against the size.
    let open = |u: &str| ObjectSource::open(Clients::global(), &locate(u).unwrap());
    let src = open(&url("data/a.nc")).unwrap();
    assert_eq!(src.url(), url("data/a.nc"));
    assert_eq!(src.size(), 10_000);
    assert_eq!(src.read(0..4).unwrap(), a[..4]);
    assert_eq!(src.read(4321..5321).unwrap(), a[4321..5321]);
    assert_eq!(src.read(9_990..10_000).unwrap(), a[9_990..]);
    assert_eq!(src.read(10_000..10_000).unwrap(), &b""[..]);
    // Several ranges, fetched concurrently, in the order asked.
    let got = src.read_ranges(&[5000..5010, 0..3, 9_000..9_500]).unwrap();
    assert_eq!(got[0], a[5000..5010]);
    assert_eq!(got[1], a[..3]);
    assert_eq!(got[2], a[9_000..9_500]);
    let e = src.read(9_995..10_005).unwrap_err();
    assert!(matches!(e, SourceError::OutOfBounds { .. }), "{e}");
    assert!(e.to_string().contains(&url("data/a.nc")), "{e}");
    assert!(src.read(u64::MAX - 1..u64::MAX).is_err());
    let stamp = src.record().clone();
    assert_eq!(stamp.size, 10_000);
    assert!(stamp.mtime_ns.is_some_and(|t| t > 0), "{stamp:?}");
    assert!(
        stamp.etag.as_deref().is_some_and(|e| !e.is_empty()),
        "{stamp:?}"
    );

    // Listing: recursive, whole segments only, sorted, with the stamps a HEAD gives.
    let want_data = [
        url("data/a.nc"),
        url("data/sub/b.nc"),
        url("data/sub/deeper/c d.bin"),
        url("data/z.nc"),
    ];
    for prefix in [url("data/"), url("data")] {
        let listed = list_prefix(&prefix).unwrap();
        assert_eq!(urls(&listed), want_data, "{prefix}");
        for o in &listed {
            assert_eq!(open(&o.url).unwrap().record(), o, "{}", o.url);
        }
    }
    let sizes: Vec<u64> = list_prefix(&url("data/"))
        .unwrap()
        .iter()
        .map(|o| o.size)
        .collect();
    assert_eq!(sizes, [10_000, 300, 7, 1]);
    let all = list_prefix(&format!("s3://{BUCKET}/")).unwrap();
    let mut want_all: Vec<String> = objects.iter().map(|(k, _)| url(k)).collect();
    want_all.sort();
    assert_eq!(urls(&all), want_all);
    assert_eq!(
        urls(&list_prefix(&url("data/sub/deeper/")).unwrap()),
        [url("data/sub/deeper/c d.bin")]
    );
    assert!(list_prefix(&url("nothing/")).unwrap().is_empty());
    let e = list_prefix("s3://no-such-bucket-vzarr/data/").unwrap_err();
    assert!(
        e.to_string().contains("s3://no-such-bucket-vzarr/data/"),
        "{e}"
    );

    // open_source: object-store URLs as ObjectSource, local paths and file:// as LocalFile.
    let s = open_source(&url("data/sub/b.nc")).unwrap();
    assert_eq!(s.url(), url("data/sub/b.nc"));
    assert_eq!(s.read(100..150).unwrap(), objects[1].1[100..150]);
    assert!(s.record().etag.is_some());
    let local: PathBuf = uploads[1].0.clone();
    for name in [
        local.to_str().unwrap().to_string(),
        format!(
            "file://{}",
            vzarr_source::absolute(&local).unwrap().display()
        ),
    ] {
        let s = open_source(&name).unwrap();
        assert!(s.url().starts_with("file:///"), "{}", s.url());
        assert_eq!(s.read(0..300).unwrap(), objects[1].1);
        assert_eq!(s.record().etag, None);
    }

    // Not found: named, recognisable.
    for e in [
        open(&url("data/missing.nc")).unwrap_err(),
        open_source(&url("data/missing.nc")).err().unwrap(),
    ] {
        assert!(matches!(e, SourceError::NotFound { .. }), "{e}");
        assert!(e.is_not_found());
        assert_eq!(
            e.to_string(),
            format!("{}: not found", url("data/missing.nc"))
        );
    }
    let e = open_source("ftp://host/x.nc").err().unwrap();
    assert!(matches!(e, SourceError::BadUrl { .. }), "{e}");
    assert!(e.to_string().contains("unsupported URL scheme"), "{e}");

    // A memoising store: any URL, from rayon workers, each source opened once.
    let reader = Memo::new(Stores::default());
    let local_url = format!(
        "file://{}",
        vzarr_source::absolute(&uploads[0].0).unwrap().display()
    );
    let jobs: Vec<(String, u64, u64)> = (0..64u64)
        .map(|i| {
            let u = if i % 3 == 0 {
                local_url.clone()
            } else {
                url("data/a.nc")
            };
            (u, i * 150, 100 + i)
        })
        .collect();
    jobs.par_iter().for_each(|(u, off, len)| {
        let got = reader.open(u).unwrap().read(*off..*off + *len).unwrap();
        assert_eq!(
            got,
            a[*off as usize..(*off + *len) as usize],
            "{u} {off}+{len}"
        );
    });
    let s1 = reader.open(&url("data/a.nc")).unwrap();
    let s2 = reader.open(&url("data/a.nc")).unwrap();
    assert!(std::sync::Arc::ptr_eq(&s1, &s2));
    assert!(s1.read(9_999..10_001).is_err());
    let e = reader.open(&url("data/missing.nc")).unwrap_err();
    assert!(
        e.is_not_found() && e.to_string().contains("data/missing.nc"),
        "{e}"
    );

    // A replaced object has a new ETag (and size); an already open source keeps its stamp.
    let replaced = dir.path().join("replaced.bin");
    std::fs::write(&replaced, data(20, 9)).unwrap();
    s3_put(
        &python,
        &moto.endpoint,
        &[],
        &[(replaced, BUCKET.into(), "data/a.nc".into())],
    );
    let now = open(&url("data/a.nc")).unwrap().record().clone();
    assert_eq!(now.size, 20);
    assert_ne!(now.etag, stamp.etag);
    assert_eq!(src.record(), &stamp);
    // Reads of the source opened before are refused, not mixed with the new bytes.
    let e = src.read(0..10).unwrap_err();
    assert!(matches!(e, SourceError::Changed { .. }), "{e}");
    assert!(e.to_string().contains(&url("data/a.nc")), "{e}");

    // Opened from a record (a source scanned before): no request at open, reads conditional
    // on the recorded ETag. The old stamp is refused on the first read, not mixed with the new
    // bytes; the current one reads; a record of an object that is not there opens (nothing
    // was asked) and its first read says it is gone.
    for store in [
        &Stores::default() as &dyn SourceStore,
        &Memo::new(Stores::default()),
        &Recorded::new(Stores::default(), [now.clone()]),
    ] {
        let old = store.open_recorded(&stamp).unwrap();
        assert_eq!(old.record(), &stamp);
        let e = old.read(0..10).unwrap_err();
        assert!(matches!(e, SourceError::Changed { .. }), "{e}");
        let cur = store.open_recorded(&now).unwrap();
        assert_eq!(cur.read(0..20).unwrap(), data(20, 9));
        let gone = SourceRecord {
            url: url("data/gone.nc"),
            ..now.clone()
        };
        let e = store.open_recorded(&gone).unwrap().read(0..1).unwrap_err();
        assert!(e.is_not_found(), "{e}");
    }
    // A store holding records opens by URL from them; other URLs as the store below does.
    let recorded = Recorded::new(Stores::default(), [stamp.clone()]);
    let e = recorded
        .open(&url("data/a.nc"))
        .unwrap()
        .read(0..1)
        .unwrap_err();
    assert!(matches!(e, SourceError::Changed { .. }), "{e}");
    assert_eq!(recorded.open(&url("data/sub/b.nc")).unwrap().size(), 300);
    // Without an ETag to make reads conditional, the object is opened with a HEAD as before.
    let no_etag = SourceRecord {
        etag: None,
        ..stamp.clone()
    };
    assert_eq!(
        Stores::default().open_recorded(&no_etag).unwrap().size(),
        20
    );
}
