"""vzarr.virtualizarr's parsers as drop-ins for VirtualiZarr 2.8's (issue 43): their signatures,
defaults that combine any file set VirtualiZarr's own parsers combine, and their error class.
Values are compared with netCDF4-python's and h5py's, and with VirtualiZarr's own parsers'
output."""

from __future__ import annotations

from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr

from conftest import FIXTURES

import vzarr  # noqa: E402
import vzarr.virtualizarr  # noqa: E402


def _registry():
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    return ObjectStoreRegistry({"file://": LocalStore()})


def _grouped_file(path: Path) -> Path:
    """An HDF5 file with variables at the root, in a group and in a group under it."""
    rng = np.random.default_rng(3)
    with h5py.File(path, "w") as f:
        f["top"] = np.arange(6, dtype="i4")
        g = f.create_group("sub")
        g.attrs["title"] = "the subgroup"
        g.create_dataset("a", data=rng.normal(size=(4, 5)).astype("f4"), chunks=(2, 5))
        g["b"] = np.arange(4, dtype="i8")
        g.create_group("deeper")["c"] = np.arange(4, dtype="u2")
    return path


def _open(store, group=None):
    import zarr
    return zarr.open_group(store, mode="r", zarr_format=3, path=group or "")


def test_signatures_positional_and_keyword():
    """The constructors take VirtualiZarr 2.8's arguments in its order, and keep them."""
    from virtualizarr.parsers import HDFParser, NetCDF3Parser

    def factory(store, path):  # noqa: ARG001  (never called by vzarr)
        raise AssertionError

    for ours in (vzarr.virtualizarr.Parser, vzarr.virtualizarr.HDFParser):
        for p, q in ((ours("g", ["x"], factory, True), HDFParser("g", ["x"], factory, True)),
                     (ours(group="g", drop_variables=["x"], reader_factory=factory,
                           links_and_references=True),
                      HDFParser(group="g", drop_variables=["x"], reader_factory=factory,
                                links_and_references=True))):
            for name in ("group", "drop_variables", "reader_factory", "links_and_references"):
                assert getattr(p, name) == getattr(q, name), name
        assert ours(None).group is None
    ours = vzarr.virtualizarr.NetCDF3Parser
    for p, q in ((ours("/", ["x"]), NetCDF3Parser("/", ["x"])),
                 (ours(group="/", skip_variables=["x"]), NetCDF3Parser(group="/",
                                                                       skip_variables=["x"]))):
        assert (p.group, p.skip_variables) == (q.group, q.skip_variables)
    # vzarr's own options stay keyword-only.
    with pytest.raises(TypeError):
        vzarr.virtualizarr.Parser(None, None, None, False, False)
    assert vzarr.virtualizarr.Parser(strict=True, small_chunks="inline").small_chunks == "inline"


def test_group_and_drop_variables_as_virtualizarrs_parser(tmp_path):
    """group= gives that group's variables (its subgroups as subgroups), drop_variables= leaves
    names out: the same arrays as VirtualiZarr's HDFParser, values equal to h5py's."""
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    path = _grouped_file(tmp_path / "g.h5")
    url, registry = path.as_uri(), _registry()
    for group in ("sub", "/sub", "sub/"):
        for drop in (None, ["b"]):
            store = vzarr.virtualizarr.Parser(group, drop)(url, registry)
            theirs = HDFParser(group, drop)(url, registry)
            assert set(store._group.arrays) == set(theirs._group.arrays)
            assert set(store._group.groups) == set(theirs._group.groups) == {"deeper"}
            assert store._group.metadata.attributes["title"] == "the subgroup"
            got = _open(store)
            with h5py.File(path) as f:
                for name in store._group.arrays:
                    np.testing.assert_array_equal(got[name][...], f["sub"][name][()])
                np.testing.assert_array_equal(got["deeper/c"][...], f["sub/deeper/c"][()])
    # open_virtual_dataset reads the group's own variables, as with VirtualiZarr's parser.
    vds = open_virtual_dataset(url, registry=registry, parser=vzarr.virtualizarr.Parser("sub"))
    ref = open_virtual_dataset(url, registry=registry, parser=HDFParser("sub"))
    assert sorted(vds.variables) == sorted(ref.variables) == ["a", "b"]
    # The root, by default and with the names VirtualiZarr's parser takes for it.
    for group in (None, "", "/"):
        store = vzarr.virtualizarr.HDFParser(group, drop_variables=["sub"])(url, registry)
        assert set(store._group.arrays) == {"top"} and not store._group.groups
    # A path that is not a group: ValueError, as VirtualiZarr's parser raises.
    for bad in ("nowhere", "top", "sub/a"):
        with pytest.raises(ValueError, match="group"):
            vzarr.virtualizarr.Parser(bad)(url, registry)
        with pytest.raises(ValueError):
            HDFParser(bad)(url, registry)


def test_netcdf3_group_and_skip_variables(tmp_path):
    """A NetCDF3 file: skip_variables= as VirtualiZarr's NetCDF3Parser; any group but the root
    is a ValueError, as theirs."""
    from virtualizarr.parsers import NetCDF3Parser

    path = tmp_path / "c.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as nc:
        nc.createDimension("x", 4)
        for name in ("u", "v", "w"):
            nc.createVariable(name, "f8", ("x",))[:] = np.arange(4) * len(name)
    url, registry = path.as_uri(), _registry()
    store = vzarr.virtualizarr.NetCDF3Parser(None, ["v"])(url, registry)
    theirs = NetCDF3Parser(None, ["v"])(url, registry)
    assert set(store._group.arrays) == set(theirs._group.arrays) == {"u", "w"}
    store = vzarr.virtualizarr.NetCDF3Parser("/")(url, registry)
    with netCDF4.Dataset(path) as nc:
        for name in ("u", "v", "w"):
            np.testing.assert_array_equal(_open(store)[name][...], nc[name][:])
    for parser in (vzarr.virtualizarr.NetCDF3Parser, vzarr.virtualizarr.Parser):
        with pytest.raises(ValueError, match="netCDF3 file has only a root group"):
            parser("sub")(url, registry)
    with pytest.raises(ValueError):
        NetCDF3Parser("sub")(url, registry)


def _series(path: Path, start: int, n: int, fmt: str) -> Path:
    """A file of ``n`` time steps of small uncompressed records (chunks of one step in
    NetCDF4): what vzarr.build's default small-chunk policy merges or inlines."""
    rng = np.random.default_rng(start)
    with netCDF4.Dataset(path, "w", format=fmt) as nc:
        nc.createDimension("time", None)
        nc.createDimension("x", 3)
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = np.arange(start, start + n)
        kw = {"chunksizes": (1, 3)} if fmt == "NETCDF4" else {}
        nc.createVariable("v", "f4", ("time", "x"), **kw)[:] = rng.normal(size=(n, 3))
    return path


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_64BIT_OFFSET"])
def test_default_options_combine_files_of_different_lengths(tmp_path, fmt):
    """With the parser's default options, two files of different lengths combine in
    open_virtual_mfdataset as with VirtualiZarr's own parser, sub-chunk selections work as
    with theirs, and the values read back equal netCDF4-python's."""
    import fsspec
    from virtualizarr import open_virtual_mfdataset
    from virtualizarr.parsers import HDFParser, NetCDF3Parser

    files = [_series(tmp_path / "a.nc", 0, 7, fmt), _series(tmp_path / "b.nc", 7, 12, fmt)]
    urls = [f.as_uri() for f in files]
    theirs_parser = HDFParser() if fmt == "NETCDF4" else NetCDF3Parser()
    kw = dict(registry=_registry(), combine="nested", concat_dim="time", coords="minimal",
              compat="override", data_vars="minimal")
    ref = xr.open_mfdataset(files, engine="netcdf4", combine="nested", concat_dim="time")
    for parser in (vzarr.virtualizarr.Parser(), theirs_parser):
        vds = open_virtual_mfdataset(urls, parser=parser, **kw)
        assert vds["v"].shape == (19, 3)
        # Selections along the chunked axis, as VirtualiZarr allows them on its manifests.
        assert vds.isel(time=slice(2, 9))["v"].shape == (7, 3)
        out = tmp_path / f"{type(parser).__module__}.json"
        vds.vz.to_kerchunk(str(out), format="json")
        fs = fsspec.filesystem("reference", fo=str(out))
        got = xr.open_dataset(fs.get_mapper(""), engine="zarr", consolidated=False,
                              zarr_format=2)
        for name in ("v", "time"):
            np.testing.assert_array_equal(got[name].values, ref[name].values, err_msg=name)


def test_bad_file_is_a_value_error_and_a_vzarr_error(tmp_path):
    """A file that cannot be parsed raises what VirtualiZarr's parsers raise (ValueError),
    still a vzarr.ScanError / VzarrError."""
    from virtualizarr.parsers import NetCDF3Parser

    assert issubclass(vzarr.ScanError, ValueError)
    assert issubclass(vzarr.ScanError, vzarr.VzarrError)
    bad = tmp_path / "truncated.nc"
    with netCDF4.Dataset(bad, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("x", 4)
        nc.createVariable("u", "f8", ("x",))[:] = np.arange(4)
        nc.title = "a header long enough to cut"
    bad.write_bytes(bad.read_bytes()[:40])
    with pytest.raises(ValueError):
        NetCDF3Parser()(bad.as_uri(), _registry())
    for url in (bad.as_uri(), (FIXTURES / "bad_text.nc").as_uri()):
        with pytest.raises(ValueError) as e:
            vzarr.virtualizarr.Parser()(url, _registry())
        assert isinstance(e.value, vzarr.ScanError) and isinstance(e.value, vzarr.VzarrError)
    with pytest.raises(ValueError, match="not an HDF5 or NetCDF file"):
        vzarr.build(FIXTURES / "bad_text.nc")
