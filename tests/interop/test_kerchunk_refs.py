"""Existing kerchunk references (made here with kerchunk 0.2.10, pinned in requirements.txt):
read by vzarr (JSON and Parquet, Zarr v2 metadata), verified against their sources (no false
alarm on good references; every injected defect found), and upgraded with `vzarr upgrade` to
Zarr v3 references and Icechunk repositories that zarr-python and icechunk-python read equal
to the sources as h5py and netCDF4-python read them."""

import json
import shutil
import warnings
from pathlib import Path

import h5py
import icechunk
import netCDF4
import numpy as np
import pytest
import zarr

from conftest import FIXTURES, assert_values_equal, open_store, run_vzarr

warnings.filterwarnings("ignore")
zarr.config.set({"array.rectilinear_chunks": True})

# Fixtures kerchunk's SingleHdf5ToZarr translates (it refuses or fails on the others: LZF,
# szip, bitshuffle, compounds with strings, ...); nc4_unwritten.nc is left to the defect
# tests, since kerchunk gives its unwritten chunks a fill value the file does not have.
HDF5_FIXTURES = ["nc4_climate.nc", "filters.h5", "fillvalues.h5", "layouts_latest.h5",
                 "attrs_groups.h5", "nc4_types.nc", "archive/tas_202301.nc"]


def kerchunk_hdf5(src: Path, out: Path, inline_threshold=100) -> Path:
    from kerchunk.hdf import SingleHdf5ToZarr
    refs = SingleHdf5ToZarr(str(src), inline_threshold=inline_threshold).translate()
    out.write_text(json.dumps(refs))
    return out


def to_parquet(refs_json: Path, out: Path, record_size=5) -> Path:
    from kerchunk.df import refs_to_dataframe
    refs_to_dataframe(str(refs_json), str(out), record_size=record_size)
    return out


def h5_arrays(src: Path) -> dict:
    """Every dataset of `src` that is not a bare dimension scale, by path, as h5py reads it."""
    out = {}
    with h5py.File(src, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.dtype.kind != "V":
                out[name] = obj[()]
        f.visititems(visit)
    return out


def arrays_of(g) -> dict:
    return {p: a[()] for p, a in g.members(max_depth=None) if isinstance(a, zarr.Array)}


def read_json_output(out: Path) -> dict:
    return arrays_of(zarr.open_group(open_store(json.loads(out.read_text())), mode="r",
                                     zarr_format=3))


def read_icechunk(repo_path: Path) -> dict:
    storage = icechunk.local_filesystem_storage(str(repo_path))
    conts = sorted((icechunk.Repository.open(storage).config.virtual_chunk_containers or {}).keys())
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=icechunk.containers_credentials(
        {c: icechunk.credentials.LocalFileSystemAccess for c in conts}))
    return arrays_of(zarr.open_group(repo.readonly_session(branch="main").store, mode="r",
                                     zarr_format=3))


def left_out(stderr: str) -> set:
    return {line.split(": left out:")[0].split("warning: ")[-1].strip()
            for line in stderr.splitlines() if ": left out:" in line}


def kerchunk_arrays(refs_json: Path) -> set:
    """The arrays kerchunk's references hold (it leaves out, with a warning, what it cannot
    translate)."""
    refs = json.loads(refs_json.read_text())["refs"]
    return {k[: -len("/.zarray")] for k in refs if k.endswith("/.zarray")}


def compare_upgrade(got: dict, expected: dict, arrays: set, stderr: str, where: str):
    skipped = left_out(stderr)
    assert got, f"{where}: nothing read"
    for path in sorted(arrays):
        if path in skipped:
            continue
        assert path in got, f"{where}: {path} neither upgraded nor reported as left out"
        assert_values_equal(expected[path], got[path], f"{where}:{path}")


@pytest.mark.parametrize("layout", ["json", "parquet"])
@pytest.mark.parametrize("name", HDF5_FIXTURES)
def test_single_file_references_verified_and_upgraded(tmp_path, name, layout):
    """kerchunk's references of a fixture: vzarr verify finds every value equal (no false
    alarm), and the upgraded JSON and Icechunk outputs read equal to h5py."""
    src = FIXTURES / name
    refs = kerchunk_hdf5(src, tmp_path / "refs.json")
    arrays = kerchunk_arrays(refs)
    if layout == "parquet":
        refs = to_parquet(refs, tmp_path / "refs.parq")
    p = run_vzarr("verify", refs, "--allow-prefix", FIXTURES, "--readers", "native", check=False)
    assert p.returncode == 0, f"false alarm on {name} ({layout}):\n{p.stdout}\n{p.stderr}"
    expected = h5_arrays(src)
    up = run_vzarr("upgrade", refs, "-o", tmp_path / "up.json", "--allow-prefix", FIXTURES)
    compare_upgrade(read_json_output(tmp_path / "up.json"), expected, arrays, up.stderr,
                    f"{name} json")
    doc = json.loads((tmp_path / "up.json").read_text())
    assert doc["vzarr"]["upgraded_from"] == str(refs)
    assert all(s["url"].startswith("file:///") for s in doc["vzarr"]["sources"])
    up = run_vzarr("upgrade", refs, "-o", tmp_path / "repo", "--format", "icechunk",
                   "--allow-prefix", FIXTURES)
    compare_upgrade(read_icechunk(tmp_path / "repo"), expected, arrays, up.stderr,
                    f"{name} icechunk")


def test_netcdf3_references_upgraded(tmp_path):
    """kerchunk's NetCDF3ToZarr references of a NetCDF3 file (record and fixed variables,
    big-endian): verified clean, upgraded, read equal to netCDF4-python."""
    from kerchunk.netCDF3 import NetCDF3ToZarr
    src = tmp_path / "obs.nc"
    with netCDF4.Dataset(src, "w", format="NETCDF3_64BIT_OFFSET") as d:
        d.createDimension("time", None)
        d.createDimension("station", 5)
        t = d.createVariable("time", "f8", ("time",))
        t.units = "hours since 2020-01-01"
        v = d.createVariable("temp", "f4", ("time", "station"), fill_value=-999.0)
        h = d.createVariable("height", "i2", ("station",))
        t[:] = np.arange(7)
        v[:] = np.arange(35, dtype="f4").reshape(7, 5) / 3
        h[:] = [1, 2, 3, 4, 5]
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps(NetCDF3ToZarr(str(src), inline_threshold=0).translate()))
    p = run_vzarr("verify", refs, "--allow-prefix", tmp_path, "--readers", "native", check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    run_vzarr("upgrade", refs, "-o", tmp_path / "up.json", "--allow-prefix", tmp_path)
    got = read_json_output(tmp_path / "up.json")
    with netCDF4.Dataset(src) as d:
        d.set_auto_maskandscale(False)
        for name in ("time", "temp", "height"):
            assert_values_equal(d[name][:], got[name], name)


def monthly_archive(root: Path, months=3, days=4) -> list[Path]:
    """Monthly files of `days` time steps, one time chunk each, the same time units: what
    kerchunk's MultiZarrToZarr combines correctly."""
    root.mkdir()
    files = []
    for m in range(months):
        f = root / f"tas_{m:02d}.nc"
        with netCDF4.Dataset(f, "w") as d:
            d.createDimension("time", None)
            d.createDimension("lat", 3)
            t = d.createVariable("time", "f8", ("time",))
            t.units = "days since 2000-01-01"
            lat = d.createVariable("lat", "f4", ("lat",))
            v = d.createVariable("tas", "f4", ("time", "lat"), chunksizes=(days, 3), zlib=True)
            t[:] = np.arange(days) + m * days
            lat[:] = [10, 20, 30]
            v[:] = np.arange(days * 3, dtype="f4").reshape(days, 3) + 100 * m
        files.append(f)
    return files


def multizarr(files, out: Path) -> Path:
    from kerchunk.combine import MultiZarrToZarr
    singles = [json.loads(kerchunk_hdf5(f, out.with_suffix(f".{i}.json"), 0).read_text())
               for i, f in enumerate(files)]
    refs = MultiZarrToZarr(singles, concat_dims=["time"], identical_dims=["lat"],
                           inline_threshold=0).translate()
    out.write_text(json.dumps(refs))
    return out


@pytest.mark.parametrize("layout", ["json", "parquet"])
def test_combined_archive_upgraded(tmp_path, layout):
    """MultiZarrToZarr's references of a monthly archive: upgraded (JSON and Icechunk), read
    equal to the files concatenated by netCDF4-python."""
    files = monthly_archive(tmp_path / "archive")
    refs = multizarr(files, tmp_path / "combined.json")
    if layout == "parquet":
        refs = to_parquet(refs, tmp_path / "combined.parq")
    p = run_vzarr("verify", refs, "--allow-prefix", tmp_path / "archive", "--readers", "native",
                  check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    parts = {"time": [], "tas": []}
    for f in files:
        with netCDF4.Dataset(f) as d:
            d.set_auto_maskandscale(False)
            for n in parts:
                parts[n].append(d[n][:])
            lat = d["lat"][:]
    expected = {n: np.concatenate(v) for n, v in parts.items()} | {"lat": lat}
    run_vzarr("upgrade", refs, "-o", tmp_path / "up.json", "--allow-prefix", tmp_path / "archive")
    run_vzarr("upgrade", refs, "-o", tmp_path / "repo", "--format", "icechunk",
              "--allow-prefix", tmp_path / "archive")
    for got in (read_json_output(tmp_path / "up.json"), read_icechunk(tmp_path / "repo")):
        for n, want in expected.items():
            assert_values_equal(want, got[n], n)


def test_open_dataset_reads_kerchunk_references(tmp_path):
    """vzarr.open_dataset opens kerchunk's Zarr v2 references (as Zarr v3) equal to xarray
    over the source."""
    import vzarr
    import xarray as xr
    src = FIXTURES / "nc4_climate.nc"
    refs = kerchunk_hdf5(src, tmp_path / "refs.json")
    got = vzarr.open_dataset(refs, allow_prefixes=str(FIXTURES))
    want = xr.open_dataset(src)
    for name in want.variables:
        np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)


def test_parquet_references_read_lazily(tmp_path):
    """kerchunk's Parquet references opened with vzarr.open_dataset are read as fsspec's
    LazyReferenceMapper reads them: a variable's record files only when it is read. With pr's
    record files made unreadable (garbage), opening and reading tas still work and equal the
    source; reading pr then fails with an error naming its record file."""
    import vzarr
    import xarray as xr
    src = FIXTURES / "nc4_climate.nc"
    refs = kerchunk_hdf5(src, tmp_path / "refs.json", inline_threshold=0)
    parq = to_parquet(refs, tmp_path / "refs.parq")
    pr_files = sorted((parq / "pr").glob("refs.*.parq"))
    assert pr_files, sorted(p.name for p in parq.iterdir())
    for f in pr_files:
        f.write_bytes(b"PAR1 not a record file PAR1")
    got = vzarr.open_dataset(parq, allow_prefixes=str(FIXTURES))
    want = xr.open_dataset(src)
    np.testing.assert_array_equal(got["tas"].values, want["tas"].values)
    np.testing.assert_array_equal(got["tas"][3, 2:5].values, want["tas"][3, 2:5].values)
    with pytest.raises(vzarr.VzarrError, match=r"pr/refs\.0\.parq"):
        got["pr"].values
    # The store alone: its metadata served from .zmetadata, tas's chunks from its records.
    from vzarr.store import VzarrStore
    store = VzarrStore(parq, allow_prefixes=str(FIXTURES))
    g = zarr.open_group(store, mode="r", zarr_format=3)
    assert sorted(g.array_keys()) == sorted(want.variables)
    np.testing.assert_array_equal(g["tas"][:], h5_arrays(src)["tas"])
    with pytest.raises(vzarr.VzarrError, match=r"pr/refs\.0\.parq"):
        g["pr"][:]


def defective(tmp_path: Path, change) -> tuple[Path, Path]:
    """kerchunk references of a copy of nc4_climate.nc, changed by `change(refs)`."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    src = data / "climate.nc"
    shutil.copy(FIXTURES / "nc4_climate.nc", src)
    path = kerchunk_hdf5(src, tmp_path / "refs.json", inline_threshold=0)
    refs = json.loads(path.read_text())
    change(refs["refs"], src)
    path.write_text(json.dumps(refs))
    return path, data


def tas_keys(refs):
    return sorted(k for k in refs if k.startswith("tas/") and not k.split("/")[-1].startswith("."))


def shift(refs, _src):
    a, b = tas_keys(refs)[:2]
    refs[a], refs[b] = refs[b], refs[a]


def drop(refs, _src):
    del refs[tas_keys(refs)[1]]


def wrong_offset(refs, _src):
    k = tas_keys(refs)[0]
    refs[k] = [refs[k][0], refs[k][1] + 8, refs[k][2]]


def stale(refs, src):
    # The file rewritten since the references were made (other values, other layout).
    with netCDF4.Dataset(src, "w") as d:
        d.createDimension("x", 3000)
        d.createVariable("pad", "f8", ("x",))[:] = np.arange(3000)
        d.createDimension("time", 4)
        d.createDimension("lat", 5)
        d.createDimension("lon", 6)
        d.createVariable("tas", "f4", ("time", "lat", "lon"))[:] = 1.0


@pytest.mark.parametrize("change,kind", [(shift, "shifted"), (drop, "missing"),
                                         (wrong_offset, "wrong offset"), (stale, "past the end")])
def test_injected_defects_are_found(tmp_path, change, kind):
    """A shifted chunk, a missing one, a wrong offset, a stale source: vzarr verify fails and
    names each defective reference of tas with the kind of its defect."""
    refs, data = defective(tmp_path, change)
    p = run_vzarr("verify", refs, "--allow-prefix", data, "--readers", "native", "--json",
                  check=False)
    assert p.returncode == 1, f"{change.__name__} not found:\n{p.stdout}\n{p.stderr}"
    audit = json.loads(p.stdout)["audit"]
    assert kind in audit["by_kind"], audit
    named = [d for d in audit["defects"] if d["array"] in ("tas", "mask", "pr")]
    assert named, audit
    if change is not stale:
        # Only the injected defect: no false alarm elsewhere.
        assert {d["array"] for d in audit["defects"]} == {"tas"}, audit


def test_no_false_alarm_on_good_references(tmp_path):
    """The audit of kerchunk's references of every translatable fixture finds no defect."""
    for name in HDF5_FIXTURES:
        refs = kerchunk_hdf5(FIXTURES / name, tmp_path / "refs.json", inline_threshold=0)
        p = run_vzarr("verify", refs, "--allow-prefix", FIXTURES, "--readers", "native", "--json")
        audit = json.loads(p.stdout)["audit"]
        assert audit["by_kind"] == {} and audit["audited"] > 0, (name, audit)
    # A sample: that many references audited, the same ones for the same seed.
    p = run_vzarr("verify", refs, "--allow-prefix", FIXTURES, "--readers", "native", "--json",
                  "--sample", "3", "--seed", "7")
    audit = json.loads(p.stdout)["audit"]
    assert audit["audited"] == 3 < audit["references"], audit


def test_defective_kerchunk_netcdf3_references_refused(tmp_path):
    """kerchunk's NetCDF3ToZarr references of nc3_one_record_var.nc point past the end of the
    file (its record count taken wrongly): verify names the chunks, upgrade refuses them."""
    from kerchunk.netCDF3 import NetCDF3ToZarr
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps(NetCDF3ToZarr(str(FIXTURES / "nc3_one_record_var.nc"),
                                             inline_threshold=0).translate()))
    p = run_vzarr("verify", refs, "--allow-prefix", FIXTURES, "--readers", "native", check=False)
    assert p.returncode != 0 and "past the end" in p.stdout + p.stderr, p.stdout + p.stderr
    p = run_vzarr("upgrade", refs, "-o", tmp_path / "up.json", "--allow-prefix", FIXTURES,
                  check=False)
    assert p.returncode != 0 and "past the end" in p.stderr, p.stderr
    assert not (tmp_path / "up.json").exists()


def test_upgrade_refuses_sources_outside_allowed_prefixes(tmp_path):
    refs = kerchunk_hdf5(FIXTURES / "nc4_climate.nc", tmp_path / "refs.json")
    p = run_vzarr("upgrade", refs, "-o", tmp_path / "up.json", "--allow-prefix", tmp_path,
                  check=False)
    assert p.returncode != 0 and "refusing" in p.stderr, p.stderr
    assert not (tmp_path / "up.json").exists()


def test_python_upgrade_and_parquet_open(tmp_path):
    """vzarr.upgrade returns (or writes) what vzarr upgrade writes; vzarr.open_dataset opens a
    directory of kerchunk's Parquet references; both read equal to the source."""
    import vzarr
    import xarray as xr
    src = FIXTURES / "nc4_climate.nc"
    refs = kerchunk_hdf5(src, tmp_path / "refs.json")
    parq = to_parquet(refs, tmp_path / "refs.parq")
    expected = h5_arrays(src)
    out = vzarr.upgrade(refs, allow_prefixes=str(FIXTURES))
    assert out["vzarr"]["upgraded_from"] == str(refs)
    g = zarr.open_group(open_store(dict(out)), mode="r", zarr_format=3)
    compare_upgrade(arrays_of(g), expected, kerchunk_arrays(refs), "", "vzarr.upgrade")
    report = vzarr.upgrade(parq, output=tmp_path / "repo", format="icechunk",
                           allow_prefixes=[str(FIXTURES)])
    assert report.commit["created"] and report.output.endswith("repo"), report
    compare_upgrade(read_icechunk(tmp_path / "repo"), expected, kerchunk_arrays(refs), "",
                    "vzarr.upgrade icechunk")
    with pytest.raises(vzarr.NotAllowedError):
        vzarr.upgrade(refs, allow_prefixes=str(tmp_path))
    got = vzarr.open_dataset(parq, allow_prefixes=str(FIXTURES))
    want = xr.open_dataset(src)
    for name in want.variables:
        np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)


def test_generated_keys(tmp_path):
    """References whose chunk keys are generated (`gen`, kerchunk version 1): the records of a
    NetCDF3 record variable, one template; verified, upgraded, read equal to netCDF4-python."""
    from kerchunk.netCDF3 import NetCDF3ToZarr
    src = tmp_path / "rec.nc"
    with netCDF4.Dataset(src, "w", format="NETCDF3_CLASSIC") as d:
        d.createDimension("time", None)
        d.createDimension("x", 3)
        v = d.createVariable("v", "i4", ("time", "x"))
        w = d.createVariable("w", "f8", ("time",))
        v[:] = np.arange(24, dtype="i4").reshape(8, 3)
        w[:] = np.arange(8) / 4
    refs = NetCDF3ToZarr(str(src), inline_threshold=0).translate()
    first, second = refs["refs"]["v/0.0"], refs["refs"]["v/1.0"]
    for k in [k for k in refs["refs"] if k.startswith("v/") and not k.startswith("v/.")]:
        del refs["refs"][k]
    refs["templates"] = {"f": str(src)}
    refs["gen"] = [{"key": "v/{{i}}.0", "url": "{{f}}",
                    "offset": f"{{{{ {first[1]} + i * {second[1] - first[1]} }}}}",
                    "length": str(first[2]), "dimensions": {"i": {"stop": 8}}}]
    path = tmp_path / "gen.json"
    path.write_text(json.dumps(refs))
    p = run_vzarr("verify", path, "--allow-prefix", tmp_path, "--readers", "native", check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    run_vzarr("upgrade", path, "-o", tmp_path / "up.json", "--allow-prefix", tmp_path,
              "--small-chunks", "keep")
    got = read_json_output(tmp_path / "up.json")
    with netCDF4.Dataset(src) as d:
        for name in ("v", "w"):
            assert_values_equal(d[name][:], got[name], name)


def test_kerchunk_defects_named(tmp_path):
    """Defects kerchunk's own references of files of the corpus and fixtures have, each
    named with its kind: scalar variable-length strings left out (a NeXus file), a fill value
    of unwritten chunks that is not the file's (nc4_unwritten.nc)."""
    from conftest import real_files_dir
    root = real_files_dir()
    nexus = root / "nexusformat-2.1.0/nexusformat-2.1.0/src/nexusformat/examples/chopper.nxs"
    cases = [(nexus, root, "missing", "entry/sample/name"),
             (FIXTURES / "nc4_unwritten.nc", FIXTURES, "fill value", "never_default")]
    for src, allowed, kind, array in cases:
        refs = kerchunk_in_a_process(src, tmp_path / f"{src.stem}.json")
        p = run_vzarr("verify", refs, "--allow-prefix", allowed, "--readers", "native", "--json",
                      check=False)
        audit = json.loads(p.stdout)["audit"]
        assert p.returncode == 1 and kind in audit["by_kind"], audit
        assert any(d["array"] == array and d["kind"] == kind.replace(" ", "-")
                   for d in audit["defects"]), audit


def test_rescan_repairs_what_the_references_got_wrong(tmp_path):
    """kerchunk gives nc4_unwritten.nc's never-written chunks the fill value 0 where the file's
    is the netCDF default: verify says so, and `vzarr upgrade --rescan` (a build of the sources
    the references name) reads equal to h5py where the plain upgrade keeps kerchunk's value."""
    src = FIXTURES / "nc4_unwritten.nc"
    refs = kerchunk_hdf5(src, tmp_path / "refs.json")
    p = run_vzarr("verify", refs, "--allow-prefix", FIXTURES, "--readers", "native", check=False)
    assert p.returncode == 1 and "never_default" in p.stdout, p.stdout + p.stderr
    run_vzarr("upgrade", refs, "--rescan", "-o", tmp_path / "up.json", "--allow-prefix", FIXTURES)
    got = read_json_output(tmp_path / "up.json")
    expected = h5_arrays(src)
    for path in kerchunk_arrays(refs):
        assert_values_equal(expected[path], got[path], path)
    doc = json.loads((tmp_path / "up.json").read_text())
    assert doc["vzarr"]["upgraded_from"] == str(refs)
    run_vzarr("verify", tmp_path / "up.json", "--allow-prefix", FIXTURES, "--readers", "native")


def test_files_a_combine_dropped_are_named(tmp_path):
    """MultiZarrToZarr drops files silently when their time coordinates are equal (here each
    file's times are those of the first): the references hold one file's chunks, and
    `vzarr verify --source` names every other file as dropped; without --source, verify of the
    references alone cannot know of them."""
    files = monthly_archive(tmp_path / "archive")
    for f in files[1:]:
        with netCDF4.Dataset(f, "a") as d:
            d["time"][:] = np.arange(4)
    refs = multizarr(files, tmp_path / "combined.json")
    # The last file's time and tas, the first file's lat: the second file is gone.
    assert {v[0] for v in json.loads(refs.read_text())["refs"].values()
            if isinstance(v, list)} == {str(files[0]), str(files[2])}, refs.read_text()
    sources = [a for f in files for a in ("--source", f)]
    p = run_vzarr("verify", refs, *sources, "--allow-prefix", tmp_path / "archive",
                  "--readers", "native", "--json", check=False)
    audit = json.loads(p.stdout)["audit"]
    assert p.returncode == 1 and audit["by_kind"] == {"dropped": 1}, audit
    assert [d["source"] for d in audit["defects"]] == [str(files[1])], audit
    p = run_vzarr("verify", refs, "--allow-prefix", tmp_path / "archive", "--readers", "native",
                  "--json", check=False)
    assert json.loads(p.stdout)["audit"]["by_kind"] == {}, p.stdout


def test_references_naming_no_file_are_verified_against_the_one_named(tmp_path):
    """kerchunk's references of a small file inline every chunk and name no file: verify
    compares them with the file named by --source (and names kerchunk's defects there: a
    scalar variable-length string left out), where alone it can only skip them."""
    from conftest import real_files_dir
    root = real_files_dir()
    src = root / "pynwb-4.2.0/pynwb-4.2.0/tests/back_compat/1.0.3_nwbfile.nwb"
    refs = kerchunk_in_a_process(src, tmp_path / "refs.json")
    assert not [v for v in json.loads(refs.read_text())["refs"].values() if isinstance(v, list)]
    p = run_vzarr("verify", refs, "--allow-prefix", root, "--readers", "native", "--json",
                  check=False)
    alone = json.loads(p.stdout)
    assert alone["values_compared"] == 0 and alone["skipped"], alone
    p = run_vzarr("verify", refs, "--source", src, "--allow-prefix", root, "--readers",
                  "native", "--json", check=False)
    named = json.loads(p.stdout)
    assert p.returncode == 1 and named["values_compared"] > 0, named
    assert "session_description" in named["audit"]["defective_arrays"], named["audit"]
    assert named["audit"]["by_kind"].get("missing"), named["audit"]


def test_rescan_of_a_combined_archive(tmp_path):
    files = monthly_archive(tmp_path / "archive")
    refs = multizarr(files, tmp_path / "combined.json")
    p = run_vzarr("upgrade", refs, "--rescan", "-o", tmp_path / "up.json",
                  "--allow-prefix", tmp_path / "archive", check=False)
    assert p.returncode != 0 and "--concat-dim time" in p.stderr, p.stderr
    run_vzarr("upgrade", refs, "--rescan", "--concat-dim", "time", "-o", tmp_path / "repo",
              "--format", "icechunk", "--allow-prefix", tmp_path / "archive")
    got = read_icechunk(tmp_path / "repo")
    with netCDF4.Dataset(files[1]) as d:
        d.set_auto_maskandscale(False)
        assert_values_equal(d["tas"][:], got["tas"][4:8], "tas of the second file")


# Real files no one here wrote (scripts/real-files), kerchunk's references of each: radar,
# model output, an unstructured mesh, a compound of complex numbers, NetCDF3 files.
REAL_FILES = [
    "arm_pyart-2.3.0/arm_pyart-2.3.0/pyart/testing/data/example_cfradial_ppi.nc",
    "esmvalcore-2.15.0/esmvalcore-2.15.0/tests/integration/cmor/_fixes/test_data/cesm2_native.nc",
    "esmvalcore-2.15.0/esmvalcore-2.15.0/tests/integration/cmor/_fixes/test_data/access_ocean_grid.nc",
    "esmvalcore-2.15.0/esmvalcore-2.15.0/tests/integration/cmor/_fixes/test_data/icon_atm_3d.nc",
    "cf_python-3.21.0/cf_python-3.21.0/cf/test/ugrid_global_2.nc",
    "h5py-3.16.0/h5py-3.16.0/h5py/tests/data_files/compound-dtype-complex.h5",
    "esmvalcore-2.15.0/esmvalcore-2.15.0/tests/integration/cmor/_fixes/test_data/emac.nc",
    "esmvalcore-2.15.0/esmvalcore-2.15.0/tests/integration/dataset/tas.nc",
]

KERCHUNK_IN_A_PROCESS = """
import json, sys
from kerchunk.hdf import SingleHdf5ToZarr
from kerchunk.netCDF3 import NetCDF3ToZarr
path, out = sys.argv[1], sys.argv[2]
with open(path, "rb") as f:
    nc3 = f.read(3) == b"CDF"
make = NetCDF3ToZarr if nc3 else SingleHdf5ToZarr
json.dump(make(path, inline_threshold=100).translate(), open(out, "w"))
"""


def kerchunk_in_a_process(src: Path, out: Path) -> Path:
    """kerchunk's references of `src`, made in a child process (kerchunk with zarr 3.4 hangs
    on some files: the timeout fails the test instead of the suite)."""
    import subprocess
    import sys
    subprocess.run([sys.executable, "-c", KERCHUNK_IN_A_PROCESS, str(src), str(out)],
                   check=True, timeout=120, capture_output=True)
    return out


def source_values(src: Path) -> dict:
    with open(src, "rb") as f:
        nc3 = f.read(3) == b"CDF"
    if not nc3:
        return h5_arrays(src)
    with netCDF4.Dataset(src) as d:
        d.set_auto_maskandscale(False)
        return {n: v[:] for n, v in d.variables.items()}


@pytest.mark.parametrize("rel", REAL_FILES, ids=lambda r: r.rsplit("/", 1)[-1])
def test_real_file_references(tmp_path, rel):
    from conftest import real_files_dir
    root = real_files_dir()
    src = root / rel
    assert src.is_file(), f"{src} is not in the real-file corpus"
    refs = kerchunk_in_a_process(src, tmp_path / "refs.json")
    p = run_vzarr("verify", refs, "--allow-prefix", root, "--readers", "native", "--json",
                  check=False)
    report = json.loads(p.stdout)
    assert p.returncode == 0 and report["audit"]["by_kind"] == {}, p.stdout[-3000:] + p.stderr
    up = run_vzarr("upgrade", refs, "-o", tmp_path / "up.json", "--allow-prefix", root)
    compare_upgrade(read_json_output(tmp_path / "up.json"), source_values(src),
                    kerchunk_arrays(refs), up.stderr, rel)


def test_real_monthly_archive_combined(tmp_path):
    """Iris's three monthly NEMO files combined along time by MultiZarrToZarr: verified,
    upgraded to Icechunk, read equal to the files concatenated."""
    from conftest import real_files_dir
    from kerchunk.combine import MultiZarrToZarr
    root = real_files_dir()
    nemo = root / "iris_sample_data-2.5.2/iris_sample_data-2.5.2/iris_sample_data/sample_data/NEMO"
    files = sorted(nemo.glob("nemo_1m_2015*_grid-T.nc"))
    assert len(files) == 3, files
    singles = [json.loads(kerchunk_in_a_process(f, tmp_path / f"{i}.json").read_text())
               for i, f in enumerate(files)]
    with netCDF4.Dataset(files[0]) as d:
        tdim = d["tos"].dimensions[0]
        static = [n for n, v in d.variables.items() if tdim not in v.dimensions]
    # Every file's time_counter is 0 (time_centered holds the times): kerchunk's default
    # would collapse the three months into one; each file is placed by its index instead.
    refs = MultiZarrToZarr(singles, concat_dims=[tdim], identical_dims=static,
                           coo_map={tdim: "INDEX"}, inline_threshold=0).translate()
    path = tmp_path / "combined.json"
    path.write_text(json.dumps(refs))
    p = run_vzarr("verify", path, "--allow-prefix", nemo, "--readers", "native", "--json",
                  check=False)
    assert json.loads(p.stdout)["audit"]["by_kind"] == {}, p.stdout[-3000:]
    run_vzarr("upgrade", path, "-o", tmp_path / "repo", "--format", "icechunk",
              "--allow-prefix", nemo)
    got = read_icechunk(tmp_path / "repo")
    parts = []
    for f in files:
        with netCDF4.Dataset(f) as d:
            d.set_auto_maskandscale(False)
            parts.append(d["tos"][:])
    assert_values_equal(np.concatenate(parts), got["tos"], "tos")


@pytest.mark.parametrize("change", [shift, drop, wrong_offset])
def test_upgrade_leaves_out_defective_variables(tmp_path, change):
    """`vzarr upgrade --leave-out-defective`: the variable with the injected defect is left
    out with the reason; the rest reads equal to the source (verify finds nothing)."""
    refs, data = defective(tmp_path, change)
    p = run_vzarr("upgrade", refs, "--leave-out-defective", "-o", tmp_path / "up.json",
                  "--allow-prefix", data)
    assert left_out(p.stderr) == {"tas"}, p.stdout + p.stderr
    assert "references are defective" in p.stderr
    got = read_json_output(tmp_path / "up.json")
    assert "tas" not in got
    expected = h5_arrays(data / "climate.nc")
    for path in kerchunk_arrays(refs) - {"tas"}:
        assert_values_equal(expected[path], got[path], path)
    run_vzarr("verify", tmp_path / "up.json", "--allow-prefix", data, "--readers", "native")


def test_python_upgrade_rescan_and_leave_out(tmp_path):
    """vzarr.upgrade(leave_out_defective=True) leaves out the defective variable;
    vzarr.upgrade(rescan=True) builds from the sources and reads equal to them."""
    import vzarr
    refs, data = defective(tmp_path, drop)
    out = vzarr.upgrade(refs, allow_prefixes=str(data), leave_out_defective=True)
    assert any(w.startswith("tas: left out: the references are defective")
               for w in out.report.warnings), out.report.warnings
    assert "tas/zarr.json" not in out["refs"]
    out = vzarr.upgrade(refs, allow_prefixes=str(data), rescan=True, small_chunks="keep")
    got = arrays_of(zarr.open_group(open_store(dict(out)), mode="r", zarr_format=3))
    expected = h5_arrays(data / "climate.nc")
    assert_values_equal(expected["tas"], got["tas"], "tas")
    with pytest.raises(ValueError):
        vzarr.upgrade(refs, allow_prefixes=str(data), rescan=True, leave_out_defective=True)


def test_references_and_sources_on_object_storage(moto_server, tmp_path, monkeypatch):
    """kerchunk references on S3 (a JSON object, and a Parquet prefix with no object of its own
    name) pointing at sources on S3: verified and upgraded through vzarr's byte layer, and
    opened from Python (vzarr.open_dataset, the store), found as the CLI finds them; a
    source outside the allowed bucket prefix is refused before any byte of it is read."""
    client, env = moto_server
    bucket = "vzarr-kerchunk"
    client.create_bucket(Bucket=bucket)
    src = FIXTURES / "nc4_climate.nc"
    client.upload_file(str(src), bucket, "data/climate.nc")
    refs = json.loads(kerchunk_hdf5(src, tmp_path / "local.json").read_text())
    text = json.dumps(refs).replace(str(src), f"s3://{bucket}/data/climate.nc")
    (tmp_path / "refs.json").write_text(text)
    client.upload_file(str(tmp_path / "refs.json"), bucket, "refs/climate.json")
    parq = to_parquet(tmp_path / "refs.json", tmp_path / "refs.parq")
    for f in parq.rglob("*"):
        if f.is_file():
            client.upload_file(str(f), bucket, f"refs/climate.parq/{f.relative_to(parq)}")
    allowed = f"s3://{bucket}/data/"
    for remote in (f"s3://{bucket}/refs/climate.json", f"s3://{bucket}/refs/climate.parq"):
        p = run_vzarr("verify", remote, "--allow-prefix", allowed, "--readers", "native",
                      "--json", env=env, check=False)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr
        assert json.loads(p.stdout)["audit"]["by_kind"] == {}
        # One variable read (the Parquet prefix opened lazily: tas's record files only).
        p = run_vzarr("cat", remote, "tas[2,3,0:4]", "--json", "--allow-prefix", allowed,
                      env=env)
        np.testing.assert_array_equal(np.ravel(json.loads(p.stdout)).astype("f4"),
                                      h5_arrays(src)["tas"][2, 3, 0:4])
        out = tmp_path / f"{remote.rsplit('/', 1)[-1]}.up.json"
        run_vzarr("upgrade", remote, "-o", out, "--allow-prefix", allowed, env=env)
        doc = json.loads(out.read_text())
        assert doc["vzarr"]["sources"][0]["url"] == f"s3://{bucket}/data/climate.nc"
        run_vzarr("verify", out, "--allow-prefix", allowed, "--readers", "native", env=env)
        p = run_vzarr("upgrade", remote, "-o", tmp_path / "refused.json", "--allow-prefix",
                      f"s3://{bucket}/elsewhere/", env=env, check=False)
        assert p.returncode != 0 and "refusing" in p.stderr, p.stderr
    import vzarr
    import vzarr.store
    for k in ("AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
              "AWS_REGION"):
        monkeypatch.setenv(k, env[k])
    want = h5_arrays(src)["tas"][2, 3, 0:4]
    for remote in (f"s3://{bucket}/refs/climate.json", f"s3://{bucket}/refs/climate.parq",
                   f"s3://{bucket}/refs/climate.parq/"):
        assert vzarr._vzarr.detect(remote) == "references", remote
        ds = vzarr.open_dataset(remote, allow_prefixes=allowed, xarray_options={"decode_cf": False})
        np.testing.assert_array_equal(ds["tas"][2, 3, 0:4].values.astype("f4"), want)
        store = vzarr.store.VzarrStore(remote, allow_prefixes=allowed)
        assert store.get_sync("tas/zarr.json") is not None or store.get_sync("tas/.zarray")
        with pytest.raises(vzarr.NotAllowedError):
            vzarr.open_dataset(remote, allow_prefixes=f"s3://{bucket}/elsewhere/")["tas"].values


def test_whole_file_references(tmp_path):
    """Chunks that are whole files (`[url]` in JSON; offset and size 0 in Parquet), as kerchunk
    writes for a file per chunk: each file's size is learned when the references are opened,
    the upgraded references read equal through zarr-python and icechunk-python, and
    vzarr.open_dataset reads them; a whole file outside the allowed prefixes is refused."""
    import zlib
    import vzarr
    data = tmp_path / "data"
    data.mkdir()
    values = np.arange(30, dtype="<i4").reshape(3, 10)
    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            "v/.zarray": json.dumps({"shape": [3, 10], "chunks": [1, 10], "dtype": "<i4",
                                     "compressor": {"id": "zlib", "level": 1}, "filters": None,
                                     "fill_value": -1, "order": "C", "zarr_format": 2}),
            "v/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["row", "col"]})}
    for i in range(3):
        (data / f"row{i}.z").write_bytes(zlib.compress(values[i].tobytes()))
        refs[f"v/{i}.0"] = [str(data / f"row{i}.z")]
    path = tmp_path / "refs.json"
    path.write_text(json.dumps({"version": 1, "refs": refs}))
    run_vzarr("upgrade", path, "-o", tmp_path / "up.json", "--allow-prefix", data,
              "--small-chunks", "keep")
    doc = json.loads((tmp_path / "up.json").read_text())
    assert doc["refs"]["v/c/1/0"][1:] == [0, (data / "row1.z").stat().st_size], doc["refs"]
    assert_values_equal(values, read_json_output(tmp_path / "up.json")["v"], "v (JSON)")
    run_vzarr("upgrade", path, "-o", tmp_path / "repo", "--format", "icechunk",
              "--allow-prefix", data)
    assert_values_equal(values, read_icechunk(tmp_path / "repo")["v"], "v (Icechunk)")
    np.testing.assert_array_equal(vzarr.open_dataset(path, allow_prefixes=str(data))["v"].values,
                                  values)
    parq = to_parquet(path, tmp_path / "refs.parq")
    run_vzarr("upgrade", parq, "-o", tmp_path / "up-parq.json", "--allow-prefix", data)
    assert_values_equal(values, read_json_output(tmp_path / "up-parq.json")["v"], "v (Parquet)")
    # Read lazily: the files' sizes learned when v's record files are read.
    np.testing.assert_array_equal(vzarr.open_dataset(parq, allow_prefixes=str(data))["v"].values,
                                  values)
    p = run_vzarr("upgrade", path, "-o", tmp_path / "refused.json", "--allow-prefix",
                  tmp_path / "elsewhere", check=False)
    assert p.returncode != 0 and "refusing" in p.stderr, p.stderr
    with pytest.raises(vzarr.NotAllowedError):
        vzarr.open_dataset(path, allow_prefixes=str(tmp_path / "elsewhere"))
