//! Scanning one file with both scanners and telling every difference: which group or array,
//! which field, both values.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use vzarr_core::{Attributes, ChunkRef, VirtualArray, VirtualDataset};
use vzarr_source::{ByteSource, LocalFile};

/// Counts of what was compared.
#[derive(Debug, Default, Clone)]
pub(crate) struct Stats {
    /// Files scanned by both scanners and compared.
    pub files: usize,
    /// Scans compared (a file may be scanned with several options).
    pub scans: usize,
    pub groups: usize,
    pub arrays: usize,
    /// Manifest entries compared (stored, inline and missing).
    pub chunks: u64,
    /// Of which stored by reference.
    pub referenced: u64,
    /// Of which inline (compact data, re-encoded masked chunks).
    pub inline: u64,
    pub attributes: usize,
    pub skipped: usize,
    /// Files both scanners refuse (compared as both failing).
    pub both_fail: usize,
    /// Arrays whose chunk positions libhdf5 gets wrong (see `libhdf5_misnumbered`), compared
    /// as sets of references.
    pub libhdf5_misnumbered: usize,
    /// Files libhdf5 cannot read (see `libhdf5_cannot_open`), scanned natively only.
    pub libhdf5_refuses: usize,
    /// Differences found.
    pub differences: usize,
    /// Arrays only the native scanner virtualises (the oracle leaves them out for their type:
    /// compound, complex, bitfield, array datatypes; values checked in the interop tests).
    pub native_only: usize,
    /// Arrays both leave out, for their type, with different reasons.
    pub reason_changed: usize,
    /// Enum arrays on which the native scanner adds CF `flag_values`/`flag_meanings`.
    pub enum_attributes: usize,
    /// Differences by design, taken out before the comparison and listed
    /// (`crate::by_design`).
    pub by_design: usize,
}

impl Stats {
    pub(crate) fn add(&mut self, o: &Stats) {
        self.files += o.files;
        self.scans += o.scans;
        self.groups += o.groups;
        self.arrays += o.arrays;
        self.chunks += o.chunks;
        self.referenced += o.referenced;
        self.inline += o.inline;
        self.attributes += o.attributes;
        self.skipped += o.skipped;
        self.both_fail += o.both_fail;
        self.libhdf5_misnumbered += o.libhdf5_misnumbered;
        self.libhdf5_refuses += o.libhdf5_refuses;
        self.differences += o.differences;
        self.native_only += o.native_only;
        self.reason_changed += o.reason_changed;
        self.enum_attributes += o.enum_attributes;
        self.by_design += o.by_design;
    }
}

/// Oracle reasons for types the native scanner maps since issue 16 (the libhdf5 scanner's
/// words for them).
const NEWLY_MAPPED: [&str; 5] = [
    "unsupported data type (compound type)",
    "unsupported data type (reference type)",
    "unsupported data type (array type)",
    "unsupported data type (bitfield type)",
    "unsupported data type (type class H5T_COMPLEX)",
];

/// What the native scanner does beyond the oracle, by design (issue 16): for `path` in a
/// file, the oracle's reason and what the native scanner made of it.
#[derive(Debug)]
pub(crate) struct Beyond {
    pub(crate) native_only: Vec<(String, String)>,
    pub(crate) reason_changed: Vec<(String, String, String)>,
    pub(crate) enum_attributes: Vec<String>,
    /// Left-out attributes of the arrays in `native_only`, set apart.
    pub(crate) attributes_of_added: usize,
    /// Attributes holding object references (`path@name`), read natively as `ref` objects.
    pub(crate) reference_attributes: Vec<String>,
}

/// Arrays the oracle leaves out take no phony dimension names there, so the native scan of
/// the same file numbers its `phony_dim_N` differently. Where the renaming between the two is
/// one consistent bijection over every array both have, `b`'s names are put in `a`'s
/// numbering; otherwise nothing changes and the names show as differences.
fn renumber_phony(a: &VirtualDataset, b: &mut VirtualDataset) {
    use std::collections::BTreeMap;
    let mut fwd: BTreeMap<String, String> = BTreeMap::new();
    let mut back: BTreeMap<String, String> = BTreeMap::new();
    for (k, y) in &b.arrays {
        let Some(x) = a.arrays.get(k) else { continue };
        if x.dimension_names.len() != y.dimension_names.len() {
            return;
        }
        for (n, o) in y.dimension_names.iter().zip(&x.dimension_names) {
            let phony = |s: &str| s.starts_with("phony_dim_");
            if phony(n) != phony(o) || (!phony(n) && n != o) {
                return;
            }
            if !phony(n) {
                continue;
            }
            if fwd.entry(n.clone()).or_insert_with(|| o.clone()) != o
                || back.entry(o.clone()).or_insert_with(|| n.clone()) != n
            {
                return;
            }
        }
    }
    for y in b.arrays.values_mut() {
        for n in &mut y.dimension_names {
            if let Some(o) = fwd.get(n) {
                *n = o.clone();
            }
        }
    }
}

/// Takes out of `a` (oracle) and `b` (native) exactly what the native scanner does beyond
/// the oracle by design, so that everything else can be compared equal: arrays the oracle
/// leaves out with a reason in [`NEWLY_MAPPED`] that the native scanner virtualises (or
/// leaves out with a more precise reason), and the CF `flag_values`/`flag_meanings` the
/// native scanner adds to enum arrays where the oracle has neither attribute.
pub(crate) fn take_beyond(a: &mut VirtualDataset, b: &mut VirtualDataset) -> Beyond {
    let mut out = Beyond {
        native_only: Vec::new(),
        reason_changed: Vec::new(),
        enum_attributes: Vec::new(),
        attributes_of_added: 0,
        reference_attributes: Vec::new(),
    };
    let newly: Vec<(String, String)> = a
        .skipped
        .iter()
        .filter(|s| NEWLY_MAPPED.iter().any(|r| s.reason.starts_with(r)))
        .map(|s| (s.path.clone(), s.reason.clone()))
        .collect();
    for (path, reason) in newly {
        let key = path.trim_start_matches('/').to_string();
        if b.arrays.shift_remove(&key).is_some() || b.arrays.shift_remove(&path).is_some() {
            out.native_only.push((path.clone(), reason.clone()));
            a.skipped.retain(|s| s.path != path);
            // The attributes of an array the oracle left out were never looked at by the
            // oracle: those the native scanner leaves out belong to the native-only array.
            let (p1, p2) = (format!("{path}@"), format!("{key}@"));
            b.skipped
                .retain(|s| !(s.path.starts_with(&p1) || s.path.starts_with(&p2)));
        } else if let Some(i) = b.skipped.iter().position(|s| s.path == path)
            && b.skipped[i].reason != reason
        {
            out.reason_changed
                .push((path.clone(), reason.clone(), b.skipped[i].reason.clone()));
            b.skipped[i].reason = reason;
        }
    }
    if !out.native_only.is_empty() {
        renumber_phony(a, b);
        // The native scanner reads the attributes of the arrays it adds, and reports the ones
        // it leaves out (`path@name`); the oracle never got that far.
        let added: Vec<String> = out
            .native_only
            .iter()
            .map(|(p, _)| format!("{p}@"))
            .collect();
        let before = b.skipped.len();
        b.skipped
            .retain(|s| !added.iter().any(|p| s.path.starts_with(p.as_str())));
        out.attributes_of_added = before - b.skipped.len();
    }
    for (k, y) in b.arrays.iter_mut() {
        let Some(x) = a.arrays.get(k) else { continue };
        if !x.attributes.contains_key("flag_values")
            && !x.attributes.contains_key("flag_meanings")
            && y.attributes.contains_key("flag_values")
            && y.attributes.contains_key("flag_meanings")
            && (y.data_type.is_signed_int() || y.data_type.is_unsigned_int())
        {
            y.attributes.remove("flag_values");
            y.attributes.remove("flag_meanings");
            out.enum_attributes.push(k.clone());
        }
        // The enum's members in the netCDF view, which only the native scanner records.
        let oracle_has = x
            .attributes
            .get(vzarr_core::netcdf::NETCDF_KEY)
            .is_some_and(|v| v.get("enum").is_some());
        if !oracle_has
            && let Some(serde_json::Value::Object(view)) =
                y.attributes.get_mut(vzarr_core::netcdf::NETCDF_KEY)
        {
            view.remove("enum");
        }
    }
    reference_attributes(a, b, &mut out);
    // The attributes netCDF-C skips (of enum types not committed), which only the native
    // scanner records.
    let views = b
        .arrays
        .values_mut()
        .map(|x| &mut x.attributes)
        .chain(b.groups.values_mut().map(|g| &mut g.attributes));
    for attrs in views {
        let key = vzarr_core::netcdf::NETCDF_KEY;
        if let Some(serde_json::Value::Object(view)) = attrs.get_mut(key) {
            view.shift_remove("attributes_not_shown");
            if view.is_empty() {
                attrs.shift_remove(key);
            }
        }
    }
    out
}

/// Takes out the attributes holding object references, which the native scanner reads as
/// `ref` objects (registering the `ref` convention) and the oracle leaves out.
fn reference_attributes(a: &mut VirtualDataset, b: &mut VirtualDataset, out: &mut Beyond) {
    let refs: Vec<(String, String)> = a
        .skipped
        .iter()
        .filter(|s| s.reason.contains("attribute of reference type"))
        .filter_map(|s| s.path.split_once('@'))
        .map(|(p, n)| (p.trim_start_matches('/').to_string(), n.to_string()))
        .collect();
    for (node, name) in refs {
        let attrs = match b.arrays.get_mut(&node) {
            Some(arr) => &mut arr.attributes,
            None => match b.groups.get_mut(&node) {
                Some(g) => &mut g.attributes,
                None => continue,
            },
        };
        if attrs.shift_remove(&name).is_some() {
            let full = format!("{node}@{name}");
            a.skipped.retain(|s| s.path.trim_start_matches('/') != full);
            out.reference_attributes.push(full);
        }
    }
    // The conventions registered for what the oracle does not read.
    let oracle_has = |p: &str| {
        a.arrays
            .get(p)
            .map(|x| x.attributes.contains_key("zarr_conventions"))
            .or_else(|| {
                a.groups
                    .get(p)
                    .map(|g| g.attributes.contains_key("zarr_conventions"))
            })
            .unwrap_or(false)
    };
    let drop: Vec<String> = b
        .arrays
        .iter()
        .filter(|(_, y)| y.attributes.contains_key("zarr_conventions"))
        .map(|(p, _)| p.clone())
        .chain(
            b.groups
                .iter()
                .filter(|(_, g)| g.attributes.contains_key("zarr_conventions"))
                .map(|(p, _)| p.clone()),
        )
        .filter(|p| !oracle_has(p))
        .collect();
    for p in drop {
        if let Some(y) = b.arrays.get_mut(&p) {
            y.attributes.shift_remove("zarr_conventions");
        } else if let Some(g) = b.groups.get_mut(&p) {
            g.attributes.shift_remove("zarr_conventions");
        }
    }
}

/// How the native scanner reads the file's bytes in one comparison.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bytes {
    /// [`vzarr_hdf5::ScanOptions::local`].
    Local,
    /// No head, 512-byte blocks, 4 KiB of cache: every structure takes the miss and
    /// prefetch paths of the block cache.
    TinyCache,
}

/// The libhdf5 scanner's result, or its error as text.
pub(crate) fn oracle(path: &Path, split: Option<u64>) -> Result<VirtualDataset, String> {
    let o = vzarr_hdf5_oracle::ScanOptions {
        split_contiguous_bytes: split,
    };
    vzarr_hdf5_oracle::scan_file(path, &o).map_err(|e| e.to_string())
}

/// The native scanner's result, or its error as text.
pub(crate) fn native(
    path: &Path,
    split: Option<u64>,
    bytes: Bytes,
) -> Result<VirtualDataset, String> {
    let src: Arc<dyn ByteSource> = Arc::new(LocalFile::open(path).map_err(|e| e.to_string())?);
    let mut o = vzarr_hdf5::ScanOptions::local().with_split_contiguous_bytes(split);
    if let Bytes::TinyCache = bytes {
        o.head_bytes = 0;
        o.block_size = 512;
        o.cache_capacity = 4096;
        o.cache_beyond_head = true;
    }
    vzarr_hdf5::scan(src, &o).map_err(|e| e.report())
}

fn short(v: &impl std::fmt::Debug) -> String {
    let s = format!("{v:?}");
    if s.len() > 300 {
        format!("{}... ({} chars)", &s[..300], s.len())
    } else {
        s
    }
}

fn diff_attributes(what: &str, a: &Attributes, b: &Attributes, out: &mut Vec<String>) {
    let ka: Vec<&String> = a.keys().collect();
    let kb: Vec<&String> = b.keys().collect();
    if ka != kb {
        out.push(format!(
            "{what}: attribute names (in order): oracle {ka:?}, native {kb:?}"
        ));
    }
    for (k, va) in a {
        if let Some(vb) = b.get(k)
            && va != vb
        {
            out.push(format!(
                "{what}: attribute {k:?}: oracle {}, native {}",
                short(va),
                short(vb)
            ));
        }
    }
}

fn chunk_text(r: &ChunkRef) -> String {
    match r {
        ChunkRef::Missing => "missing".into(),
        ChunkRef::Inline(b) => format!("inline {} bytes {:?}", b.len(), &b[..b.len().min(16)]),
        ChunkRef::Range {
            source,
            offset,
            length,
        } => format!("{source} [{offset}, +{length}]"),
    }
}

fn diff_array(
    path: &str,
    a: &VirtualArray,
    b: &VirtualArray,
    as_sets: bool,
    out: &mut Vec<String>,
) {
    let w = format!("array {path}");
    let mut field = |name: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{w}: {name}: oracle {x}, native {y}"));
        }
    };
    field("data type", short(&a.data_type), short(&b.data_type));
    field("endian", short(&a.endian), short(&b.endian));
    field("fill value", short(&a.fill_value), short(&b.fill_value));
    field("codecs", short(&a.codecs), short(&b.codecs));
    field(
        "dimension names",
        short(&a.dimension_names),
        short(&b.dimension_names),
    );
    field("chunk grid", short(&a.grid), short(&b.grid));
    diff_attributes(&w, &a.attributes, &b.attributes, out);
    let (ma, mb) = (&a.manifest, &b.manifest);
    if ma.len() != mb.len() {
        out.push(format!(
            "{w}: manifest: oracle {} chunks, native {}",
            ma.len(),
            mb.len()
        ));
        return;
    }
    if as_sets {
        // libhdf5 puts some chunks at wrong positions (some past the extent, dropped): every
        // reference it gives must be in the native manifest; the native positions are
        // checked against the values libhdf5 reads (`crate::raw::check_chunk_positions`).
        let sb: BTreeSet<String> = mb.iter().map(|r| chunk_text(&r)).collect();
        let missing: Vec<String> = ma
            .iter()
            .filter(|r| !matches!(r, ChunkRef::Missing))
            .map(|r| chunk_text(&r))
            .filter(|t| !sb.contains(t))
            .collect();
        if !missing.is_empty() {
            out.push(format!(
                "{w}: references of the oracle not in the native manifest: {missing:?}"
            ));
        }
        return;
    }
    let mut shown = 0;
    let mut count = 0;
    for i in 0..ma.len() {
        let (x, y) = (ma.get(i), mb.get(i));
        if x != y {
            count += 1;
            if shown < 5 {
                shown += 1;
                out.push(format!(
                    "{w}: chunk {:?}: oracle {}, native {}",
                    a.grid.chunk_index(i as u64),
                    chunk_text(&x),
                    chunk_text(&y)
                ));
            }
        }
    }
    if count > shown {
        out.push(format!("{w}: ... {} more chunks differ", count - shown));
    }
}

/// Every difference between two scans of one file, readable.
pub(crate) fn differences(
    a: &VirtualDataset,
    b: &VirtualDataset,
    misnumbered: &BTreeSet<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    let ga: Vec<&String> = a.groups.keys().collect();
    let gb: Vec<&String> = b.groups.keys().collect();
    if ga != gb {
        out.push(format!("groups: oracle {ga:?}, native {gb:?}"));
    }
    for (k, g) in &a.groups {
        if let Some(h) = b.groups.get(k) {
            diff_attributes(
                &format!("group {k:?}"),
                &g.attributes,
                &h.attributes,
                &mut out,
            );
        }
    }
    let aa: Vec<&String> = a.arrays.keys().collect();
    let ab: Vec<&String> = b.arrays.keys().collect();
    if aa != ab {
        out.push(format!("arrays: oracle {aa:?}, native {ab:?}"));
    }
    for (k, x) in &a.arrays {
        if let Some(y) = b.arrays.get(k) {
            diff_array(k, x, y, misnumbered.contains(k), &mut out);
        }
    }
    if a.skipped != b.skipped {
        let n = a.skipped.len().max(b.skipped.len());
        for i in 0..n {
            let (x, y) = (a.skipped.get(i), b.skipped.get(i));
            if x != y {
                out.push(format!("skipped[{i}]: oracle {x:?}, native {y:?}"));
            }
        }
    }
    if a.unlimited_dims != b.unlimited_dims {
        out.push(format!(
            "unlimited dims: oracle {:?}, native {:?}",
            a.unlimited_dims, b.unlimited_dims
        ));
    }
    if a.provenance != b.provenance {
        out.push("provenance differs".into());
    }
    out
}

/// Counts what two equal scans hold.
pub(crate) fn count(ds: &VirtualDataset, st: &mut Stats) {
    st.scans += 1;
    st.groups += ds.groups.len();
    st.arrays += ds.arrays.len();
    st.skipped += ds.skipped.len();
    st.attributes += ds
        .groups
        .values()
        .map(|g| g.attributes.len())
        .sum::<usize>();
    for a in ds.arrays.values() {
        st.attributes += a.attributes.len();
        let s = a.manifest.stats();
        st.chunks += a.manifest.len() as u64;
        st.referenced += s.referenced;
        st.inline += s.inline;
    }
}

/// Compares the two scans of `path` (with `split`, native bytes read as `bytes`); returns the
/// differences, already printed, and adds to `st`. Both failing counts as agreement.
pub(crate) fn compare(
    path: &Path,
    split: Option<u64>,
    bytes: Bytes,
    st: &mut Stats,
) -> Vec<String> {
    let misnumbered = crate::libhdf5_misnumbered(path);
    // The native scan goes first: a file with a hard-link cycle would send the libhdf5
    // scanner into unbounded recursion (see `oracle_would_recurse`).
    let b = native(path, split, bytes);
    if let Ok(ds) = &b
        && crate::oracle_would_recurse(ds)
    {
        println!(
            "note: {}: hard-link cycle; the libhdf5 scanner would recurse without end, \
             compared with the native scan only",
            path.display()
        );
        return Vec::new();
    }
    let mut a = oracle(path, split);
    let mut b = b;
    if let (Ok(x), Ok(y)) = (&mut a, &mut b) {
        let beyond = take_beyond(x, y);
        for (p, reason) in &beyond.native_only {
            println!("native only: {}: {p} (oracle: {reason})", path.display());
        }
        for (p, reason, native) in &beyond.reason_changed {
            println!(
                "left out by both: {}: {p} (oracle: {reason}; native: {native})",
                path.display()
            );
        }
        st.native_only += beyond.native_only.len();
        st.reason_changed += beyond.reason_changed.len();
        st.enum_attributes += beyond.enum_attributes.len();
    }
    let diffs = match (&a, &b) {
        (Ok(x), Ok(y)) => {
            let (mut x, mut y) = (x.clone(), y.clone());
            let listed = crate::by_design::reconcile(&mut x, &mut y);
            if !listed.is_empty() && split.is_none() && matches!(bytes, Bytes::Local) {
                println!("by design, {}:", path.display());
                for l in &listed {
                    println!("  {l}");
                }
            }
            st.by_design += listed.len();
            let (x, y) = (&x, &y);
            let mut d = differences(x, y, &misnumbered);
            if d.is_empty() {
                count(x, st);
                for p in misnumbered.iter().filter(|p| y.arrays.contains_key(*p)) {
                    st.libhdf5_misnumbered += 1;
                    let checked = crate::raw::check_chunk_positions(path, p, &y.arrays[p]);
                    assert!(checked > 0, "{}: {p}: no chunk checked", path.display());
                }
                if misnumbered.is_empty() {
                    let kx = vzarr_kerchunk::to_bytes(x).map_err(|e| e.to_string());
                    let ky = vzarr_kerchunk::to_bytes(y).map_err(|e| e.to_string());
                    if kx != ky {
                        d.push("kerchunk bytes differ".into());
                    }
                }
            }
            d
        }
        (Err(_), Err(_)) => {
            st.both_fail += 1;
            Vec::new()
        }
        (Ok(_), Err(e)) => vec![format!("native fails, oracle scans: {e}")],
        (Err(e), Ok(y)) if crate::libhdf5_cannot_open(path, e) => {
            println!(
                "note: {}: libhdf5 cannot open a dataset with an unlimited dimension in a file \
                 with lengths of fewer than 8 bytes; native scan only",
                path.display()
            );
            st.libhdf5_refuses += 1;
            count(y, st);
            Vec::new()
        }
        (Err(e), Ok(_)) => vec![format!("oracle fails ({e}), native scans")],
    };
    if !diffs.is_empty() {
        println!(
            "DIFFERENCES in {} (split {split:?}, {bytes:?}):",
            path.display()
        );
        for d in &diffs {
            println!("  {d}");
        }
    }
    st.differences += diffs.len();
    diffs
}
