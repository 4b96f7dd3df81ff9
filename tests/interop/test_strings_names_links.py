"""Variable-length strings, names Zarr v3 does not allow, and links, in HDF5 and NetCDF4 files
made here with h5py and netCDF4-python: built with vzarr, read back through the manifest with
zarr-python 3.4 and xarray and compared with h5py / netCDF4-python / xarray on the sources; the
same through `vzarr verify` (zarrs reads the manifest, libhdf5 the source)."""

import json
import shutil
from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

from conftest import (
    as_text,
    assert_values_equal,
    build_refs,
    inspect_json,
    open_store,
    run_vzarr,
    verify_refs,
)

ORIGINAL = "vzarr:original_name"
WORDS = ["", "a", "héllo wörld", "日本語", "tab\tand\nnewline", "x" * 300, "émoji 🌍", "", "last"]


def warnings_by_path(stderr: str, src: Path) -> dict:
    """The build's warnings (`vzarr: warning: FILE: PATH: REASON`) by path in the file."""
    prefix = f"vzarr: warning: {src}: "
    return {line[len(prefix):].split(": ")[0]: line for line in stderr.splitlines()
            if line.startswith(prefix)}


def words(n, tag=""):
    return [f"{WORDS[i % len(WORDS)]}{tag}{i if i % 4 else ''}" for i in range(n)]


def make_strings_h5(path: Path):
    """h5py `str` datasets of every layout: chunked with shuffle+gzip and never-written
    chunks, chunked without filters, contiguous, compact, scalar, 2-d with edge chunks,
    ASCII, all empty, and one with a fill value and never-written chunks."""
    utf8, ascii_ = h5py.string_dtype("utf-8"), h5py.string_dtype("ascii")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("chunked_gzip", shape=(23,), chunks=(5,), dtype=utf8,
                             compression="gzip", compression_opts=4, shuffle=True)
        d[:15] = words(15)  # chunks 3 and 4 never written: b'' in h5py
        # fletcher32 is refused for variable-length types by libhdf5 ("not suitable for
        # filters"); a chunked dataset without filters instead.
        f.create_dataset("chunked_plain", data=np.array(words(11, "p"), dtype=object),
                         chunks=(4,), dtype=utf8)
        f.create_dataset("contiguous", data=np.array(words(6, "c"), dtype=object), dtype=utf8)
        f.create_dataset("scalar", data="a scalar, ünïcødé", dtype=utf8)
        two = np.array([[f"r{i}c{j}é" * (i + 1) for j in range(7)] for i in range(5)], dtype=object)
        f.create_dataset("two_d", data=two, chunks=(2, 3), dtype=utf8)
        f.create_dataset("ascii", data=np.array([b"plain", b"", b"ascii text"], dtype=object),
                         dtype=ascii_)
        f.create_dataset("empty_strings", data=np.array([""] * 4, dtype=object), dtype=utf8)
        f.create_dataset("empty_shape", shape=(0,), dtype=utf8)
        d = f.create_dataset("with_fill", shape=(6,), chunks=(2,), dtype=utf8, fillvalue="FILL")
        d[0:2] = ["x", "y"]
        # A compact dataset (data in the object header), through the low-level API.
        tid = h5py.h5t.TypeID.copy(h5py.h5t.C_S1)
        tid.set_size(h5py.h5t.VARIABLE)
        tid.set_cset(h5py.h5t.CSET_UTF8)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((3,))
        h5py.h5d.create(f.id, b"compact", tid, space, dcpl=dcpl)
        f["compact"][:] = ["compact", "ÿ", ""]


def make_strings_nc(path: Path):
    """netCDF4-python `str` variables: with `_FillValue` (contiguous, some elements never
    written: netCDF-C writes the fill), chunked along an unlimited dimension with never-written
    chunks, without a fill value, and a 2-d one."""
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("station", 5)
        nc.createDimension("t", None)
        v = nc.createVariable("name", str, ("station",), fill_value="MISSING")
        v[0], v[2], v[4] = "Oslo", "Tromsø", ""
        lab = nc.createVariable("label", str, ("t",), fill_value="NA", chunksizes=(2,))
        lab[0], lab[7] = "first", "eighth ✓"
        no = nc.createVariable("nofill", str, ("t",), chunksizes=(3,))
        no[1], no[7] = "one", "seven"
        m = nc.createVariable("matrix", str, ("t", "station"))
        for i in range(8):  # all of t: netCDF reads shorter variables padded to its length
            for j in range(5):
                m[i, j] = f"m{i}{j}" * (j % 3)


@pytest.fixture(scope="module")
def strings(tmp_path_factory):
    d = tmp_path_factory.mktemp("strings")
    h5, nc = d / "strings.h5", d / "strings.nc"
    make_strings_h5(h5)
    make_strings_nc(nc)
    out = {}
    for src in (h5, nc):
        ref = d / (src.name + ".json")
        out[src.name] = (src, ref, build_refs(src, ref))
    return out


def h5py_values(src: Path, path: str):
    """What h5py reads. A never-written chunk of a string dataset with a fill value cannot be
    read from a read-only file (libhdf5 would write the fill value into the heap); it is read
    from a copy opened for writing, where the library gives the fill value."""
    try:
        with h5py.File(src, "r") as f:
            return f[path][()]
    except OSError as e:
        assert "no write intent" in str(e), e
        copy = src.with_suffix(".rw" + src.suffix)
        shutil.copy(src, copy)
        with h5py.File(copy, "r+") as f:
            return f[path][()]


def test_h5py_strings_read_back_equal(strings):
    src, _, refs = strings["strings.h5"]
    group = zarr.open_group(open_store(refs), mode="r")
    with h5py.File(src, "r") as f:
        names = list(f)
    assert len(names) == 10
    for path in names:
        expected = h5py_values(src, path)
        got = np.asarray(group[path][...])
        assert got.dtype.kind in "TU", (path, got.dtype)  # a 0-d read gives a str
        assert_values_equal(expected, got, f"strings.h5:{path}")
    meta = json.loads(refs["refs"]["chunked_gzip/zarr.json"])
    assert meta["data_type"] == "string"
    assert meta["codecs"] == [{"name": "vlen-utf8", "configuration": {}}]
    assert meta["fill_value"] == ""
    assert json.loads(refs["refs"]["with_fill/zarr.json"])["fill_value"] == "FILL"
    # Never-written chunks stay missing (they read as the fill value).
    assert "chunked_gzip/c/3" not in refs["refs"] and "with_fill/c/1" not in refs["refs"]
    assert all(v.startswith("base64:") for k, v in refs["refs"].items() if k.startswith("two_d/c/"))


def test_netcdf4_strings_read_back_equal(strings):
    src, _, refs = strings["strings.nc"]
    group = zarr.open_group(open_store(refs), mode="r")
    with netCDF4.Dataset(src) as nc:
        nc.set_auto_mask(False)
        for name, var in nc.variables.items():
            expected = var[...]
            assert_values_equal(expected, group[name][...], f"strings.nc:{name}")
        assert json.loads(refs["refs"]["label/zarr.json"])["fill_value"] == "NA"
    # xarray through the manifest: without masking, the values netCDF4-python reads; masked,
    # the values xarray reads from the source. A string array's `_FillValue` is written as
    # `missing_value` (xarray cannot decode a `_FillValue` attribute of a Zarr string array).
    attrs = json.loads(refs["refs"]["label/zarr.json"])["attributes"]
    assert "_FillValue" not in attrs and attrs["missing_value"] == "NA", attrs
    plain = xr.open_zarr(open_store(refs), consolidated=False, mask_and_scale=False)
    with netCDF4.Dataset(src) as nc:
        nc.set_auto_mask(False)
        for name in plain.data_vars:
            assert_values_equal(nc[name][...], plain[name].values, f"xarray strings.nc:{name}")
    want = xr.open_dataset(src)
    got = xr.open_zarr(open_store(refs), consolidated=False)
    masked = 0
    for name in want.data_vars:
        w, g = want[name].values, got[name].values
        assert w.shape == g.shape and got[name].dims == want[name].dims, name
        for i, x in np.ndenumerate(w):
            y = g[i]
            if isinstance(x, float):  # masked
                assert isinstance(y, float) and np.isnan(y), (name, i, x, y)
                masked += 1
            else:
                assert str(x) == str(y), (name, i, x, y)
    assert masked > 0


def test_verify_compares_strings_with_libhdf5(strings):
    for _, ref, _ in strings.values():
        report = verify_refs(ref)
        assert "all values match" in report, report


def test_strings_above_the_limit_are_left_out_with_a_warning(strings, tmp_path):
    src, _, _ = strings["strings.h5"]
    out = tmp_path / "limited.json"
    p = run_vzarr("build", src, "-o", out, "--max-string-bytes", "100")
    refs = json.loads(out.read_text())
    warned = {k: v for k, v in warnings_by_path(p.stderr, src).items() if "--max-string-bytes" in v}
    # Under the limit (scalar: 4 + 4 + 20 bytes) kept; the large ones left out, named, with
    # their size and the limit.
    assert "scalar/zarr.json" in refs["refs"] and "scalar" not in warned
    for big in ("chunked_gzip", "two_d", "contiguous"):
        assert f"{big}/zarr.json" not in refs["refs"], big
        assert big in warned, (big, p.stderr)
        assert "limit of 100 bytes" in warned[big] and "at least" in warned[big], warned[big]
    skipped = {s["path"]: s["reason"] for s in inspect_json(src, "--max-string-bytes", "100")["skipped"]}
    assert set(warned) <= set(skipped)


def make_names_h5(path: Path):
    """Names Zarr v3 does not allow (`__x`, `__`, `..`, `...`, `zarr.json`), a group `__g`,
    a name its mapped form collides with (`%5F_x`), and a dimension scale `__t`."""
    with h5py.File(path, "w") as f:
        for i, n in enumerate(["__x", "__", "..", "...", "zarr.json", "%5F_x", "plain"]):
            f.create_dataset(n, data=np.arange(3, dtype="i4") + 10 * i)
        g = f.create_group("__g")
        g["v"] = np.arange(4.0)
        g.create_group("..").create_dataset("deep", data=np.array([b"a", b"bc"], dtype="S2"))
        f["__t"] = np.arange(5.0)
        f["__t"].make_scale("__t")
        f["data"] = np.arange(10.0).reshape(5, 2)
        f["data"].dims[0].attach_scale(f["__t"])


def zarr_allows(name: str) -> bool:
    """The node-name rules of the Zarr v3 core specification (and not the metadata key)."""
    return (name != "" and "/" not in name and set(name) != {"."} and not name.startswith("__")
            and name != "zarr.json")


def test_names_zarr_does_not_allow_are_mapped(tmp_path):
    src = tmp_path / "names.h5"
    make_names_h5(src)
    out = tmp_path / "names.json"
    refs = build_refs(src, out)
    group = zarr.open_group(open_store(refs), mode="r")
    # The documented mapping, a collision resolved with a suffix.
    expected = {
        "__x": "%5F_x~1", "__": "%5F_", "..": "%2E.", "...": "%2E..", "zarr.json": "%7Aarr.json",
        "%5F_x": "%5F_x", "plain": "plain", "__g/v": "%5F_g/v", "__g/../deep": "%5F_g/%2E./deep",
        "__t": "%5F_t", "data": "data",
    }
    with h5py.File(src, "r") as f:
        h5 = {}
        f.visititems(lambda n, o: h5.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
        assert set(h5) == set(expected)
        for h5path, zpath in expected.items():
            assert zpath in group, zpath
            assert_values_equal(h5[h5path], group[zpath][...], f"names.h5:{h5path}")
            # Every node on the way has an allowed name and keeps its source name.
            parts, sparts = zpath.split("/"), h5path.split("/")
            for k, (z, s) in enumerate(zip(parts, sparts)):
                assert zarr_allows(z), z
                node = group["/".join(parts[: k + 1])]
                assert node.attrs.get(ORIGINAL, z) == s, (zpath, dict(node.attrs))
                assert (ORIGINAL in node.attrs) == (z != s), zpath
    # The renamed dimension scale still names its dimension, so xarray pairs them.
    ds = xr.open_zarr(open_store(refs), consolidated=False)
    assert ds["data"].dims == ("%5F_t", "phony_dim_1") or ds["data"].dims[0] == "%5F_t", ds["data"].dims
    assert "%5F_t" in ds.coords
    # zarrs opens every node and libhdf5 reads each array by its source path.
    report = verify_refs(out)
    assert "all values match" in report, report
    # Deterministic.
    again = build_refs(src, tmp_path / "again.json")
    assert again["refs"] == refs["refs"]


def make_links_h5(path: Path, other: Path):
    """Soft links to a dataset, to a group (with a cycle below it), relative, dangling; an
    external link; a second hard link to a dataset and to a group."""
    with h5py.File(other, "w") as f:
        f["x"] = np.arange(3)
    with h5py.File(path, "w") as f:
        f["a"] = np.arange(6, dtype="f4")
        g = f.create_group("g")
        g["x"] = np.array(["p", "qr"], dtype=h5py.string_dtype())
        g["rel"] = h5py.SoftLink("x")
        g["up"] = h5py.SoftLink("/g")
        f["s_soft"] = h5py.SoftLink("/a")
        f["sg"] = h5py.SoftLink("/g")
        f["dangling"] = h5py.SoftLink("/nowhere")
        f["ext"] = h5py.ExternalLink(other.name, "/x")
        f["z_hard"] = f["a"]
        f["z_group"] = f["g"]


def test_links_as_h5py_shows_them(tmp_path):
    src, other = tmp_path / "links.h5", tmp_path / "other.h5"
    make_links_h5(src, other)
    out = tmp_path / "links.json"
    p = run_vzarr("build", src, "-o", out)
    refs = json.loads(out.read_text())
    group = zarr.open_group(open_store(refs), mode="r")
    with h5py.File(src, "r") as f:
        # Soft links: the dataset (or group) under the link's name, as f[name] gives it.
        # Hard links: the object under each of its names, as f[name] (and netCDF-C) gives it,
        # though h5py's visit shows it once.
        shown = ("a", "g/x", "g/rel", "s_soft", "sg/x", "sg/rel", "z_hard", "z_group/x",
                 "z_group/rel")
        for path in shown:
            assert_values_equal(f[path][()], group[path][...], f"links.h5:{path}")
        visited = []
        f.visit(visited.append)
    assert "z_hard" not in visited and "z_group" not in visited
    arrays = {k[: -len("/zarr.json")] for k, v in refs["refs"].items()
              if k.endswith("/zarr.json") and json.loads(v)["node_type"] == "array"}
    assert arrays == set(shown), arrays
    # The second name references the same chunks.
    assert refs["refs"]["z_hard/c/0"] == refs["refs"]["a/c/0"]
    warnings = warnings_by_path(p.stderr, src)
    assert "/nowhere" in warnings["dangling"] and "dangling" in warnings["dangling"]
    assert "other.h5" in warnings["ext"] and '"/x"' in warnings["ext"] and "external" in warnings["ext"]
    assert "cycle" in warnings["g/up"] and "cycle" in warnings["sg/up"]
    assert "z_hard" not in warnings and "z_group" not in warnings
    # The same through zarrs and libhdf5.
    report = verify_refs(out)
    assert "all values match" in report, report


def make_month(path: Path, start: int, days: int, stations):
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", None)
        nc.createDimension("station", len(stations))
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "days since 2001-01-01"
        t.calendar = "standard"
        t[:] = np.arange(start, start + days) + 0.5
        st = nc.createVariable("station", str, ("station",))
        for i, s in enumerate(stations):
            st[i] = s
        lab = nc.createVariable("label", str, ("time",), chunksizes=(10,), fill_value="NA")
        for i in range(days):
            lab[i] = f"day {start + i} ✓" if i % 7 else ""
        tas = nc.createVariable("tas", "f4", ("time", "station"), chunksizes=(10, 2))
        tas[:] = np.arange(days * len(stations), dtype="f4").reshape(days, -1) + start


def test_string_variables_concatenate_like_open_mfdataset(tmp_path):
    stations = ["Oslo", "Tromsø", "Bergen"]
    files = []
    for k, (start, days) in enumerate([(0, 31), (31, 28), (59, 31)]):
        files.append(tmp_path / f"m{k}.nc")
        make_month(files[-1], start, days, stations)
    out = tmp_path / "combined.json"
    p = run_vzarr("build", *files, "--concat-dim", "time", "-o", out)
    assert "re-encoded inline" in p.stdout, p.stdout
    refs = json.loads(out.read_text())
    got = xr.open_zarr(open_store(refs), consolidated=False)
    want = xr.open_mfdataset(files, combine="nested", concat_dim="time", data_vars="minimal",
                             coords="minimal", compat="override")
    assert got["label"].dims == ("time",) and got["station"].dims == ("station",)
    for name in ("label", "station", "tas"):
        w, g = want[name].values, got[name].values
        assert w.shape == g.shape, name
        for i, x in np.ndenumerate(w):
            y = g[i]
            if isinstance(x, float) and np.isnan(x):
                assert isinstance(y, float) and np.isnan(y), (name, i, y)
            else:
                assert x == y, (name, i, x, y)
    assert_values_equal(as_text(want["label"].values.astype(str)), as_text(got["label"].values.astype(str)),
                        "label")
    report = verify_refs(out)
    assert "all values match" in report, report
    # A static string variable that differs between files is refused, naming it.
    want.close()
    files[1] = tmp_path / "m1_other_stations.nc"
    make_month(files[1], 31, 28, ["Oslo", "Tromsø", "Stavanger"])
    p = run_vzarr("build", *files, "--concat-dim", "time", "-o", tmp_path / "bad.json", check=False)
    assert p.returncode != 0 and "station" in p.stderr and "identical" in p.stderr, p.stderr
