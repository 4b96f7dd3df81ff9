//! # vzarr-dmrpp
//!
//! A scanner of DMR++ documents: the XML "sidecar" OPeNDAP's Hyrax (and NASA's archives)
//! publish beside an HDF5, NetCDF4 or HDF4 granule, listing its variables (DAP4 DMR: types,
//! dimensions, attributes) and, in the `dmrpp:` namespace, where each chunk's bytes are in
//! the granule and how they are filtered. A virtual dataset is built from it without reading
//! the granule at all.
//!
//! The format has no specification besides OPeNDAP's code: the DAP4 DMR (DAP4 specification,
//! volume 1) and bes's `modules/dmrpp_module` (`DmrppParserSax2.cc`, `DmrppCommon.cc`,
//! `Chunk.cc`), which this follows:
//! - elements and attributes matched by local name, as libdap's parser matches them;
//! - groups, `Dimension`s (named by their absolute paths in `Dim`), anonymous `Dim size`s
//!   (named `phony_dim_<k>`), and variables of the DAP4 numeric types (`Char` as a one-byte
//!   string) and enums (their base integers, the members as CF flags, as the HDF5 mapping
//!   gives them) with their attributes (numeric ones with their numpy types; containers
//!   unwrapped);
//! - `dmrpp:chunks`: `byteOrder` (`LE` default, `BE`), `fillValue` (six significant digits for
//!   floats: the `_FillValue` attribute's exact value is taken where the two agree),
//!   `compressionType` (deflate, shuffle, fletcher32) in the order the HDF5 pipeline applied
//!   them where the document names its `dmrpp:version`, in Hyrax's fixed order (shuffle, then
//!   deflate) where it does not; `chunkDimensionSizes` and each chunk's `offset`, `nBytes` and
//!   `chunkPositionInArray`; contiguous data as one range (or adjacent ones);
//! - HDF4's linked blocks (`dmrpp:block`, bes's `DmrppCommon::read_chunks` with
//!   `linked_blocks`) of uncompressed data, one chunk per block where each holds whole rows;
//! - `dmrpp:compact` values (base64) and `dmrpp:missingdata` ones (deflated, base64: values
//!   Hyrax computed) as an inline chunk;
//! - fixed-length strings (`dmrpp:FixedLengthStringArray`, mapped as the HDF5 mapping maps
//!   HDF5's), and variable-length ones whose values the document holds (`dmrpp:vlsa`,
//!   `strings`) as one inline `vlen-utf8` chunk;
//! - structures of HDF5 compounds with their `structOffset` (`structure`), mapped as the HDF5
//!   mapping maps compounds;
//! - chunks with a filter mask (`fm`: some filters skipped), listed in [`Scanned::masked`] for
//!   the caller to read and keep inline re-encoded ([`masks::apply`]), as the HDF5 scanner
//!   keeps them;
//! - chunks in other files beside the granule (a chunk's own `href`: Hyrax's `_mvs.h5` files
//!   of values it computed), as references into them (`href`).
//!
//! Listed as skipped, with the reason, for now: variable-length strings in the granule's
//! heap, opaque types, sequences and structures the mapping cannot take, chunks in files
//! elsewhere than beside the granule, linked blocks Zarr cannot express, and every `unsupported-*` marker.
//!
//! The chunks are read from the granule the document names (`dmrpp:href`) when it is an
//! absolute URL at the sidecar's own scheme and host, else from the sidecar's own URL without
//! `.dmrpp` (Hyrax writes a placeholder, `OPeNDAP_DMRpp_DATA_ACCESS_URL`, or a path on its
//! server): a sidecar never sends its reader to another host.
//!
//! Untrusted input: the document is read whole, at most [`MAX_SIDECAR_BYTES`], into a tree of
//! bounded depth and size (`xml`); every number is parsed with checks; a variable the scanner
//! cannot map is listed as skipped and the rest built.

mod error;
mod href;
mod map;
pub mod masks;
mod strings;
mod structure;
mod types;
mod xml;

pub use error::DmrppError;
pub use masks::MaskedChunk;
use vzarr_core::VirtualDataset;

/// Largest DMR++ document read (ICESat-2 ATL08's is 2.2 MB; some swath products reach tens).
pub const MAX_SIDECAR_BYTES: u64 = 512 << 20;

/// The placeholder Hyrax writes as `dmrpp:href` where the granule's URL is filled in when
/// the sidecar is served.
pub const DATA_URL_PLACEHOLDER: &str = "OPeNDAP_DMRpp_DATA_ACCESS_URL";

/// The URL the chunks of the sidecar at `sidecar_url` are read from: its `dmrpp:href` when
/// that is an absolute URL at the sidecar's own scheme and host, not a local file (a sidecar
/// does not send its reader elsewhere), else the sidecar's URL without its `.dmrpp` suffix; `None` when neither
/// applies.
pub fn data_url(sidecar_url: &str, href: Option<&str>) -> Option<String> {
    // A local file is followed only beside the sidecar (every local path has one origin).
    let origin = |u: &str| -> Option<String> {
        let (scheme, rest) = u.split_once("://")?;
        let host = rest.split('/').next().unwrap_or_default();
        (scheme != "file" && !host.is_empty()).then(|| format!("{scheme}://{host}"))
    };
    match href.map(str::trim) {
        Some(h)
            if !h.contains(DATA_URL_PLACEHOLDER)
                && origin(h).is_some()
                && origin(h) == origin(sidecar_url) =>
        {
            Some(h.to_string())
        }
        _ => sidecar_url
            .strip_suffix(".dmrpp")
            .filter(|u| !u.ends_with('/') && !u.is_empty())
            .map(str::to_string),
    }
}

/// The granule's URL for the sidecar at `sidecar_url` by a template the user gives (where a
/// sidecar names no usable granule: NASA's `OPeNDAP_DMRpp_DATA_ACCESS_URL`, or sidecars copied
/// away from their granules): `{name}` in `template` stands for the sidecar's file name without
/// `.dmrpp`; a template ending in `/` is a directory or prefix the name is appended to; any
/// other is the granule's URL itself.
pub fn granule_from_template(template: &str, sidecar_url: &str) -> String {
    let file = sidecar_url.rsplit('/').next().unwrap_or(sidecar_url);
    let name = file.strip_suffix(".dmrpp").unwrap_or(file);
    if template.contains("{name}") {
        template.replace("{name}", name)
    } else if template.ends_with('/') {
        format!("{template}{name}")
    } else {
        template.to_string()
    }
}

/// What a DMR++ document describes.
#[derive(Debug)]
#[non_exhaustive]
pub struct Scanned {
    /// The virtual dataset, its chunks in the granule; the provenance left empty for the
    /// caller (the granule's record, which the sidecar does not hold).
    pub dataset: VirtualDataset,
    /// The granule's URL ([`data_url`]).
    pub data_url: String,
    /// Chunks stored with some filters skipped (`fm`), in `dataset` as byte ranges that the
    /// array's codecs cannot decode: to be read and kept inline ([`masks::apply`]) before the
    /// dataset is used.
    pub masked: Vec<MaskedChunk>,
}

/// Scans the DMR++ document `xml` (at `sidecar_url`) into a virtual dataset whose chunks point
/// into the granule it describes ([`data_url`]).
pub fn scan(xml: &[u8], sidecar_url: &str) -> Result<Scanned, DmrppError> {
    scan_with(xml, sidecar_url, None)
}

/// [`scan`], the chunks pointing into the granule at `granule_url` (a URL the caller was given,
/// e.g. a template's for NASA's placeholder) instead of [`data_url`]'s when it is `Some`.
pub fn scan_with(
    xml: &[u8],
    sidecar_url: &str,
    granule_url: Option<&str>,
) -> Result<Scanned, DmrppError> {
    if xml.len() as u64 > MAX_SIDECAR_BYTES {
        return Err(DmrppError::TooLarge {
            url: sidecar_url.to_string(),
            size: xml.len() as u64,
            max: MAX_SIDECAR_BYTES,
        });
    }
    let root = xml::parse(xml).map_err(|reason| DmrppError::Xml {
        url: sidecar_url.to_string(),
        reason,
    })?;
    if root.name != "Dataset" {
        return Err(DmrppError::NotDmrpp {
            url: sidecar_url.to_string(),
            root: root.name,
        });
    }
    let data_url = match granule_url {
        Some(g) => g.to_string(),
        None => data_url(sidecar_url, root.attr("href")).ok_or_else(|| DmrppError::NoDataUrl {
            url: sidecar_url.to_string(),
        })?,
    };
    let doc = map::Doc {
        pending_masks: Default::default(),
        masked: Default::default(),
        place: href::Place::new(&data_url, root.attr("href")),
        versioned: root.attr("version").is_some(),
        scalar_strings_held: root.attr("version").is_some_and(|v| at_least(v, (3, 21))),
    };
    let mut out = VirtualDataset::new();
    map::walk(&doc, &root, "", &mut map::Scope::default(), &mut out);
    let renamed = vzarr_core::names::make_names_zarr_safe(&mut out);
    // The masked chunks follow their arrays' new paths.
    let mut masked = doc.masked.into_inner();
    for m in &mut masked {
        if let Some(now) = renamed.get(&m.path) {
            m.path.clone_from(now);
        }
    }
    out.validate().map_err(|source| DmrppError::Core {
        url: sidecar_url.to_string(),
        object: "/".into(),
        source,
    })?;
    Ok(Scanned {
        dataset: out,
        data_url,
        masked,
    })
}

/// Whether the bes version `v` (`3.21.1`, `3.20.13-0`) is `min` or later.
fn at_least(v: &str, min: (u32, u32)) -> bool {
    let mut parts = v.trim().split(['.', '-']).map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= min,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_of_more_dimensions_than_zarr_readers_take_is_skipped() {
        let dims = "<Dim size=\"1\"/>".repeat(vzarr_core::limits::MAX_RANK + 1);
        let xml = format!(
            "<Dataset xmlns:dmrpp=\"x\"><Int8 name=\"v\">{dims}<dmrpp:chunks>\
             <dmrpp:chunk offset=\"0\" nBytes=\"1\"/></dmrpp:chunks></Int8></Dataset>"
        );
        let ds = scan(xml.as_bytes(), "file:///g.h5.dmrpp").unwrap().dataset;
        assert!(ds.arrays.is_empty());
        assert!(
            ds.skipped[0].reason.contains("dimensions"),
            "{:?}",
            ds.skipped
        );
    }

    #[test]
    fn scalar_strings_are_read_as_bes_writes_them() {
        let doc = |version: &str, storage: &str| {
            format!(
                "<Dataset xmlns:dmrpp=\"x\"{version}><String name=\"s\">{storage}</String></Dataset>"
            )
        };
        let chunk = "<dmrpp:chunks><dmrpp:chunk offset=\"8\" nBytes=\"32000\"/></dmrpp:chunks>";
        // One chunk, from bes 3.21 on: a fixed-length string of the chunk's size.
        let s = scan(
            doc(" dmrpp:version=\"3.21.1\"", chunk).as_bytes(),
            "file:///g.h5.dmrpp",
        )
        .unwrap();
        assert_eq!(
            s.dataset.arrays["s"].data_type,
            vzarr_core::DataType::FixedBytes(32000)
        );
        // Before, it may be a variable-length string's heap reference: refused, saying so.
        for v in ["", " dmrpp:version=\"3.20.13\""] {
            let s = scan(doc(v, chunk).as_bytes(), "file:///g.h5.dmrpp").unwrap();
            assert!(s.dataset.arrays.is_empty());
            assert!(
                s.dataset.skipped[0].reason.contains("before bes 3.21"),
                "{:?}",
                s.dataset.skipped
            );
        }
        // Held in the document: its text, to the first NUL, as a variable-length string.
        let held = "<dmrpp:chunks/><dmrpp:compact>QW4gSERGNQBqdW5r</dmrpp:compact>";
        let s = scan(doc("", held).as_bytes(), "file:///g.h5.dmrpp").unwrap();
        let a = &s.dataset.arrays["s"];
        assert_eq!(a.data_type, vzarr_core::DataType::String);
        let vzarr_core::ChunkRef::Inline(b) = a.manifest.get(0) else {
            panic!("not inline")
        };
        assert_eq!(vzarr_codec::vlen_utf8::decode(b, 1).unwrap(), ["An HDF5"]);
    }

    #[test]
    fn chunks_with_a_filter_mask_are_listed_for_the_caller() {
        let doc = |name: &str, filters: &str, sizes: &str, fm: &str| {
            format!(
                "<Dataset xmlns:dmrpp=\"x\"><Int32 name=\"{name}\"><Dim size=\"4\"/>\
                 <dmrpp:chunks{filters}>{sizes}\
                 <dmrpp:chunk offset=\"0\" nBytes=\"8\" chunkPositionInArray=\"[0]\"/>\
                 <dmrpp:chunk offset=\"8\" nBytes=\"8\" chunkPositionInArray=\"[2]\"{fm}/>\
                 </dmrpp:chunks></Int32></Dataset>"
            )
        };
        let deflated = " compressionType=\"deflate\"";
        let sizes = "<dmrpp:chunkDimensionSizes>2</dmrpp:chunkDimensionSizes>";
        let s = scan(
            doc("v", deflated, sizes, " fm=\"1\"").as_bytes(),
            "file:///g.h5.dmrpp",
        )
        .unwrap();
        assert_eq!(s.masked.len(), 1);
        assert_eq!(
            (
                s.masked[0].path.as_str(),
                s.masked[0].chunk,
                s.masked[0].filter_mask
            ),
            ("v", 1, 1)
        );
        // fm="0" is no mask; a renamed array's masked chunks follow it.
        let s = scan(
            doc("v", deflated, sizes, " fm=\"0\"").as_bytes(),
            "file:///g.h5.dmrpp",
        )
        .unwrap();
        assert!(s.masked.is_empty());
        let s = scan(
            doc("__v", deflated, sizes, " fm=\"2\"").as_bytes(),
            "file:///g.h5.dmrpp",
        )
        .unwrap();
        let renamed: Vec<&String> = s.dataset.arrays.keys().collect();
        assert_eq!([&s.masked[0].path], renamed.as_slice());
        assert_ne!(s.masked[0].path, "__v");
        assert!(
            s.dataset.arrays[&s.masked[0].path]
                .attributes
                .get("vzarr:dmrpp-masked-path")
                .is_none()
        );
        // Refused, with the reason: a mask without filters, on contiguous data, not a number.
        for (xml, why) in [
            (doc("v", "", sizes, " fm=\"1\""), "without filters"),
            (doc("v", deflated, "", " fm=\"1\""), "contiguous"),
            (doc("v", deflated, sizes, " fm=\"x\""), "not a number"),
        ] {
            let s = scan(xml.as_bytes(), "file:///g.h5.dmrpp").unwrap();
            assert!(s.dataset.arrays.is_empty() && s.masked.is_empty());
            assert!(
                s.dataset.skipped[0].reason.contains(why),
                "{:?}",
                s.dataset.skipped
            );
        }
    }

    #[test]
    fn linked_blocks_of_whole_rows_are_chunks_and_others_refused() {
        let doc = |blocks: &str, filters: &str| {
            format!(
                "<Dataset xmlns:dmrpp=\"x\"><Int32 name=\"v\"><Dim size=\"3\"/><Dim size=\"2\"/>\
                 <dmrpp:chunks byteOrder=\"BE\"{filters}>{blocks}</dmrpp:chunks></Int32></Dataset>"
            )
        };
        let ok = doc(
            "<dmrpp:block offset=\"100\" nBytes=\"16\"/><dmrpp:block offset=\"10\" nBytes=\"8\"/>",
            "",
        );
        let ds = scan(ok.as_bytes(), "file:///g.hdf.dmrpp").unwrap().dataset;
        let a = &ds.arrays["v"];
        assert_eq!(a.grid.dims()[0].edges(), [2, 1]);
        assert!(matches!(
            a.manifest.get(1),
            vzarr_core::ChunkRef::Range {
                offset: 10,
                length: 8,
                ..
            }
        ));
        for (blocks, filters, why) in [
            (
                "<dmrpp:block offset=\"0\" nBytes=\"12\"/><dmrpp:block offset=\"99\" nBytes=\"12\"/>",
                "",
                "inside a row",
            ),
            (
                "<dmrpp:block offset=\"0\" nBytes=\"8\"/>",
                "",
                "linked blocks of 8 bytes for an array of 24",
            ),
            (
                "<dmrpp:block offset=\"0\" nBytes=\"16\"/><dmrpp:block offset=\"99\" nBytes=\"8\"/>",
                " compressionType=\"deflate\"",
                "compressed",
            ),
        ] {
            let ds = scan(doc(blocks, filters).as_bytes(), "file:///g.hdf.dmrpp")
                .unwrap()
                .dataset;
            assert!(ds.arrays.is_empty());
            assert!(ds.skipped[0].reason.contains(why), "{:?}", ds.skipped);
        }
    }

    #[test]
    fn strings_fixed_and_held_in_the_sidecar() {
        let doc = |var: &str| format!("<Dataset xmlns:dmrpp=\"x\">{var}</Dataset>");
        // bes's vl_str_dup_array.h5: runs of equal values.
        let vlsa = doc(
            "<String name=\"s\"><Dim size=\"2\"/><Dim size=\"3\"/><dmrpp:vlsa><v>apple</v>\
             <v c=\"2\">cherry</v><v c=\"3\">fig</v></dmrpp:vlsa></String>",
        );
        let ds = scan(vlsa.as_bytes(), "file:///g.h5.dmrpp").unwrap().dataset;
        let a = &ds.arrays["s"];
        assert_eq!(a.data_type, vzarr_core::DataType::String);
        let vzarr_core::ChunkRef::Inline(bytes) = a.manifest.get(0) else {
            panic!("{:?}", a.manifest.get(0));
        };
        let want = ["apple", "cherry", "cherry", "fig", "fig", "fig"];
        assert_eq!(bytes, vzarr_codec::vlen_utf8::encode(&want).unwrap());
        // A value deflated: "hello" (s: its length), zlib's stream in base64.
        let deflated = "eJzLSM3JyQcABiwCFQ==";
        let one = doc(&format!(
            "<String name=\"s\"><Dim size=\"1\"/><dmrpp:vlsa><v s=\"5\">{deflated}</v>\
             </dmrpp:vlsa></String>"
        ));
        let ds = scan(one.as_bytes(), "file:///g.h5.dmrpp").unwrap().dataset;
        assert!(
            matches!(ds.arrays["s"].manifest.get(0), vzarr_core::ChunkRef::Inline(b)
            if b == vzarr_codec::vlen_utf8::encode(&["hello"]).unwrap())
        );
        // Counts that do not add up, or would make gigabytes: refused, nothing allocated.
        for bad in [
            "<v c=\"99999999999\">x</v>",
            "<v>x</v>",
            "<v s=\"9999999999\">eJw=</v>",
        ] {
            let x = doc(&format!(
                "<String name=\"s\"><Dim size=\"2\"/><dmrpp:vlsa>{bad}</dmrpp:vlsa></String>"
            ));
            let ds = scan(x.as_bytes(), "file:///g.h5.dmrpp").unwrap().dataset;
            assert!(ds.arrays.is_empty(), "{bad}");
            assert!(ds.skipped[0].reason.contains("vlsa"), "{:?}", ds.skipped);
        }
        // Fixed-length: null-padded as HDF5's; space-padded refused as the HDF5 mapping does.
        let fixed = |pad: &str| {
            doc(&format!(
                "<String name=\"f\"><Dim size=\"4\"/><dmrpp:chunks fillValue=\"unsupported-string\">\
                 <dmrpp:chunk offset=\"10\" nBytes=\"28\"/></dmrpp:chunks>\
                 <dmrpp:FixedLengthStringArray string_length=\"7\" pad=\"{pad}\"/></String>"
            ))
        };
        let ds = scan(fixed("null_pad").as_bytes(), "file:///g.h5.dmrpp")
            .unwrap()
            .dataset;
        assert_eq!(
            ds.arrays["f"].data_type,
            vzarr_core::DataType::FixedBytes(7)
        );
        let ds = scan(fixed("space_pad").as_bytes(), "file:///g.h5.dmrpp")
            .unwrap()
            .dataset;
        assert!(
            ds.skipped[0].reason.contains("space padding"),
            "{:?}",
            ds.skipped
        );
    }

    #[test]
    fn values_the_sidecar_holds_are_inline() {
        let doc = |var: &str| format!("<Dataset xmlns:dmrpp=\"x\">{var}</Dataset>");
        // Deflated (3, 2, 1 as little-endian Int32), and a byte as it is ("cA==": 112).
        let three = doc("<Int32 name=\"v\"><Dim size=\"3\"/>\
             <dmrpp:missingdata>eJxjZmBgYAJiRiAGAABEAAc=</dmrpp:missingdata></Int32>\
             <Byte name=\"b\"><dmrpp:missingdata>cA==</dmrpp:missingdata></Byte>");
        let ds = scan(three.as_bytes(), "file:///g.h5.dmrpp")
            .unwrap()
            .dataset;
        let inline = |p: &str| match ds.arrays[p].manifest.get(0) {
            vzarr_core::ChunkRef::Inline(b) => b.to_vec(),
            other => panic!("{other:?}"),
        };
        assert_eq!(inline("v"), [3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(inline("b"), [112]);
        // Not the array's size: refused, whatever the stream claims.
        let short = doc("<Int32 name=\"v\"><Dim size=\"4\"/>\
             <dmrpp:missingdata>eJxjZmBgYAJiRiAGAABEAAc=</dmrpp:missingdata></Int32>");
        let ds = scan(short.as_bytes(), "file:///g.h5.dmrpp")
            .unwrap()
            .dataset;
        assert!(
            ds.skipped[0].reason.contains("missingdata"),
            "{:?}",
            ds.skipped
        );
    }

    #[test]
    fn a_vast_grid_of_few_chunks_allocates_nothing_per_chunk() {
        let doc = |size: u64| {
            format!(
                "<Dataset xmlns:dmrpp=\"x\"><Int8 name=\"v\"><Dim size=\"{size}\"/>\
                 <dmrpp:chunks><dmrpp:chunkDimensionSizes>1</dmrpp:chunkDimensionSizes>\
                 <dmrpp:chunk offset=\"0\" nBytes=\"1\" chunkPositionInArray=\"[7]\"/>\
                 </dmrpp:chunks></Int8></Dataset>"
            )
        };
        let ds = scan(doc(1 << 30).as_bytes(), "file:///g.h5.dmrpp")
            .unwrap()
            .dataset;
        let m = &ds.arrays["v"].manifest;
        assert_eq!((m.len(), m.stored()), (1 << 30, 1));
        assert!(m.is_sparse());
        let ds = scan(doc(1 << 40).as_bytes(), "file:///g.h5.dmrpp")
            .unwrap()
            .dataset;
        assert!(
            ds.skipped[0].reason.contains("an array may have"),
            "{:?}",
            ds.skipped
        );
    }

    #[test]
    fn structures_are_compounds_with_their_padding() {
        let doc = |offsets: &str, extra: &str| {
            format!(
                "<Dataset xmlns:dmrpp=\"x\"><Structure name=\"s\"><Float64 name=\"a\"/>\
                 <Int16 name=\"b\"/><Float32 name=\"c\"/>{extra}<Dim size=\"2\"/>\
                 <dmrpp:chunks byteOrder=\"BE\" fillValue=\"-9.5 7 1.5\"{offsets}>\
                 <dmrpp:chunk offset=\"100\" nBytes=\"32\"/></dmrpp:chunks></Structure></Dataset>"
            )
        };
        let ds = scan(
            doc(" structOffset=\"8 12 16\"", "").as_bytes(),
            "file:///g.h5.dmrpp",
        )
        .unwrap()
        .dataset;
        let a = &ds.arrays["s"];
        let vzarr_core::DataType::Struct(fields) = &a.data_type else {
            panic!("{:?}", a.data_type)
        };
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "vzarr:padding@10", "c"]);
        assert_eq!(a.endian, vzarr_core::Endian::Big);
        let mut fill = (-9.5f64).to_le_bytes().to_vec();
        fill.extend(7i16.to_le_bytes());
        fill.extend([0, 0]);
        fill.extend(1.5f32.to_le_bytes());
        assert_eq!(a.fill_value.le_bytes(), fill);
        // No offsets (older sidecars): the padding is not known; a subarray member.
        for (offsets, extra, why) in [
            ("", "", "structOffset"),
            (
                " structOffset=\"8 12 16 24\"",
                "<Int8 name=\"d\"><Dim size=\"4\"/></Int8>",
                "subarray",
            ),
        ] {
            let ds = scan(doc(offsets, extra).as_bytes(), "file:///g.h5.dmrpp")
                .unwrap()
                .dataset;
            assert!(ds.skipped[0].reason.contains(why), "{:?}", ds.skipped);
        }
    }

    #[test]
    fn a_template_names_the_granule() {
        let s = "file:///d/MOD09.A2020.hdf.dmrpp";
        assert_eq!(
            granule_from_template("s3://b/p/{name}", s),
            "s3://b/p/MOD09.A2020.hdf"
        );
        assert_eq!(
            granule_from_template("s3://b/p/", s),
            "s3://b/p/MOD09.A2020.hdf"
        );
        assert_eq!(granule_from_template("/data/g.hdf", s), "/data/g.hdf");
    }

    #[test]
    fn the_granule_is_beside_the_sidecar() {
        let s = "s3://bucket/a/g.h5.dmrpp";
        assert_eq!(data_url(s, None).unwrap(), "s3://bucket/a/g.h5");
        assert_eq!(
            data_url(s, Some(DATA_URL_PLACEHOLDER)).unwrap(),
            "s3://bucket/a/g.h5"
        );
        assert_eq!(
            data_url(s, Some("data/g.h5")).unwrap(),
            "s3://bucket/a/g.h5"
        );
        assert_eq!(
            data_url(s, Some("s3://bucket/b/g2.h5")).unwrap(),
            "s3://bucket/b/g2.h5"
        );
        // Another host or scheme: not followed.
        assert_eq!(
            data_url(s, Some("s3://other/g.h5")).unwrap(),
            "s3://bucket/a/g.h5"
        );
        assert_eq!(
            data_url(s, Some("file:///etc/passwd")).unwrap(),
            "s3://bucket/a/g.h5"
        );
        let f = "file:///d/g.h5.dmrpp";
        assert_eq!(
            data_url(f, Some("file:///etc/passwd")).unwrap(),
            "file:///d/g.h5"
        );
        assert_eq!(data_url("file:///d/x.xml", None), None);
        assert_eq!(data_url("file:///d/.dmrpp", None), None);
    }
}
