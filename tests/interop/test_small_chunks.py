"""Small chunks (issue 29): files whose chunks are a few bytes each (observational files:
sondes with thousands of records of interleaved NetCDF3 record variables, netCDF-4 files
chunked by 1 along an unlimited time axis, a NetCDF3 file whose only record variable is
written record after record) are built into outputs that cost about what their files cost:
adjacent uncompressed chunks merged into larger virtual chunks, arrays whose references would
stay tiny kept inline. Every array read back through the outputs (kerchunk JSON through
zarr-python and xarray, Icechunk through icechunk-python, the VirtualiZarr parser's
ManifestStore) equals what netCDF4-python reads from the files; combined, stacked, appended
and sharded builds included."""

import json
import re
import shutil
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

from conftest import assert_values_equal, build_refs, open_store, run_vzarr, verify_refs


def sonde(path: Path, records: int, t0: float = 0.0, nvars: int = 25, fmt="NETCDF3_CLASSIC",
          seed: int = 0):
    """A radiosonde-like file: `nvars` record variables of 4 or 8 bytes a record (the
    layout of ARM's sonde files), a CF time coordinate, a few masked values and a scalar."""
    rng = np.random.default_rng([records, seed])
    with netCDF4.Dataset(path, "w", format=fmt) as nc:
        nc.createDimension("time", None)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "seconds since 2024-01-01 00:00:00", "standard"
        t[:] = t0 + np.arange(records, dtype="f8")
        nc.createVariable("lat", "f4", ())[...] = 36.6
        for k in range(nvars - 1):
            kind = ("f4", "f8", "i4")[k % 3]
            v = nc.createVariable(f"v{k}", kind, ("time",), fill_value=-9999)
            v.units = "1"
            if kind == "i4":
                v[:] = rng.integers(-1000, 1000, records)
            else:
                v[:] = rng.normal(k, 1, records)
            v[records // 2] = np.ma.masked
    return path


def source_values(path: Path) -> dict:
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        return {n: v[...] for n, v in nc.variables.items()}


def check_values(refs_or_group, path: Path, where: str):
    group = refs_or_group
    if isinstance(refs_or_group, dict):
        group = zarr.open_group(open_store(refs_or_group), mode="r", zarr_format=3)
    for name, want in source_values(path).items():
        assert_values_equal(want, group[name][...], f"{where}:{name}")


def chunk_refs(refs: dict) -> list:
    return [v for k, v in refs["refs"].items() if not k.endswith("zarr.json") and isinstance(v, list)]


def test_a_sonde_file_is_kept_inline_and_reads_as_the_file(tmp_path):
    src = sonde(tmp_path / "sonde.nc", 4176)
    kept = build_refs(src, tmp_path / "keep.json", "--small-chunks", "keep")
    assert len(chunk_refs(kept)) == 4176 * 25 + 1
    p = run_vzarr("build", src, "-o", tmp_path / "out.json")
    assert "small chunks: 104401 references -> 0" in p.stdout, p.stdout
    refs = json.loads((tmp_path / "out.json").read_text())
    assert chunk_refs(refs) == []
    # The output costs less than the file (4,176 records of 25 variables: 460 KB).
    size, out = src.stat().st_size, (tmp_path / "out.json").stat().st_size
    assert out < size, (out, size)
    check_values(refs, src, "sonde")
    # xarray decodes it as it decodes the file: masked values, CF time.
    got = xr.open_zarr(open_store(refs), consolidated=False)
    want = xr.open_dataset(src)
    xr.testing.assert_identical(got.load(), want.load())
    assert "all values match" in verify_refs(tmp_path / "out.json")
    # `inspect` says so without building.
    text = run_vzarr("inspect", src).stdout
    assert "small chunks (what a build does with them): 104401 references -> 0" in text, text
    assert "v0: kept inline (16.3 KiB decoded) instead of 4176 references" in text, text


def test_a_single_record_variable_is_merged_in_place(tmp_path):
    # NetCDF3 with one record variable: records back to back, one 4-byte reference each.
    src = tmp_path / "one.nc"
    with netCDF4.Dataset(src, "w", format="NETCDF3_64BIT_OFFSET") as nc:
        nc.createDimension("time", None)
        v = nc.createVariable("x", "f4", ("time",))
        v[:] = np.arange(1_000_000, dtype="f4")
    refs = build_refs(src, tmp_path / "out.json", "--chunk-target", "1MiB")
    meta = json.loads(refs["refs"]["x/zarr.json"])
    # 1,000,000 values of 4 bytes in chunks of 250,000 (a divisor near 1 MiB: regular).
    assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [250_000], meta
    assert meta["codecs"] == [{"name": "bytes", "configuration": {"endian": "big"}}]
    rs = chunk_refs(refs)
    assert len(rs) == 4 and all(r[2] == 1_000_000 for r in rs), rs[:2]
    check_values(refs, src, "one")
    assert "all values match" in verify_refs(tmp_path / "out.json")


def netcdf4_chunked_by_one(path: Path, steps: int, zlib: bool, by_variable: bool):
    """A netCDF-4 file chunked 1 along its unlimited time axis (as loggers write them),
    written one variable at a time (chunks of a variable back to back) or one step at a time
    (chunks of the variables interleaved)."""
    rng = np.random.default_rng(steps)
    data = {f"v{k}": rng.normal(k, 1, (steps, 6)).astype("f4") for k in range(4)}
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", None)
        nc.createDimension("station", 6)
        t = nc.createVariable("time", "f8", ("time",), chunksizes=(1,), zlib=zlib)
        t.units = "minutes since 2024-01-01"
        vs = {n: nc.createVariable(n, "f4", ("time", "station"), chunksizes=(1, 6), zlib=zlib)
              for n in data}
        if by_variable:
            t[:] = np.arange(steps)
            for n, v in vs.items():
                v[:] = data[n]
        else:
            for i in range(steps):
                t[i] = i
                for n, v in vs.items():
                    v[i] = data[n][i]
    return path


@pytest.mark.parametrize("zlib, by_variable", [(True, False), (False, True), (False, False)])
def test_netcdf4_files_chunked_by_one(tmp_path, zlib, by_variable):
    src = netcdf4_chunked_by_one(tmp_path / "log.nc", 2000, zlib, by_variable)
    # Adjacent chunks would merge into a rectilinear axis; below the limit the arrays (48 KB
    # each) are kept inline instead, in regular chunks: here they are over it.
    limit = ["--inline-max", "16KiB"] if not zlib and by_variable else []
    p = run_vzarr("build", src, "-o", tmp_path / "out.json", *limit)
    refs = json.loads((tmp_path / "out.json").read_text())
    rs = chunk_refs(refs)
    small = [r for r in rs if r[2] < 1024]
    assert not small, (p.stdout, small[:3])
    if not zlib and by_variable:
        # Adjacent uncompressed chunks: merged, the data left in place. HDF5 puts the nodes
        # of a variable's chunk index among its chunks as the variable grows, so the runs
        # of adjacent chunks end every 85 steps or so (2 KiB).
        assert "7898 merged away" in p.stdout and 50 <= len(rs) <= 100, p.stdout
    else:
        # Interleaved or compressed: kept inline.
        assert rs == [], p.stdout
    check_values(refs, src, f"log zlib={zlib} by_variable={by_variable}")
    assert "all values match" in verify_refs(tmp_path / "out.json")


def test_combined_stacked_appended_sharded_and_icechunk(tmp_path):
    """Three sonde files of different lengths: concatenated along time (rectilinear inline
    chunks where they must be), stacked along a new dimension, appended to (byte-identical to
    the full build), built from shards (byte-identical) and into an Icechunk repository
    (icechunk-python reads what netCDF4-python reads)."""
    files = [sonde(tmp_path / f"s{k}.nc", n, t0=10_000 * k, nvars=6) for k, n in
             enumerate((700, 900, 650))]
    full = tmp_path / "full.json"
    refs = build_refs(tmp_path / "s0.nc", full, tmp_path / "s1.nc", tmp_path / "s2.nc",
                      "--concat-dim", "time", "--allow-gaps")
    assert chunk_refs(refs) == []
    got = xr.open_zarr(open_store(refs), consolidated=False).load()
    want = xr.open_mfdataset(files, combine="nested", concat_dim="time", data_vars="minimal",
                             coords="minimal", compat="override").load()
    xr.testing.assert_identical(got, want)
    assert "all values match" in verify_refs(full)
    # Appending the third file to a build of two gives the full build, byte for byte.
    app = tmp_path / "app.json"
    run_vzarr("build", files[0], files[1], "--concat-dim", "time", "--allow-gaps", "-o", app)
    run_vzarr("build", "--append", files[2], "--allow-gaps", "-o", app)
    assert app.read_bytes() == full.read_bytes()
    # A policy other than the default is recorded and kept by an append.
    merged = tmp_path / "merged.json"
    run_vzarr("build", files[0], files[1], "--concat-dim", "time", "--allow-gaps", "-o", merged,
              "--small-chunks", "merge")
    run_vzarr("build", "--append", files[2], "--allow-gaps", "-o", merged)
    whole = tmp_path / "whole.json"
    run_vzarr("build", *files, "--concat-dim", "time", "--allow-gaps", "-o", whole,
              "--small-chunks", "merge")
    assert merged.read_bytes() == whole.read_bytes()
    assert json.loads(whole.read_text())["vzarr"]["small_chunks"]["mode"] == "merge"
    # Shards, then combine: the same bytes.
    parts = []
    for k in range(2):
        part = tmp_path / f"part{k}.json"
        run_vzarr("scan", *files, "--shard", f"{k}/2", "-o", part)
        parts.append(part)
    combined = tmp_path / "combined.json"
    run_vzarr("combine", *parts, "--concat-dim", "time", "--allow-gaps", "-o", combined)
    assert combined.read_bytes() == full.read_bytes()
    # Stacked along a new dimension (members of one length and time axis).
    for k in range(3):
        sonde(tmp_path / f"m{k}.nc", 650, nvars=6, seed=k)
    members = [tmp_path / f"m{k}.nc" for k in range(3)]
    stacked = build_refs(members[0], tmp_path / "stack.json", members[1], members[2],
                         "--new-dim", "member")
    assert chunk_refs(stacked) == []
    g = zarr.open_group(open_store(stacked), mode="r", zarr_format=3)
    for k, m in enumerate(members):
        for name, values in source_values(m).items():
            # The dimension coordinate is kept once; every other variable is stacked.
            got = g[name][...] if name == "time" else g[name][k]
            assert_values_equal(values, got, f"stack {k}:{name}")
    # Icechunk: the inline chunks are native chunks of the repository.
    import icechunk

    repo_dir = tmp_path / "repo"
    run_vzarr("build", *files, "--concat-dim", "time", "--allow-gaps", "--format", "icechunk",
              "-o", repo_dir)
    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(repo_dir)))
    session = repo.readonly_session("main")
    ig = zarr.open_group(session.store, mode="r", zarr_format=3)
    xr.testing.assert_identical(xr.open_zarr(session.store, consolidated=False).load(), want)
    raw = np.concatenate([source_values(f)["v0"] for f in files])
    assert_values_equal(raw, ig["v0"][...], "icechunk:v0")
    assert "all values match" in verify_refs(repo_dir)


def test_limits_leave_arrays_referenced_with_a_warning(tmp_path):
    src = sonde(tmp_path / "sonde.nc", 3000, nvars=4)
    p = run_vzarr("build", src, "-o", tmp_path / "out.json", "--inline-max", "16KiB")
    # v1 (3,000 random float64: 24,000 bytes, about as many compressed) stays referenced,
    # named with what it would store; time (float64 too, but a ramp: it compresses to a
    # fraction) and the others are inlined: the bound counts what is stored.
    assert re.search(r"v1: 3000 small references kept: inlining it would take (1[6-9]|2\d)\.\d "
                     r"KiB, above the per-array limit of 16\.0 KiB", p.stderr), p.stderr
    assert "time:" not in p.stderr, p.stderr
    assert "--inline-max" in p.stderr, p.stderr
    refs = json.loads((tmp_path / "out.json").read_text())
    assert len(chunk_refs(refs)) == 3000
    check_values(refs, src, "limited")
    p = run_vzarr("build", src, "-o", tmp_path / "total.json", "--inline-total", "30KiB")
    assert "would exceed the build's limit of 30.0 KiB inline" in p.stderr, p.stderr
    check_values(json.loads((tmp_path / "total.json").read_text()), src, "total")
    # Sizes without inlining are refused, by name.
    p = run_vzarr("build", src, "-o", tmp_path / "x.json", "--small-chunks", "keep",
                  "--chunk-target", "1MiB", check=False)
    assert p.returncode != 0 and "small chunks are kept as they are" in p.stderr, p.stderr


def test_python_build_and_the_virtualizarr_parser(tmp_path):
    import vzarr
    import vzarr.virtualizarr
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    src = sonde(tmp_path / "sonde.nc", 1500, nvars=8)
    refs = vzarr.build(src)
    assert refs.report.summary["references_inlined"] == 1500 * 8 + 1
    assert refs.report.summary["chunks"] == 0
    cli = build_refs(src, tmp_path / "cli.json")
    assert refs == cli
    kept = vzarr.build(src, small_chunks="keep")
    assert len(chunk_refs(kept)) == 1500 * 8 + 1
    limited = vzarr.build(src, inline_max="4KiB")
    assert any("small references kept" in w and "inline_max=" in w
               for w in limited.report.warnings), limited.report.warnings
    with pytest.raises(ValueError, match="small_chunks"):
        vzarr.build(src, small_chunks="everything")
    # The parser with small_chunks="inline": the arrays inline in the ManifestStore, values
    # as netCDF4-python reads; by default (as VirtualiZarr's parser) one chunk per record.
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    store = vzarr.virtualizarr.Parser(small_chunks="inline")(src.as_uri(), registry)
    check_values(zarr.open_group(store, mode="r", zarr_format=3), src, "parser")
    manifest = store._group.arrays["v0"].manifest
    assert manifest.shape_chunk_grid == (1,)
    store = vzarr.virtualizarr.Parser()(src.as_uri(), registry)
    assert store._group.arrays["v0"].manifest.shape_chunk_grid == (1500,)
    check_values(zarr.open_group(store, mode="r", zarr_format=3), src, "parser kept")
    # Merged chunks reach VirtualiZarr on regular grids: 100,000 back-to-back records in 8
    # chunks of 12,500 (a divisor of the count near 64 KiB).
    one = tmp_path / "one.nc"
    with netCDF4.Dataset(one, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("time", None)
        nc.createVariable("x", "f4", ("time",))[:] = np.arange(100_000, dtype="f4")
    store = vzarr.virtualizarr.Parser(chunk_target="64KiB", small_chunks="merge")(
        one.as_uri(), registry)
    assert store._group.arrays["x"].manifest.shape_chunk_grid == (8,)
    check_values(zarr.open_group(store, mode="r", zarr_format=3), one, "parser merged")


def test_archives_with_large_chunks_keep_their_references(tmp_path):
    """A monthly archive whose data chunks are large (a day of a 1-degree grid, 259 KB,
    deflated and not): built with the defaults, every reference is the one a build that keeps
    every chunk writes."""
    rng = np.random.default_rng(5)
    files = []
    for k, days in enumerate((31, 28)):
        p = tmp_path / f"m{k}.nc"
        with netCDF4.Dataset(p, "w") as nc:
            nc.createDimension("time", None)
            nc.createDimension("lat", 180)
            nc.createDimension("lon", 360)
            t = nc.createVariable("time", "f8", ("time",))
            t.units = "days since 2023-01-01"
            t[:] = np.arange(days) + 31 * k
            nc.createVariable("lat", "f8", ("lat",))[:] = np.linspace(-89.5, 89.5, 180)
            nc.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0.25, 359.75, 360)
            for name, zlib in (("tas", True), ("pr", False)):
                v = nc.createVariable(name, "f4", ("time", "lat", "lon"), zlib=zlib,
                                      chunksizes=(1, 180, 360))
                v[:] = rng.normal(280, 5, (days, 180, 360)).astype("f4")
        files.append(p)
    small = build_refs(files[0], tmp_path / "small.json", files[1], "--concat-dim", "time")
    keep = build_refs(files[0], tmp_path / "keep.json", files[1], "--concat-dim", "time",
                      "--small-chunks", "keep")
    for var in ("tas", "pr"):
        mine = {k: v for k, v in small["refs"].items() if k.startswith(f"{var}/")}
        theirs = {k: v for k, v in keep["refs"].items() if k.startswith(f"{var}/")}
        assert mine == theirs, var
        assert len(mine) == 59 + 1
    # lat (1,440 bytes) and lon (1,440 bytes) stay referenced: nothing else differs but
    # the policy each output records.
    assert small["refs"] == keep["refs"]
    got = xr.open_zarr(open_store(small), consolidated=False).load()
    want = xr.open_mfdataset(files, combine="nested", concat_dim="time", data_vars="minimal",
                             coords="minimal", compat="override").load()
    xr.testing.assert_identical(got, want)


def compressible_file(path: Path, n: int = 10_000_000, nchunks: int = 1024) -> Path:
    """Three int32 arrays of `n` very compressible values (a slow ramp) in `nchunks` gzip
    chunks each, written by h5py: 40 MB each decoded for 10 million values, a 1.6 MB file,
    every chunk well under 1 KiB."""
    import h5py
    chunk = -(-n // nchunks)
    with h5py.File(path, "w") as f:
        for k, name in enumerate(("a", "b", "c")):
            f.create_dataset(name, data=(np.arange(n, dtype="i4") // 100_000) + k,
                             chunks=(chunk,), compression="gzip")
    return path


def test_the_inline_bound_counts_what_is_stored(tmp_path):
    """Issue 43, item 6: arrays that decode to more than --inline-max (40 MB each, over
    16 MiB) but store a fraction of it re-encoded are kept inline, not left in 1,024
    references under 1 KiB each; in `vzarr build` and in the parser alike. Values as h5py
    reads them."""
    import h5py
    src = compressible_file(tmp_path / "ramp.h5")
    assert src.stat().st_size < 2_000_000
    with h5py.File(src, "r") as f:
        want = {n: f[n][...] for n in f}
        assert all(f[n].chunks == (9766,) and f[n].id.get_num_chunks() == 1024 for n in f)
    kept = build_refs(src, tmp_path / "keep.json", "--small-chunks", "keep")
    assert len(chunk_refs(kept)) == 3 * 1024
    assert all(r[2] < 1024 for r in chunk_refs(kept))
    p = run_vzarr("build", src, "-o", tmp_path / "out.json")
    assert "small references kept" not in p.stderr, p.stderr
    refs = json.loads((tmp_path / "out.json").read_text())
    assert chunk_refs(refs) == [], p.stdout
    assert (tmp_path / "out.json").stat().st_size < src.stat().st_size
    group = zarr.open_group(open_store(refs), mode="r", zarr_format=3)
    for name, values in want.items():
        assert_values_equal(values, group[name][...], f"inline:{name}")
    # Decoding is bounded apart, at 16 times --inline-max: 40 MB is over 16 x 1 MiB.
    p = run_vzarr("build", src, "-o", tmp_path / "decode.json", "--inline-max", "1MiB")
    assert "a: 1024 small references kept: it decodes to 38.1 MiB, above the 16.0 MiB" \
        in p.stderr, p.stderr
    # The parser, inlining: the same arrays inline in its ManifestStore.
    import vzarr
    import vzarr.virtualizarr
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    parser = vzarr.virtualizarr.Parser(small_chunks="inline")
    store = parser(src.as_uri(), registry)
    assert not [w for w in parser.warnings if "small references" in w], parser.warnings
    pgroup = zarr.open_group(store, mode="r", zarr_format=3)
    for name, values in want.items():
        assert store._group.arrays[name].manifest.shape_chunk_grid[0] < 1024
        assert_values_equal(values, pgroup[name][...], f"parser:{name}")
