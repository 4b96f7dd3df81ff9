//! Variable-length strings with hostile global heap ids: copies of `fixtures/dtypes.h5` whose
//! `vlen_str` elements (4-byte length, collection address, object index) or heap text are
//! corrupted. A length claiming gigabytes is counted against the size limit before anything
//! is read (the array is left out, naming size and limit); past a limit that lets it through,
//! the heap object's own size refuses it; an address outside the file, a missing object or
//! text that is not UTF-8 give a clear error or a skip naming the dataset; nothing panics or
//! allocates what the file claims.

use std::sync::Arc;

use vzarr_core::VirtualDataset;
use vzarr_hdf5_format::File;
use vzarr_source::{ByteSource, MemSource};

fn fixture() -> (Vec<u8>, usize, u64) {
    let path = crate::fixtures_dir().join("dtypes.h5");
    let data = std::fs::read(&path).unwrap();
    let file = File::open_path(&path).unwrap();
    let oh = file
        .object_header(file.resolve_path("/vlen_str").unwrap())
        .unwrap();
    let ds = file.dataset(&oh).unwrap();
    let (addr, size) = ds.contiguous_extent(&file).unwrap().unwrap();
    assert_eq!(size, 4 * 16, "4 elements of 4 + 8 + 4 bytes");
    (data, addr as usize, file.superblock().base_address)
}

fn scan(data: Vec<u8>, limit: Option<u64>) -> Result<VirtualDataset, vzarr_hdf5::Hdf5Error> {
    let src: Arc<dyn ByteSource> = Arc::new(MemSource::new("mem://dtypes.h5", data));
    let mut o = vzarr_hdf5::ScanOptions::local();
    if let Some(l) = limit {
        o = o.with_max_string_bytes(l);
    }
    vzarr_hdf5::scan(src, &o)
}

fn skipped(ds: &VirtualDataset, path: &str) -> Option<String> {
    ds.skipped
        .iter()
        .find(|s| s.path == path)
        .map(|s| s.reason.clone())
}

#[test]
fn hostile_heap_ids_are_refused_without_allocating_what_they_claim() {
    let (data, at, base) = fixture();
    // Untouched: an array of 4 strings.
    let ds = scan(data.clone(), None).unwrap();
    assert!(ds.arrays["vlen_str"].data_type.is_string());

    // Element 1 claims 2^32 - 1 bytes: counted before it is read, over the 64 MiB default.
    let mut long = data.clone();
    long[at + 16..at + 20].copy_from_slice(&u32::MAX.to_le_bytes());
    let ds = scan(long.clone(), None).unwrap();
    assert!(!ds.arrays.contains_key("vlen_str"));
    let r = skipped(&ds, "vlen_str").unwrap();
    assert!(
        r.contains(&format!("at least {}", 4 + 4 + 3 + 4 + u64::from(u32::MAX)))
            && r.contains("limit of 67108864 bytes"),
        "{r}"
    );
    assert!(
        ds.arrays.contains_key("i16"),
        "the rest of the file is scanned"
    );
    // With no limit, the heap object's own size refuses it: an error naming the dataset.
    let e = scan(long, Some(u64::MAX)).unwrap_err();
    assert_eq!(e.object(), Some("vlen_str"), "{}", e.report());
    assert!(
        e.report().contains("fewer than 4294967295"),
        "{}",
        e.report()
    );

    // The collection address past the end of the file.
    let mut far = data.clone();
    let beyond = data.len() as u64 - base + (1 << 40);
    far[at + 4..at + 12].copy_from_slice(&beyond.to_le_bytes());
    let e = scan(far, None).unwrap_err();
    assert_eq!(e.object(), Some("vlen_str"), "{}", e.report());
    assert!(e.report().contains("global heap"), "{}", e.report());

    // An object index the collection does not hold.
    let mut idx = data.clone();
    idx[at + 12..at + 16].copy_from_slice(&999u32.to_le_bytes());
    let e = scan(idx, None).unwrap_err();
    assert!(
        e.report().contains("no object with index 999"),
        "{}",
        e.report()
    );

    // A length of 0 with any address reads as the empty string (a NULL string), as h5py does.
    let mut null = data.clone();
    null[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
    null[at + 4..at + 12].copy_from_slice(&u64::MAX.to_le_bytes());
    let ds = scan(null, None).unwrap();
    let chunk = match ds.arrays["vlen_str"].manifest.get(0) {
        vzarr_core::ChunkRef::Inline(b) => b.to_vec(),
        other => panic!("{other:?}"),
    };
    let items = vzarr_codec::vlen_utf8::decode(&chunk, 4).unwrap();
    assert_eq!(items, ["", "two", "three", "ünïcødé"]);

    // Text that is not UTF-8: left out, naming the element.
    let mut latin = data.clone();
    let t = latin.windows(5).position(|w| w == b"three").unwrap();
    latin[t] = 0xe9;
    let ds = scan(latin, None).unwrap();
    let r = skipped(&ds, "vlen_str").unwrap();
    assert!(r.contains("at [2]") && r.contains("UTF-8"), "{r}");
}
