"""DMR++ sidecars as vzarr's input (GitHub issue 53): each DMR++ file of OPeNDAP's bes repository
whose HDF5 granule is present (`../shared/dmrpp`, or VZARR_DMRPP_DIR) is built with
``vzarr build <granule>.dmrpp`` (``--data-url`` naming granules not beside their sidecars),
never reading the granule's data, and every array read back
through zarr-python equals what h5py reads from the granule. The sidecars that do not describe
their granule (one stale, one without byte orders for big-endian data, one of a granule that
contradicts itself) must read differently or fail, and nothing else."""

import json
from pathlib import Path

import h5py
import numpy as np
import zarr

from conftest import assert_values_equal, open_store, registry_store_only, run_vzarr
from dmrpp_values import (DMRPP_DIR, NOT_THEIR_GRANULE, h5_path, hdf4_values,
                          pairs, undefined, with_companions)

def test_bes_sidecars_read_as_their_granules(tmp_path):
    found = pairs(beside_only=False)
    assert len(found) > 190, f"{len(found)} pairs under {DMRPP_DIR}"
    arrays, equal, differ, undefined_arrays = 0, 0, {}, 0
    for k, (sidecar, path, granule) in enumerate(found):
        out = tmp_path / f"{k}.json"
        # A granule elsewhere than beside its sidecar is named with --data-url.
        elsewhere = [] if path == Path(f"{granule}.dmrpp") else ["--data-url", granule]
        p = run_vzarr("build", path, "-o", out, *elsewhere, check=False)
        if p.returncode != 0:
            # bes's request files kept under a .dmrpp name: XML, not DMR++.
            assert "not a DMR++ document" in p.stderr or "no HDF5 signature" in p.stderr, (
                sidecar, p.stderr)
            continue
        refs = json.loads(out.read_text())
        group = zarr.open_group(open_store(refs), mode="r")
        with h5py.File(granule, "r") as f:
            for path in [k for k, v in refs["refs"].items() if k.endswith("zarr.json")
                         and json.loads(v)["node_type"] == "array"]:
                path = path[: -len("/zarr.json")]
                arr = group[path]
                h5 = h5_path(f, path, dict(arr.attrs))
                if h5 is None or not isinstance(f[h5], h5py.Dataset):
                    continue
                if h5py.check_vlen_dtype(f[h5].dtype) not in (None, str, bytes):
                    continue  # flattened by Hyrax: test_values_the_sidecar_holds_...
                if undefined(f[h5]):
                    undefined_arrays += 1
                    continue
                arrays += 1
                try:
                    assert_values_equal(f[h5][()], arr[...], f"{sidecar}:{path}")
                    equal += 1
                except Exception as e:  # noqa: BLE001 - a wrong sidecar may fail any way
                    differ.setdefault(sidecar, []).append(f"{path}: {str(e)[:200]}")
    print(f"{len(found)} bes sidecars of HDF5 granules: {arrays} arrays read, "
          f"{equal} equal to h5py's; {undefined_arrays} with chunks of undefined values")
    for s, d in differ.items():
        print(f"{s}:\n    " + "\n    ".join(d))
    # NUL-terminated strings with bytes after the NUL ("swe\0et"): read as stored, as vzarr's
    # own scan of the granule reads them (libhdf5 stops at the NUL); not the sidecar's doing.
    as_stored = {"modules/dmrpp_module/data/string_arrays/t_string_cstr.h5.dmrpp"}
    assert set(differ) <= NOT_THEIR_GRANULE | as_stored, sorted(
        set(differ) - NOT_THEIR_GRANULE - as_stored)
    assert "modules/dmrpp_module/data/dmrpp/FletcherShuffle.nc4.dmrpp" in differ
    assert equal > 200, equal


def test_a_sidecar_never_sends_the_reader_elsewhere(tmp_path):
    """A sidecar whose dmrpp:href names a file elsewhere on the machine is read as describing
    the granule beside it: the references point there, never at the named file."""
    src = DMRPP_DIR / "bes/modules/dmrpp_module/data/dmrpp/chunked_shufzip_twoD.h5"
    (tmp_path / "g.h5").write_bytes(src.read_bytes())
    xml = (src.parent / (src.name + ".dmrpp")).read_text()
    xml = xml.replace('dmrpp:href="data/dmrpp/chunked_shufzip_twoD.h5"', 'dmrpp:href="file:///etc/passwd"')
    assert "/etc/passwd" in xml
    (tmp_path / "g.h5.dmrpp").write_text(xml)
    out = tmp_path / "g.json"
    run_vzarr("build", tmp_path / "g.h5.dmrpp", "-o", out, "--small-chunks", "keep")
    text = out.read_text()
    assert "/etc/passwd" not in text and "g.h5" in text
    refs = json.loads(text)
    with h5py.File(src, "r") as f:
        got = zarr.open_group(open_store(refs), mode="r")["d_4_shufzip_chunks"][...]
        assert np.array_equal(f["d_4_shufzip_chunks"][()], got)


def test_virtualizarr_opens_sidecars_through_vzarrs_parser():
    """`open_virtual_dataset(<granule>.dmrpp, parser=vzarr.virtualizarr.Parser())` needs no
    option: the sidecar is recognised by its content. Its manifests equal those VirtualiZarr's
    own HDF parser (h5py) finds in the granule, entry by entry."""
    import warnings

    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    import vzarr.virtualizarr

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    compared = 0
    for sidecar, _, granule in pairs()[::4]:
        if sidecar in NOT_THEIR_GRANULE:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                theirs = open_virtual_dataset(granule.as_uri(), registry=registry, parser=HDFParser())
            except Exception:  # noqa: BLE001 - VirtualiZarr's parser refuses some files
                continue
            ours = open_virtual_dataset(f"{granule.as_uri()}.dmrpp", registry=registry,
                                        parser=vzarr.virtualizarr.Parser())
        for name, var in ours.variables.items():
            if name not in theirs.variables or not hasattr(var.data, "manifest"):
                continue
            other = theirs[name].data
            if not hasattr(other, "manifest"):
                continue
            assert var.shape == other.shape, (sidecar, name)
            if var.dtype.names is not None:
                # A compound's padding is a field of vzarr's struct (`vzarr:padding@<offset>`);
                # VirtualiZarr's HDFParser drops it (14 bytes for h5py's 16-byte aligned
                # compound, so its records misalign; vzarr's values are h5py's: the test of
                # the bes pairs above). The same fields.
                named = [n for n in var.dtype.names if not n.startswith("vzarr:padding@")]
                assert named == list(other.dtype.names), (sidecar, name, var.dtype, other.dtype)
                assert var.dtype.itemsize >= other.dtype.itemsize, (sidecar, name)
            elif var.shape == () and var.dtype.kind == "T" and other.dtype.kind == "S":
                # A scalar string the sidecar holds (`dmrpp:compact`): DMR++ does not say
                # whether the granule's is of fixed length, and vzarr gives a variable-length
                # string (as bes writes those since 3.21); its value is compared with h5py's
                # by test_bes_sidecars_read_as_their_granules.
                assert all(e["path"] == "__inlined__" for e in var.data.manifest.dict().values())
                continue
            else:
                assert var.dtype == other.dtype, (sidecar, name)
            mine = var.data.manifest.dict()
            if all(e["path"] == "__inlined__" for e in mine.values()):
                continue  # compact data: VirtualiZarr's HDF parser gives no entries for it
            assert mine == other.manifest.dict(), (sidecar, name)
            compared += 1
    assert compared > 20, compared


def sds_named(granule, path):
    """Whether the HDF4 file `granule` holds an SDS of the array's name."""
    from pyhdf.SD import SD, SDC

    sd = SD(str(granule), SDC.READ)
    try:
        return path.split("/")[-1] in sd.datasets()
    finally:
        sd.end()


def test_hdf4_sidecars_read_as_pyhdf_reads_their_granules(tmp_path):
    """Every bes sidecar of an HDF4 granule (which vzarr cannot scan itself) is built, and each
    array read through zarr-python equals what HDF4's own library (pyhdf) reads: SDS of every
    number type, chunked, compressed, with unwritten chunks, unlimited; vdata fields; names
    repeated in HDF-EOS2 files told apart by reference; HDF4's linked blocks (an appendable
    SDS in blocks of 10, 1 and 1 rows: a rectilinear grid; vdata in blocks). Two sidecars are
    not well-formed XML (a debug line before it) and are refused saying so."""
    built, refused, arrays, equal, left_out, computed = 0, [], 0, 0, 0, 0
    for k, (name, sidecar, granule) in enumerate(pairs(beside_only=False, kind="hdf4")):
        out = tmp_path / f"{k}.json"
        p = run_vzarr("build", sidecar, "-o", out, "--data-url", granule,
                      "--small-chunks", "keep", check=False)
        if p.returncode != 0:
            assert "text outside the root element" in p.stderr, (name, p.stderr)
            refused.append(name)
            continue
        built += 1
        left_out += p.stderr.count("linked blocks")
        group = zarr.open_group(open_store(json.loads(out.read_text())), mode="r")
        for path, arr in group.members(max_depth=None):
            if not isinstance(arr, zarr.Array):
                continue
            if not {"dmr_sds_ref", "dmr_vdata_ref"} & set(arr.attrs) and not sds_named(granule, path):
                computed += 1  # coordinates Hyrax computed: test_values_the_sidecar_holds_...
                continue
            arrays += 1
            assert_values_equal(hdf4_values(granule, arr), arr[...], f"{name}:{path}")
            equal += 1
    print(f"HDF4 sidecars: {built} built, {arrays} arrays equal to pyhdf's; "
          f"{len(refused)} refused; {left_out} variables of linked blocks left out; "
          f"{computed} arrays of coordinates Hyrax computed")
    assert sorted(set(refused)) == ["modules/dmrpp_module/data/h4_dmrpp/SDS_simple.hdf.dmrpp",
                                    "modules/dmrpp_module/data/h4_dmrpp/SDS_simple_comp.hdf.dmrpp"]
    assert built >= 30 and equal >= 45 and left_out == 0, (built, equal, left_out)


def test_parser_reads_a_sidecar_and_its_granule_through_the_registrys_store(moto_server,
                                                                            monkeypatch):
    """A sidecar on S3 read through the obstore store the registry gives (NASA's case:
    credentials in the store, not the environment): the granule beside it is opened, and its
    small chunks read, through the same store; the references name the granule's URL."""
    import zarr

    import vzarr.virtualizarr

    client, env = moto_server
    client.create_bucket(Bucket="dmrpp-reg")
    src = DMRPP_DIR / "bes/modules/dmrpp_module/data/dmrpp/chunked_shufzip_twoD.h5"
    for f in (src, Path(f"{src}.dmrpp")):
        client.upload_file(str(f), "dmrpp-reg", f"deep/granules/{f.name}")
    registry = registry_store_only(env, monkeypatch, "dmrpp-reg", "deep")
    url = f"s3://dmrpp-reg/deep/granules/{src.name}.dmrpp"
    with h5py.File(src, "r") as f:
        want = f["d_4_shufzip_chunks"][()]
    keep = vzarr.virtualizarr.Parser(file_timeout=60)(url, registry)
    paths = set(np.unique(keep._group.arrays["d_4_shufzip_chunks"].manifest._paths).tolist())
    assert paths == {f"s3://dmrpp-reg/deep/granules/{src.name}"}
    np.testing.assert_array_equal(zarr.open_group(keep, mode="r")["d_4_shufzip_chunks"][...], want)
    # Kept inline: the granule's chunks read through the store at the granule's path.
    inline = vzarr.virtualizarr.Parser(file_timeout=60, small_chunks="inline")(url, registry)
    arr = inline._group.arrays["d_4_shufzip_chunks"]
    assert set(np.unique(arr.manifest._paths).tolist()) == {"__inlined__"}
    np.testing.assert_array_equal(zarr.open_group(inline, mode="r")["d_4_shufzip_chunks"][...],
                                  want)


def test_chunks_in_mvs_files_read_as_h5py_reads_those_files(tmp_path):
    """Sidecars with chunks in Hyrax's `_mvs.h5` file beside their granule (a chunk's own
    `href`: coordinates Hyrax computed): built with that file beside the granule, each array
    whose references point into it reads through zarr-python as h5py reads the file, and the
    file is recorded (a companion, not an input of its own); without the file those arrays are
    left out with the reason, and the rest built."""
    found = with_companions(tmp_path / "pairs")
    # grid_1_2d, grid_2_2d and grid_2_2d_sin (HDF5), grid_2_2d_ps (HDF4), vlen's flattened
    # variable-length data (sinusoid.hdf, the sixth, is not in bes).
    assert len(found) >= 5, found
    compared = 0
    for k, (name, sidecar, granule, mvs) in enumerate(found):
        out = tmp_path / f"{k}.json"
        run_vzarr("build", sidecar, "-o", out, "--small-chunks", "keep", "--data-url", granule)
        refs = json.loads(out.read_text())
        prov = refs["vzarr"]
        assert prov["companions"] == [mvs.as_uri()], (name, prov)
        group = zarr.open_group(open_store(refs), mode="r")
        in_mvs = sorted({key.rsplit("/c", 1)[0] for key, v in refs["refs"].items()
                         if isinstance(v, list) and v and v[0] == mvs.as_uri()})
        assert in_mvs, name
        with h5py.File(mvs, "r") as f:
            for path in in_mvs:
                arr = group[path]
                h5 = h5_path(f, path, dict(arr.attrs))
                assert h5 is not None, (name, path)
                assert_values_equal(f[h5][()], arr[...], f"{name}:{path}")
                compared += 1
        if granule.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n":
            # verify (libhdf5): the `_mvs.h5` arrays against that file, the others against the
            # granule, at the paths Hyrax's `fullnamepath` gives where it renamed them.
            v = run_vzarr("verify", out, "--trust-references", check=False)
            assert v.returncode == 0 and "all values match" in v.stdout, (name, v.stdout, v.stderr)
        mvs.unlink()
        p = run_vzarr("build", sidecar, "-o", out, "--data-url", granule, check=False)
        assert p.returncode == 0, p.stderr
        assert all(f"{path}: its chunks are in a file beside the granule that cannot be read"
                   in p.stderr for path in in_mvs), p.stderr
    # 2 + 4 + 8 + 8 + 2 arrays.
    assert compared >= 24, compared


def test_parser_reads_chunks_in_mvs_files_through_the_registrys_store(tmp_path, moto_server,
                                                                     monkeypatch):
    """Through vzarr's VirtualiZarr parser on S3, the `_mvs.h5` file beside the granule is
    opened, and its small chunks read, through the store the registry gives."""
    import vzarr.virtualizarr

    client, env = moto_server
    client.create_bucket(Bucket="dmrpp-mvs")
    name, sidecar, granule, mvs = next(
        p for p in with_companions(tmp_path) if p[0].endswith("dmrpp/grid_1_2d.h5.dmrpp"))
    for f in (sidecar, granule, mvs):
        client.upload_file(str(f), "dmrpp-mvs", f"g/{f.name}")
    registry = registry_store_only(env, monkeypatch, "dmrpp-mvs", "g")
    url = f"s3://dmrpp-mvs/g/{sidecar.name}"
    with h5py.File(mvs, "r") as f:
        want = {p: f[p][()] for p in ("HDFEOS/GRIDS/GeoGrid/XDim", "HDFEOS/GRIDS/GeoGrid/YDim")}
    for small in ("keep", "inline"):
        store = vzarr.virtualizarr.Parser(file_timeout=60, small_chunks=small)(url, registry)
        group = zarr.open_group(store, mode="r", zarr_format=3)
        for p, w in want.items():
            node = store._group
            for part in p.split("/")[:-1]:
                node = node.groups[part]
            paths = set(np.unique(node.arrays[p.rsplit("/", 1)[1]].manifest._paths).tolist())
            assert paths == ({f"s3://dmrpp-mvs/g/{mvs.name}"} if small == "keep"
                             else {"__inlined__"}), (small, p, paths)
            np.testing.assert_array_equal(group[p][...], w)


def test_parser_reads_hdf4_sidecars_as_pyhdf_reads_their_granules():
    """Through vzarr's VirtualiZarr parser, every array of the HDF4 sidecars beside their
    granules reads as pyhdf reads it; linked blocks of unequal rows (a rectilinear grid, which
    VirtualiZarr's manifests cannot hold) are kept inline, with regular chunks."""
    import warnings

    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    import vzarr.virtualizarr

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    parser = vzarr.virtualizarr.Parser()
    compared, linked = 0, 0
    for name, sidecar, granule in pairs(kind="hdf4"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                store = parser(sidecar.as_uri(), registry)
            except vzarr.ScanError as e:
                assert "text outside the root element" in str(e), (name, e)
                continue
        group = zarr.open_group(store, mode="r", zarr_format=3)
        for path, arr in group.members(max_depth=None):
            if not isinstance(arr, zarr.Array):
                continue
            if not {"dmr_sds_ref", "dmr_vdata_ref"} & set(arr.attrs) and not sds_named(granule, path):
                continue  # coordinates Hyrax computed: test_values_the_sidecar_holds_...
            assert_values_equal(hdf4_values(granule, arr), arr[...], f"{name}:{path}")
            compared += 1
            linked += path == "AppendableData"
    assert compared >= 40 and linked == 2, (compared, linked)


def test_values_the_sidecar_holds_read_as_their_sources_give_them(tmp_path):
    """`dmrpp:missingdata`: values Hyrax computed and keeps in the sidecar (deflated, or as they
    are when tiny), compared with an independent source of the same values: an HDF-EOS2
    grid's coordinates (HDF4) with those Hyrax's HDF5 handler wrote for the same grid into an
    HDF5 file (bes's merge_dmrpp `grid_1_2d_msv.h5`, read with h5py); a variable-length
    dataset's rows and lengths with h5py's rows of the granule; a projection's scalar code."""
    bes = DMRPP_DIR / "bes/modules"

    def built(sidecar):
        out = tmp_path / (Path(sidecar).name + ".json")
        run_vzarr("build", bes / sidecar, "-o", out)
        return zarr.open_group(open_store(json.loads(out.read_text())), mode="r")

    grid = built("fileout_netcdf/data/grid_1_2d.hdf.dmrpp")
    with h5py.File(bes / "dmrpp_module/tests/merge_dmrpp/grid_1_2d_msv.h5", "r") as f:
        for ours, theirs in (("XDim_GeoGrid", "XDim"), ("YDim_GeoGrid", "YDim")):
            want = f[f"HDFEOS/GRIDS/GeoGrid/{theirs}"][()]
            got = grid[f"GeoGrid/{ours}"][...]
            assert np.array_equal(got, want.astype(got.dtype)), (ours, got, want)
    vlen = built("fileout_netcdf/data/vlen.h5.dmrpp")
    with h5py.File(bes / "fileout_netcdf/data/vlen.h5", "r") as f:
        rows = f["DS1"][()]
    width = vlen["DS1"].shape[1]
    want = np.array([np.pad(r, (0, width - len(r))) for r in rows])
    assert np.array_equal(vlen["DS1"][...], want)
    assert np.array_equal(vlen["DS1_vlen_index"][...], [len(r) for r in rows])
    sin = built("fileout_netcdf/data/grid_2_2d_sin.h5.dmrpp")
    with h5py.File(bes / "dmrpp_module/tests/merge_dmrpp/grid_2_2d_sin_msv.h5", "r") as f:
        for g in ("SinGrid1", "SinGrid2"):
            want = f[f"HDFEOS/GRIDS/{g}/eos5_cf_projection"][()]
            assert sin[f"HDFEOS/GRIDS/{g}/eos5_cf_projection"][...] == want


def test_open_virtual_mfdataset_over_sidecars_away_from_their_granules(tmp_path):
    """Sidecars copied away from their granules, opened together with VirtualiZarr's
    `open_virtual_mfdataset` through vzarr's parser and its `data_url` template (and built
    from Python with `vzarr.build(..., data_url=...)`): the references point at the granules,
    and the values are h5py's."""
    import warnings

    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_mfdataset

    import vzarr
    import vzarr.virtualizarr

    src = DMRPP_DIR / "bes/modules/dmrpp_module/data/dmrpp"
    names = ["chunked_shufzip_twoD.h5", "chunked_gzipped_twoD.h5"]
    for n in names:
        (tmp_path / f"{n}.dmrpp").write_bytes((src / f"{n}.dmrpp").read_bytes())
    template = f"{src}/{{name}}"
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    parser = vzarr.virtualizarr.Parser(data_url=template)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vds = open_virtual_mfdataset([(tmp_path / f"{n}.dmrpp").as_uri() for n in names],
                                     registry=registry, parser=parser, combine="nested",
                                     concat_dim="file", compat="override", coords="minimal")
    assert vds.sizes["file"] == 2
    for k, n in enumerate(names):
        with h5py.File(src / n, "r") as f:
            for name in f:
                paths = set(np.unique(vds[name].data.manifest._paths[k]).tolist())
                assert paths == {(src / n).as_uri()}, (n, name, paths)
    refs = vzarr.build(tmp_path / f"{names[0]}.dmrpp", data_url=template)
    group = zarr.open_group(open_store(dict(refs)), mode="r")
    with h5py.File(src / names[0], "r") as f:
        for name in f:
            assert_values_equal(f[name][()], group[name][...], name)


def masked_pair(tmp_path):
    """An HDF5 file whose shuffled and deflated int32 array has two chunks stored with filters
    skipped (h5py's write_direct_chunk with a filter mask: one only shuffled, one raw at the
    array's edge, with bytes past the edge that are not the fill value), and a DMR++ sidecar
    listing its chunks as bes does (`fm` the chunk's mask, offsets from h5py's chunk index).
    Returns (sidecar, granule, the values h5py reads)."""
    g = tmp_path / "masked.h5"
    data = (np.arange(8 * 6, dtype="<i4").reshape(8, 6) - 20) * 1001
    with h5py.File(g, "w") as f:
        d = f.create_dataset("v", shape=(8, 6), chunks=(3, 4), dtype="<i4", shuffle=True,
                             compression="gzip", compression_opts=4, fillvalue=-7)
        d[...] = data
        # Filter 0 is shuffle, 1 deflate: mask 0b10 skips deflate; 0b11 both.
        block = data[0:3, 0:4].tobytes()
        d.id.write_direct_chunk((0, 0), np.frombuffer(block, np.uint8).reshape(-1, 4).T.tobytes(),
                                filter_mask=0b10)
        edge = np.full((3, 4), 77, "<i4")
        edge[:, :2] = data[3:6, 4:6]
        d.id.write_direct_chunk((3, 4), edge.tobytes(), filter_mask=0b11)
        chunks = [d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks())]
        want = d[()]
    assert sorted(c.filter_mask for c in chunks if c.filter_mask) == [2, 3]
    listed = "\n".join(
        f'<dmrpp:chunk offset="{c.byte_offset}" nBytes="{c.size}" '
        f'chunkPositionInArray="[{c.chunk_offset[0]},{c.chunk_offset[1]}]"'
        + (f' fm="{c.filter_mask}"' if c.filter_mask else "") + "/>"
        for c in chunks)
    sidecar = tmp_path / "masked.h5.dmrpp"
    sidecar.write_text(f"""<?xml version="1.0" encoding="ISO-8859-1"?>
<Dataset xmlns="http://xml.opendap.org/ns/DAP/4.0#" xmlns:dmrpp="http://xml.opendap.org/dap/dmrpp/1.0.0#" dapVersion="4.0" dmrVersion="1.0" name="masked.h5" dmrpp:href="data/masked.h5" dmrpp:version="3.21.1">
  <Dimension name="y" size="8"/><Dimension name="x" size="6"/>
  <Int32 name="v"><Dim name="/y"/><Dim name="/x"/>
    <Attribute name="_FillValue" type="Int32"><Value>-7</Value></Attribute>
    <dmrpp:chunks compressionType="shuffle deflate" deflateLevel="4" fillValue="-7" byteOrder="LE">
      <dmrpp:chunkDimensionSizes>3 4</dmrpp:chunkDimensionSizes>
      {listed}
    </dmrpp:chunks>
  </Int32>
</Dataset>
""")
    return sidecar, g, want


def test_chunks_with_filters_skipped_read_as_h5py_reads_them(tmp_path):
    """Chunks a sidecar lists with a filter mask (`fm`: some of the array's filters not
    applied to them, as HDF5 allows) are read when the dataset is built and kept inline,
    re-encoded with every filter: the array reads through zarr-python, and through vzarr's
    VirtualiZarr parser, as h5py reads the granule; `vzarr check-dmrpp` finds the sidecar
    matches, and flags one whose mask was dropped."""
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    import vzarr.virtualizarr

    sidecar, granule, want = masked_pair(tmp_path)
    out = tmp_path / "m.json"
    run_vzarr("build", sidecar, "-o", out, "--small-chunks", "keep")
    refs = json.loads(out.read_text())
    stored = {k: v for k, v in refs["refs"].items() if k.startswith("v/c/")}
    assert sum(isinstance(v, str) for v in stored.values()) == 2, stored  # the masked two
    np.testing.assert_array_equal(zarr.open_group(open_store(refs), mode="r")["v"][...], want)
    store = vzarr.virtualizarr.Parser(small_chunks="keep")(
        sidecar.as_uri(), ObjectStoreRegistry({"file://": LocalStore()}))
    np.testing.assert_array_equal(zarr.open_group(store, mode="r", zarr_format=3)["v"][...], want)
    v = run_vzarr("verify", out, "--trust-references")
    assert "all values match" in v.stdout, v.stdout
    for mode in ([], ["--ranges"]):
        p = run_vzarr("check-dmrpp", sidecar, *mode)
        assert "matches its granule" in p.stdout, p.stdout
    # The masks dropped: the sidecar says those chunks went through every filter.
    sidecar.write_text(sidecar.read_text().replace(' fm="2"', "").replace(' fm="3"', ""))
    for mode, finding in (([], "stale chunks"), (["--ranges"], "undecodable chunks")):
        p = run_vzarr("check-dmrpp", sidecar, *mode, check=False)
        assert p.returncode == 1 and finding in p.stdout, (mode, p.stdout)
