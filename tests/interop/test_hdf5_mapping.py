"""What vzarr makes of HDF5 objects, in `vzarr build` and in the VirtualiZarr parser alike,
checked against h5py / netCDF4-python (and xarray over them) reading the source: attribute
arrays keep their shape, a bool `_FillValue` is kept, a chunk longer than an unlimited
dimension's length is cut to it (so that such files concatenate, in `vzarr build` and in
VirtualiZarr's `open_virtual_mfdataset`), and variables come out in the file's order."""

import json
from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

from conftest import build_refs, open_store, run_vzarr


def _parser_store(path: Path, **options):
    """The ManifestStore of vzarr's VirtualiZarr parser for `path`."""
    import vzarr
    import vzarr.virtualizarr
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    return vzarr.virtualizarr.Parser(**options)(path.as_uri(), registry)


def _registry():
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    return ObjectStoreRegistry({"file://": LocalStore()})


def _as_json(v):
    """An attribute value as h5py reads it, as JSON-like Python in numpy's `tolist` shape:
    bytes decoded, one element a scalar."""
    if isinstance(v, (bytes, np.bytes_)):
        return v.decode()
    if isinstance(v, np.ndarray):
        if v.size == 1:
            return _as_json(v.ravel()[0])
        if v.dtype.kind in "SO":
            return np.vectorize(lambda x: x.decode() if isinstance(x, bytes) else x,
                                otypes=[object])(v).tolist()
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


# --- attribute arrays keep their shape ----------------------------------------------------------

def _shaped_attributes_file(path: Path) -> Path:
    with h5py.File(path, "w") as f:
        f.attrs["s2"] = np.array([[b"a", b"b"], [b"c", b"d"]])
        f.attrs["v2"] = np.array([["w", "x"], ["y", "z"]], dtype=h5py.string_dtype())
        d = f.create_dataset("d", data=np.arange(4, dtype="i2"))
        d.attrs["i2"] = np.arange(6, dtype="i4").reshape(2, 3)
        d.attrs["f3"] = np.arange(8, dtype="f8").reshape(2, 2, 1, 2) / 4
        d.attrs["one"] = np.array([[7]], dtype="u1")
        d.attrs["flat"] = np.arange(3, dtype="i8")
    return path


def test_attribute_arrays_keep_their_shape(tmp_path):
    src = _shaped_attributes_file(tmp_path / "attrs.h5")
    with h5py.File(src, "r") as f:
        want = {"": {k: _as_json(v) for k, v in f.attrs.items()},
                "d": {k: _as_json(v) for k, v in f["d"].attrs.items()}}
    assert want[""]["s2"] == [["a", "b"], ["c", "d"]]
    assert want["d"]["one"] == 7
    refs = build_refs(src, tmp_path / "refs.json")
    group = zarr.open_group(open_store(refs), mode="r")
    assert dict(group.attrs) == want[""]
    assert dict(group["d"].attrs) == want["d"]
    # xarray's view: the same lists.
    ds = xr.open_zarr(open_store(refs), consolidated=False)
    assert ds.attrs["s2"] == [["a", "b"], ["c", "d"]]
    assert ds["d"].attrs["i2"] == [[0, 1, 2], [3, 4, 5]]
    # The parser's ManifestStore.
    store = _parser_store(src)
    pgroup = zarr.open_group(store, mode="r", zarr_format=3)
    assert dict(pgroup.attrs) == want[""]
    assert dict(pgroup["d"].attrs) == want["d"]


# --- a bool _FillValue is kept ------------------------------------------------------------------

def _bool_fill_file(path: Path) -> Path:
    """A bool dataset with a `_FillValue` of False, as h5py writes it (and as xarray writes a
    bool variable's encoding through h5netcdf)."""
    with h5py.File(path, "w") as f:
        d = f.create_dataset("flag", data=np.array([True, False, True, True]))
        d.attrs["_FillValue"] = np.bool_(False)
        e = f.create_dataset("other", data=np.array([False, True]))
        e.attrs["_FillValue"] = np.bool_(True)
    return path


def test_bool_fill_value_is_kept(tmp_path):
    src = _bool_fill_file(tmp_path / "flags.h5")
    refs = build_refs(src, tmp_path / "refs.json")
    skipped = json.loads(run_vzarr("inspect", src, "--json").stdout)["skipped"]
    assert not [s for s in skipped if "_FillValue" in s["path"]], skipped
    group = zarr.open_group(open_store(refs), mode="r")
    assert group["flag"].attrs["_FillValue"] is False
    assert group["other"].attrs["_FillValue"] is True
    # xarray decodes it as it decodes the source (h5netcdf over h5py): masked where it equals
    # the fill value.
    ours = xr.open_zarr(open_store(refs), consolidated=False)
    theirs = xr.open_dataset(src, engine="h5netcdf", phony_dims="sort")
    masked = [None if x != x else x for x in (True, np.nan, True, True)]
    for v in ("flag", "other"):
        got = [None if x != x else x for x in ours[v].values.tolist()]
        assert got == [None if x != x else x for x in theirs[v].values.tolist()], v
        assert got == masked[:len(got)] if v == "flag" else got == [False, None], v
        raw = xr.open_zarr(open_store(refs), consolidated=False, mask_and_scale=False)[v]
        with h5py.File(src, "r") as f:
            np.testing.assert_array_equal(raw.values, f[v][()], err_msg=v)
    # The parser's ManifestStore keeps it too.
    pgroup = zarr.open_group(_parser_store(src), mode="r", zarr_format=3)
    assert pgroup["flag"].attrs["_FillValue"] is False


# --- chunks longer than an unlimited dimension --------------------------------------------------

def _unlimited_files(tmp_path: Path) -> list[Path]:
    """Two netCDF-4 files with 5 values each on an unlimited dimension (netCDF-C chunks them by
    1024): the coordinate uncompressed, a variable compressed, a string variable (its strings
    stored inline)."""
    out = []
    for k in range(2):
        p = tmp_path / f"u{k}.nc"
        with netCDF4.Dataset(p, "w") as nc:
            nc.createDimension("t", None)
            t = nc.createVariable("t", "i4", ("t",))
            t[:] = np.arange(5) + 5 * k
            v = nc.createVariable("v", "f4", ("t",), zlib=True)
            v[:] = np.arange(5, dtype="f4") * 10 + 50 * k
            names = nc.createVariable("name", str, ("t",))
            names[:] = np.array([f"s{5 * k + i}" for i in range(5)], dtype=object)
        out.append(p)
    return out


def test_single_chunk_on_an_unlimited_dimension_is_cut_to_its_length(tmp_path):
    files = _unlimited_files(tmp_path)
    with h5py.File(files[0], "r") as f:
        assert f["t"].chunks == (1024,) and f["t"].shape == (5,)
    # Referenced as the scanner finds it: the uncompressed chunk cut to 5 values (its first
    # 20 bytes), the compressed one kept (as VirtualiZarr's HDFParser does).
    refs = build_refs(files[0], tmp_path / "keep.json", "--small-chunks", "keep")
    meta = json.loads(refs["refs"]["t/zarr.json"])
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [5]
    assert refs["refs"]["t/c/0"][2] == 20
    vmeta = json.loads(refs["refs"]["v/zarr.json"])
    assert vmeta["chunk_grid"]["configuration"]["chunk_shape"] == [1024]
    group = zarr.open_group(open_store(refs), mode="r")
    with netCDF4.Dataset(files[0]) as nc:
        np.testing.assert_array_equal(group["t"][...], nc["t"][...])
        np.testing.assert_array_equal(group["v"][...], nc["v"][...])
    # With the defaults, the small compressed one is kept inline, cut to its length too.
    refs = build_refs(files[0], tmp_path / "default.json")
    vmeta = json.loads(refs["refs"]["v/zarr.json"])
    assert vmeta["chunk_grid"]["configuration"]["chunk_shape"] == [5]
    # The same chunk shapes as VirtualiZarr's HDFParser, in the parser with small_chunks="keep".
    from virtualizarr.parsers import HDFParser
    theirs = HDFParser()(files[0].as_uri(), _registry())._group.arrays
    ours = _parser_store(files[0], small_chunks="keep")._group.arrays
    for name in ("t", "v", "name"):
        assert ours[name].metadata.chunks == theirs[name].metadata.chunks, name
    # The strings are inline: their chunk is cut to the array too.
    assert ours["name"].metadata.chunks == (5,)


def test_files_on_an_unlimited_dimension_concatenate(tmp_path):
    files = _unlimited_files(tmp_path)
    expected = xr.open_mfdataset(files, engine="netcdf4", combine="nested", concat_dim="t")
    # vzarr build, with either small-chunk policy.
    for policy in ("keep", "inline"):
        refs = build_refs(files[0], tmp_path / f"{policy}.json", files[1], "--concat-dim", "t",
                          "--small-chunks", policy)
        got = xr.open_zarr(open_store(refs), consolidated=False)
        np.testing.assert_array_equal(got["t"].values, np.arange(10))
        np.testing.assert_array_equal(got["v"].values, expected["v"].values)
        assert got["name"].values.tolist() == expected["name"].values.tolist()
        meta = json.loads(refs["refs"]["name/zarr.json"])
        assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [5]
    # VirtualiZarr's open_virtual_mfdataset with vzarr's parser, written with its kerchunk
    # writer and read back.
    import fsspec
    import vzarr.virtualizarr
    from virtualizarr import open_virtual_mfdataset
    # With the parser's default (small_chunks="keep"), the compressed variable keeps its chunk
    # of 1024 (as with VirtualiZarr's HDFParser) and is loaded, as VirtualiZarr's warning
    # advises; with small_chunks="inline" it is kept inline, cut to its length, and
    # concatenates too. (The strings are loaded: VirtualiZarr's kerchunk writer has no
    # variable-length strings.)
    for options, load in (({}, ["v", "name"]), ({"small_chunks": "inline"}, ["name"])):
        vds = open_virtual_mfdataset([f.as_uri() for f in files], registry=_registry(),
                                     parser=vzarr.virtualizarr.Parser(**options),
                                     combine="nested", concat_dim="t", coords="minimal",
                                     compat="override", data_vars="minimal",
                                     loadable_variables=load)
        out = tmp_path / "mf.json"
        vds.vz.to_kerchunk(str(out), format="json")
        fs = fsspec.filesystem("reference", fo=str(out))
        got = xr.open_dataset(fs.get_mapper(""), engine="zarr", consolidated=False,
                              zarr_format=2)
        np.testing.assert_array_equal(got["t"].values, np.arange(10), err_msg=str(options))
        np.testing.assert_array_equal(got["v"].values, expected["v"].values,
                                      err_msg=str(options))


# --- variables in the file's order --------------------------------------------------------------

def _ordered_netcdf(path: Path) -> Path:
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("x", 3)
        for name in ("zeta", "x", "alpha", "mid"):
            nc.createVariable(name, "f4", ("x",))[:] = np.arange(3)
        g = nc.createGroup("sub")
        for name in ("b", "a"):
            g.createVariable(name, "i2", ("x",))[:] = np.arange(3)
    return path


def test_variables_in_the_files_order(tmp_path):
    # netCDF-4 tracks creation order: netCDF4-python, xarray and h5py list it.
    src = _ordered_netcdf(tmp_path / "order.nc")
    want = list(xr.open_dataset(src, engine="netcdf4").variables)
    with netCDF4.Dataset(src) as nc:
        assert list(nc.variables) == ["zeta", "x", "alpha", "mid"]
        sub = list(nc["sub"].variables)
    refs = build_refs(src, tmp_path / "refs.json")
    assert list(xr.open_zarr(open_store(refs), consolidated=False).variables) == want
    assert list(xr.open_zarr(open_store(refs), consolidated=True).variables) == want
    group = zarr.open_group(open_store(refs), mode="r")
    assert [k for k, _ in group["sub"].arrays()] == sub == ["b", "a"]
    # The parser: the ManifestGroup's order, and the virtual dataset's, are VirtualiZarr's
    # and xarray's.
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser
    store = _parser_store(src)
    theirs = HDFParser()(src.as_uri(), _registry())
    assert list(store._group.arrays) == list(theirs._group.arrays)
    import vzarr.virtualizarr
    vds = open_virtual_dataset(src.as_uri(), registry=_registry(),
                               parser=vzarr.virtualizarr.Parser())
    their_vds = open_virtual_dataset(src.as_uri(), registry=_registry(), parser=HDFParser())
    assert list(vds.variables) == list(their_vds.variables)
    assert list(vds.data_vars) == list(xr.open_dataset(src, engine="netcdf4").data_vars)
    # An HDF5 file that does not track creation order: the order h5py lists (by name); one
    # that does (h5py's track_order): creation order.
    for track in (False, True):
        p = tmp_path / f"h5-{track}.h5"
        with h5py.File(p, "w", track_order=track) as f:
            for name in ("zeta", "alpha", "mid"):
                f[name] = np.arange(3)
        with h5py.File(p, "r") as f:
            h5_order = list(f)
        assert h5_order == (["zeta", "alpha", "mid"] if track else ["alpha", "mid", "zeta"])
        refs = build_refs(p, tmp_path / f"h5-{track}.json")
        assert [k for k, _ in zarr.open_group(open_store(refs), mode="r").arrays()] == h5_order
        assert list(_parser_store(p)._group.arrays) == h5_order
