//! Compares what this crate reads with what libhdf5 reports, object by object.

use std::collections::HashMap;
use std::path::Path;

use vzarr_hdf5_format::{
    ByteOrder, ChunkIndex, DataspaceKind, Datatype, Error, File, FillStatus, Layout, LinkTarget,
    ObjectKind, TypeClass, UNLIMITED, VlenKind,
};

use crate::lib5::{self, LibLink};

/// Counts of what was compared.
#[derive(Debug, Default, Clone)]
pub(crate) struct Stats {
    pub files: usize,
    pub objects: usize,
    pub links: usize,
    pub datasets: usize,
    pub chunks: usize,
    pub attributes: usize,
    pub attribute_values: usize,
    pub vlen_strings: usize,
    pub references: usize,
    pub fill_values: usize,
    /// Objects libhdf5 itself cannot open (read by this crate without error).
    pub oracle_unreadable: usize,
    /// Unfiltered chunks whose bytes were compared with the values libhdf5 reads.
    pub chunks_data_checked: usize,
}

impl Stats {
    pub(crate) fn add(&mut self, o: &Stats) {
        self.files += o.files;
        self.objects += o.objects;
        self.links += o.links;
        self.datasets += o.datasets;
        self.chunks += o.chunks;
        self.attributes += o.attributes;
        self.attribute_values += o.attribute_values;
        self.vlen_strings += o.vlen_strings;
        self.references += o.references;
        self.fill_values += o.fill_values;
        self.oracle_unreadable += o.oracle_unreadable;
        self.chunks_data_checked += o.chunks_data_checked;
    }
}

/// libhdf5's class number of one of our datatypes.
pub(crate) fn h5t_class(t: &Datatype) -> i32 {
    match &t.class {
        TypeClass::FixedPoint { .. } => 0,
        TypeClass::FloatingPoint { .. } => 1,
        TypeClass::Time { .. } => 2,
        TypeClass::String { .. } => 3,
        TypeClass::Bitfield { .. } => 4,
        TypeClass::Opaque { .. } => 5,
        TypeClass::Compound { .. } => 6,
        TypeClass::Reference { .. } => 7,
        TypeClass::Enum { .. } => 8,
        TypeClass::VariableLength {
            kind: VlenKind::String { .. },
            ..
        } => 3,
        TypeClass::VariableLength { .. } => 9,
        TypeClass::Array { .. } => 10,
        TypeClass::Complex { .. } => 11,
    }
}

fn order_of(t: &Datatype) -> Option<i32> {
    let o = match &t.class {
        TypeClass::FixedPoint { order, .. }
        | TypeClass::FloatingPoint { order, .. }
        | TypeClass::Bitfield { order, .. } => *order,
        TypeClass::Enum { base, .. } => return order_of(base),
        _ => return None,
    };
    Some(match o {
        ByteOrder::LittleEndian => 0,
        ByteOrder::BigEndian => 1,
        ByteOrder::Vax => 2,
    })
}

fn is_fixed_size(t: &Datatype) -> bool {
    match &t.class {
        TypeClass::VariableLength { .. } | TypeClass::Reference { .. } => false,
        TypeClass::Compound { members } => members.iter().all(|m| is_fixed_size(&m.datatype)),
        TypeClass::Array { base, .. }
        | TypeClass::Enum { base, .. }
        | TypeClass::Complex { base } => is_fixed_size(base),
        _ => true,
    }
}

/// Compares one file; panics with the file and object named on the first difference.
pub(crate) fn compare_file(path: &Path) -> Stats {
    let name = path.display().to_string();
    let lib = lib5::walk(path).unwrap_or_else(|e| panic!("{name}: libhdf5 cannot open: {e}"));
    let file =
        File::open_path(path).unwrap_or_else(|e| panic!("{name}: cannot open: {}", e.report()));
    let base = file.superblock().base_address;
    let mut st = Stats {
        files: 1,
        ..Default::default()
    };
    let ours_paths = file
        .object_paths()
        .unwrap_or_else(|e| panic!("{name}: object_paths: {}", e.report()));
    assert!(
        ours_paths.errors.is_empty(),
        "{name}: walk errors {:?}",
        ours_paths.errors
    );
    let want: HashMap<u64, String> = lib5::ovisit_paths(path)
        .into_iter()
        .map(|(a, p)| (a + base, p))
        .collect();
    assert_eq!(
        ours_paths.by_address, want,
        "{name}: object paths (H5Ovisit3)"
    );
    assert_eq!(want.len(), lib.len(), "{name}: object count");
    for obj in &lib {
        let ctx = format!("{name}:{}", obj.path);
        st.objects += 1;
        let addr = file
            .resolve_path(&obj.path)
            .unwrap_or_else(|e| panic!("{ctx}: resolve: {}", e.report()));
        assert_eq!(addr, obj.addr + base, "{ctx}: resolve_path");
        let oh = file
            .object_header(addr)
            .unwrap_or_else(|e| panic!("{ctx}: header: {}", e.report()));
        let kind = match file.object_kind(&oh) {
            ObjectKind::Group => 0,
            ObjectKind::Dataset => 1,
            ObjectKind::NamedDatatype => 2,
            ObjectKind::Other => 3,
        };
        assert_eq!(kind, obj.kind, "{ctx}: object kind");
        if let Some(ll) = &obj.links {
            let ours = file
                .links(&oh)
                .unwrap_or_else(|e| panic!("{ctx}: links: {}", e.report()));
            let ours: Vec<(String, LibLink)> = ours
                .into_iter()
                .map(|l| {
                    let t = match l.target {
                        LinkTarget::Hard(a) => LibLink::Hard(a - base),
                        LinkTarget::Soft(s) => LibLink::Soft(s),
                        LinkTarget::External { file, path } => LibLink::External(file, path),
                        LinkTarget::UserDefined { .. } => LibLink::Other,
                    };
                    (l.name, t)
                })
                .collect();
            assert_eq!(&ours, ll, "{ctx}: links");
            st.links += ll.len();
            let in_order: Vec<String> = file
                .links_in_file_order(&oh)
                .unwrap_or_else(|e| panic!("{ctx}: links: {}", e.report()))
                .into_iter()
                .map(|l| l.name)
                .collect();
            assert_eq!(
                Some(&in_order),
                obj.file_order.as_ref(),
                "{ctx}: links in creation order (H5_INDEX_CRT_ORDER)"
            );
        }
        if obj.attrs.as_ref().is_err_and(|e| e == "cannot open") {
            // libhdf5 cannot open it (its bug, e.g. an extensible array in a file with 4-byte
            // lengths): this crate must still read it all.
            println!("note: libhdf5 cannot open {ctx}; read here without the oracle");
            file.attributes(&oh)
                .unwrap_or_else(|e| panic!("{ctx}: {}", e.report()));
            if kind == 1 {
                let ds = file
                    .dataset(&oh)
                    .unwrap_or_else(|e| panic!("{ctx}: {}", e.report()));
                let mut n = 0;
                file.visit_chunks::<Error>(&ds, |_| {
                    n += 1;
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{ctx}: {}", e.report()));
                st.chunks += n;
            }
            st.oracle_unreadable += 1;
            continue;
        }
        compare_attributes(&file, &oh, obj, &ctx, &mut st);
        if let Some(d) = &obj.dataset {
            let d = d
                .as_ref()
                .unwrap_or_else(|e| panic!("{ctx}: libhdf5 dataset: {e}"));
            compare_dataset(path, &obj.path, &file, &oh, d, &ctx, &mut st);
        }
    }
    st
}

fn compare_attributes(
    file: &File,
    oh: &vzarr_hdf5_format::ObjectHeader,
    obj: &lib5::LibObject,
    ctx: &str,
    st: &mut Stats,
) {
    let lib = obj
        .attrs
        .as_ref()
        .unwrap_or_else(|e| panic!("{ctx}: libhdf5 attributes: {e}"));
    let ours = file
        .attributes(oh)
        .unwrap_or_else(|e| panic!("{ctx}: attributes: {}", e.report()));
    let ln: Vec<&str> = lib.iter().map(|a| a.name.as_str()).collect();
    let on: Vec<&str> = ours.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(on, ln, "{ctx}: attribute names in order");
    let sizes = vzarr_hdf5_format::Sizes {
        offset: file.superblock().size_of_offsets,
        length: file.superblock().size_of_lengths,
        base: file.superblock().base_address,
    };
    for (a, l) in ours.iter().zip(lib) {
        let actx = format!("{ctx}@{}", a.name);
        st.attributes += 1;
        assert_eq!(h5t_class(&a.datatype), l.class, "{actx}: class");
        assert_eq!(
            a.dataspace.num_elements().unwrap(),
            if a.dataspace.kind == DataspaceKind::Null {
                0
            } else {
                l.npoints
            },
            "{actx}: element count"
        );
        if is_fixed_size(&a.datatype) {
            assert_eq!(a.datatype.size as usize, l.size, "{actx}: size");
        }
        if let Some(raw) = &l.raw {
            assert_eq!(&a.value[..], &raw[..], "{actx}: raw value");
            st.attribute_values += 1;
        }
        if let Some(strings) = &l.strings {
            let es = a.datatype.storage_size(sizes) as usize;
            let got: Vec<Option<Vec<u8>>> = file
                .read_vlens(&a.value, es, 1)
                .unwrap_or_else(|err| panic!("{actx}: vlen: {}", err.report()))
                .into_iter()
                .map(|b| {
                    // libhdf5 stops at the first NUL.
                    let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
                    Some(b[..end].to_vec())
                })
                .collect();
            let want: Vec<Option<Vec<u8>>> = strings
                .iter()
                .map(|s| Some(s.clone().unwrap_or_default()))
                .collect();
            let got: Vec<Option<Vec<u8>>> = got
                .into_iter()
                .map(|s| Some(s.unwrap_or_default()))
                .collect();
            assert_eq!(got, want, "{actx}: vlen strings");
            st.vlen_strings += strings.len();
        }
        if let Some(lists) = &l.ref_lists {
            let refs = file
                .references(&a.datatype, &a.value)
                .unwrap_or_else(|e| panic!("{actx}: references: {}", e.report()));
            let got: Vec<Vec<u64>> = refs
                .iter()
                .map(|v| {
                    v.iter()
                        .map(|r| r.as_ref().map_or(0, |r| r.object - sizes.base))
                        .collect()
                })
                .collect();
            assert_eq!(&got, lists, "{actx}: references");
            st.references += lists.iter().map(Vec::len).sum::<usize>();
        }
    }
}

fn compare_dataset(
    path: &Path,
    obj_path: &str,
    file: &File,
    oh: &vzarr_hdf5_format::ObjectHeader,
    l: &lib5::LibDataset,
    ctx: &str,
    st: &mut Stats,
) {
    let ds = file
        .dataset(oh)
        .unwrap_or_else(|e| panic!("{ctx}: dataset: {}", e.report()));
    st.datasets += 1;
    // Dataspace.
    match ds.dataspace.kind {
        DataspaceKind::Null => assert_eq!(l.shape, None, "{ctx}: null dataspace"),
        _ => {
            assert_eq!(Some(&ds.dataspace.dims), l.shape.as_ref(), "{ctx}: shape");
            // libhdf5 2.2 reads an unlimited maximum stored in fewer than 8 bytes as that many
            // bytes of ones; the specification (and this crate) say unlimited.
            let ones = match file.superblock().size_of_lengths {
                8 => UNLIMITED,
                n => (1u64 << (8 * u32::from(n))) - 1,
            };
            let lib_max: Option<Vec<u64>> = l.max.as_ref().map(|m| {
                m.iter()
                    .map(|&d| if d == ones { UNLIMITED } else { d })
                    .collect()
            });
            assert_eq!(
                Some(ds.dataspace.max_dims_or_dims()),
                lib_max.as_deref(),
                "{ctx}: max dims"
            );
        }
    }
    // Datatype.
    assert_eq!(h5t_class(&ds.datatype), l.class, "{ctx}: type class");
    if is_fixed_size(&ds.datatype) {
        assert_eq!(ds.datatype.size as usize, l.size, "{ctx}: type size");
    }
    if let Some(o) = order_of(&ds.datatype) {
        assert_eq!(o, l.order, "{ctx}: byte order");
    }
    if let TypeClass::FixedPoint { signed, .. } = ds.datatype.class {
        assert_eq!(i32::from(signed), l.sign, "{ctx}: sign");
    }
    // Layout.
    let layout_class = match &ds.layout.layout {
        Layout::Compact { .. } => 0,
        Layout::Contiguous { .. } => 1,
        Layout::Chunked(_) => 2,
        Layout::Virtual { .. } => 3,
    };
    assert_eq!(layout_class, l.layout, "{ctx}: layout class");
    // Filters.
    let ours_f: Vec<(i32, u32, Vec<u32>)> = ds
        .filters
        .as_ref()
        .map(|p| {
            p.filters
                .iter()
                .map(|f| (i32::from(f.id), u32::from(f.flags), f.client_data.clone()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(ours_f, l.filters, "{ctx}: filters");
    // Fill value.
    let status = match ds.fill_value.status {
        FillStatus::Undefined => 0,
        FillStatus::Default => 1,
        FillStatus::UserDefined => 2,
    };
    assert_eq!(status, l.fill_status, "{ctx}: fill value status");
    if let Some(f) = &l.fill {
        assert_eq!(
            ds.fill_value.value.as_deref(),
            Some(&f[..]),
            "{ctx}: fill value"
        );
        st.fill_values += 1;
    }
    assert_eq!(
        i32::from(ds.external_files.unwrap_or(0)),
        l.external,
        "{ctx}: external files"
    );
    match &ds.layout.layout {
        Layout::Contiguous { .. } if l.external == 0 => {
            let ext = ds.contiguous_extent(file).unwrap();
            assert_eq!(ext.map(|e| e.0), l.offset, "{ctx}: contiguous offset");
            if let Some((_, size)) = ext {
                assert_eq!(size, l.storage_size, "{ctx}: contiguous size");
            }
        }
        Layout::Compact { data } => {
            assert_eq!(data.len() as u64, l.storage_size, "{ctx}: compact size");
        }
        Layout::Chunked(ch) => compare_chunks(path, obj_path, file, &ds, ch, l, ctx, st),
        _ => {}
    }
}

#[allow(clippy::too_many_arguments)]
fn compare_chunks(
    path: &Path,
    obj_path: &str,
    file: &File,
    ds: &vzarr_hdf5_format::Dataset,
    ch: &vzarr_hdf5_format::ChunkedLayout,
    l: &lib5::LibDataset,
    ctx: &str,
    st: &mut Stats,
) {
    assert_eq!(Some(&ch.chunk_dims), l.chunk.as_ref(), "{ctx}: chunk shape");
    let idx = match ch.index {
        ChunkIndex::BTreeV1 => 0,
        ChunkIndex::SingleChunk { .. } => 1,
        ChunkIndex::Implicit => 2,
        ChunkIndex::FixedArray { .. } => 3,
        ChunkIndex::ExtensibleArray { .. } => 4,
        ChunkIndex::BTreeV2 { .. } => 5,
    };
    assert_eq!(Some(idx), l.index_type, "{ctx}: chunk index type");
    let mut ours: Vec<(Vec<u64>, u32, u64, u64)> = Vec::new();
    file.visit_chunks::<Error>(ds, |c| {
        let off: Vec<u64> = c
            .scaled
            .iter()
            .zip(&ch.chunk_dims)
            .map(|(s, d)| s * d)
            .collect();
        ours.push((off, c.filter_mask, c.address, c.size));
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{ctx}: visit_chunks: {}", e.report()));
    // libhdf5 2.2 numbers extensible-array chunks wrongly when the unlimited dimension is not
    // the first: compare those as sets of (address, size, mask), the offsets separately.
    let unlim_first = ds
        .dataspace
        .max_dims
        .as_ref()
        .is_none_or(|m| m.iter().position(|&d| d == UNLIMITED).unwrap_or(0) == 0);
    if matches!(ch.index, ChunkIndex::ExtensibleArray { .. }) && !unlim_first {
        let mut a: Vec<_> = ours.iter().map(|c| (c.2, c.3, c.1)).collect();
        let mut b: Vec<_> = l.chunks.iter().map(|c| (c.2, c.3, c.1)).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{ctx}: chunk addresses");
        // libhdf5's H5Dget_chunk_info_by_coord is wrong here too: the data decide.
        assert!(
            check_chunk_data(path, obj_path, file, ds, ch, &ours, ctx),
            "{ctx}: no data check"
        );
    } else {
        assert_eq!(ours.len(), l.chunks.len(), "{ctx}: chunk count");
        assert_eq!(ours, l.chunks, "{ctx}: chunks");
        if check_chunk_data(path, obj_path, file, ds, ch, &ours, ctx) {
            st.chunks_data_checked += ours.len();
        }
    }
    st.chunks += ours.len();
}

/// For an unfiltered dataset of a fixed-size type: checks that the stored bytes of every
/// chunk are the values libhdf5 reads at the chunk's coordinates (the part of the chunk inside
/// the dataset). Returns false when the dataset does not qualify.
fn check_chunk_data(
    path: &Path,
    obj_path: &str,
    file: &File,
    ds: &vzarr_hdf5_format::Dataset,
    ch: &vzarr_hdf5_format::ChunkedLayout,
    chunks: &[(Vec<u64>, u32, u64, u64)],
    ctx: &str,
) -> bool {
    let es = ds.datatype.size as usize;
    let dims = &ds.dataspace.dims;
    let n = ds.dataspace.num_elements().unwrap_or(u64::MAX);
    if ds.is_filtered() || !is_fixed_size(&ds.datatype) || n.saturating_mul(es as u64) > 64 << 20 {
        return false;
    }
    if chunks
        .iter()
        .any(|c| c.1 != 0 || c.3 != ch.chunk_bytes().unwrap())
    {
        return false;
    }
    let Some(values) = lib5::read_raw_bytes(path, obj_path, n as usize * es) else {
        return false;
    };
    let data = std::fs::read(path).unwrap();
    let _ = file;
    let rank = dims.len();
    let cd = &ch.chunk_dims;
    let per_chunk: u64 = cd.iter().product();
    for (origin, _, addr, _) in chunks {
        let bytes = &data[*addr as usize..*addr as usize + per_chunk as usize * es];
        let mut idx = vec![0u64; rank];
        for k in 0..per_chunk as usize {
            let pos: Vec<u64> = (0..rank).map(|d| origin[d] + idx[d]).collect();
            if pos.iter().zip(dims).all(|(p, d)| p < d) {
                let lin = pos.iter().zip(dims).fold(0u64, |a, (p, d)| a * d + p) as usize;
                assert_eq!(
                    &bytes[k * es..(k + 1) * es],
                    &values[lin * es..(lin + 1) * es],
                    "{ctx}: element {pos:?} of the chunk at {origin:?}"
                );
            }
            for d in (0..rank).rev() {
                idx[d] += 1;
                if idx[d] < cd[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }
    true
}
