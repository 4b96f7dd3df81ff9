"""The Python package `vzarr` (crates/vzarr-python, built into the venv by
scripts/python-package): its build equals the CLI's byte for byte, open_dataset reads the
values netCDF4-python reads from the sources, errors are typed and name the file, nothing is
printed unless asked, and the extension links no libhdf5 or netCDF-C."""

import json
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr

from conftest import FIXTURES, good_fixtures, registry_store_only, run_vzarr

import vzarr
import vzarr.virtualizarr  # noqa: E402  (the parser module, imported on demand)

# The fixtures the CLI test set builds one by one, HDF5/NetCDF4 and NetCDF3 alike.
SINGLE = [f["name"] for f in good_fixtures(("hdf5", "netcdf4", "netcdf3"))]


def cli_bytes(tmp_path: Path, *args) -> bytes:
    out = tmp_path / "cli.json"
    run_vzarr("build", *args, "-o", out)
    return out.read_bytes()


@pytest.mark.parametrize("name", SINGLE)
def test_build_of_one_file_equals_the_cli(tmp_path, name):
    src = FIXTURES / name
    want = cli_bytes(tmp_path, src)
    out = tmp_path / "py.json"
    report = vzarr.build(src, output=out)
    assert isinstance(report, vzarr.Report) and report.output == str(out)
    assert out.read_bytes() == want, name
    refs = vzarr.scan(src)
    assert refs == json.loads(want)


MONTHS = sorted((FIXTURES / "archive").glob("tas_2023*.nc"))


@pytest.mark.parametrize(
    "py_inputs, cli_inputs, options, cli",
    [
        # The monthly archive (31/28/30-day months: a rectilinear time axis), as a directory.
        (FIXTURES / "archive", [FIXTURES / "archive"], {"concat_dim": "time"},
         ["--concat-dim", "time"]),
        # Twelve files as a glob, re-encoded into other time units, 1 thread.
        (str(FIXTURES / "archive" / "tas_2023*.nc"), MONTHS,
         {"concat_dim": "time", "time_units": "hours since 2000-01-01", "jobs": 1},
         ["--concat-dim", "time", "--time-units", "hours since 2000-01-01", "--jobs", "1"]),
        # A catalog of the months in reverse (put in time order by the planner), one gap
        # left (allowed).
        (None, None, {"concat_dim": "time", "allow_gaps": True}, ["--concat-dim", "time",
                                                                    "--allow-gaps"]),
        # Ordered by a variable named (here the coordinate itself; recorded in the output).
        (FIXTURES / "archive", [FIXTURES / "archive"], {"concat_dim": "time", "order_by": "time"},
         ["--concat-dim", "time", "--order-by", "time"]),
    ],
    ids=["archive", "glob-time-units", "catalog-gaps", "order-by"],
)
def test_combined_build_equals_the_cli(tmp_path, py_inputs, cli_inputs, options, cli):
    if py_inputs is None:
        catalog = tmp_path / "catalog.txt"
        catalog.write_text("# months, newest first, March missing\n" + "".join(
            f"{m}\n" for m in reversed(MONTHS) if not m.name.endswith("03.nc")))
        py_inputs, cli_inputs, options = [], ["--catalog", catalog], {**options, "catalog": catalog}
    want = cli_bytes(tmp_path, *cli_inputs, *cli)
    refs = vzarr.build(py_inputs, **options)
    assert isinstance(refs, vzarr.References) and isinstance(refs, dict)
    assert refs == json.loads(want)
    out = tmp_path / "py.json"
    vzarr.build(py_inputs, output=out, **options)
    assert out.read_bytes() == want
    assert refs.report.summary["files"] == len(refs["vzarr"]["sources"]) > 1
    assert refs.report.failures == []


def test_open_dataset_reads_the_sources_values():
    files = sorted((FIXTURES / "archive").glob("*.nc"))
    ds = vzarr.open_dataset(FIXTURES / "archive", concat_dim="time")
    # Lazy: nothing read until asked.
    assert not ds["tas"].variable._in_memory
    # The independent reader: xarray over netCDF4-python, decoding the same way.
    ref = xr.open_mfdataset(files, combine="by_coords", engine="netcdf4", data_vars="minimal",
                            compat="override", coords="minimal")
    for v in ("tas", "pr", "orog", "time", "time_bnds", "lat", "lon"):
        np.testing.assert_array_equal(ds[v].values, ref[v].values, err_msg=v)
    # Raw values too, against netCDF4-python itself.
    raw = vzarr.open_dataset(FIXTURES / "archive", concat_dim="time",
                             xarray_options={"mask_and_scale": False, "decode_times": False})
    tas = []
    for f in files:
        with netCDF4.Dataset(f) as nc:
            nc.set_auto_mask(False)
            tas.append(nc["tas"][...])
    np.testing.assert_array_equal(raw["tas"].values, np.concatenate(tas))
    assert raw["time"].attrs["units"] == "days since 2023-01-01"
    assert ds.sizes["time"] == 365
    # References built before open as they are.
    refs = vzarr.build(FIXTURES / "archive", concat_dim="time")
    again = vzarr.open_dataset(refs)
    np.testing.assert_array_equal(again["tas"].values, ds["tas"].values)


def test_errors_are_typed_and_name_the_file(tmp_path):
    with pytest.raises(vzarr.SourceError) as e:
        vzarr.build(tmp_path / "missing.nc")
    assert e.value.file and e.value.file.endswith("missing.nc")
    assert isinstance(e.value, vzarr.VzarrError)
    with pytest.raises(vzarr.ScanError, match="not an HDF5 or NetCDF file"):
        vzarr.build(FIXTURES / "bad_text.nc")
    with pytest.raises(vzarr.PlanError, match="must be identical") as e:
        # Stacking months: their time variables differ (units).
        vzarr.build([FIXTURES / "archive" / "tas_202301.nc", FIXTURES / "archive" / "tas_202303.nc"],
                    new_dim="member")
    assert e.value.file and e.value.file.endswith(".nc")
    with pytest.raises(vzarr.VzarrError, match="--concat-dim|concat"):
        vzarr.build([FIXTURES / "archive" / "tas_202301.nc", FIXTURES / "archive" / "tas_202302.nc"])
    with pytest.raises(ValueError, match="on_error"):
        vzarr.build(FIXTURES / "archive" / "tas_202301.nc", on_error="ignore")
    with pytest.raises(ValueError, match="max_string_bytes"):
        vzarr.build(FIXTURES / "dtypes.h5", max_string_bytes="4 parsecs")
    with pytest.raises(ValueError, match="exclude each other"):
        vzarr.build(FIXTURES / "archive", concat_dim="time", new_dim="member")
    with pytest.raises(vzarr.SourceError, match="no file matches"):
        vzarr.build(str(tmp_path / "*.nc"))
    # Writing nothing when the build fails.
    out = tmp_path / "out.json"
    with pytest.raises(vzarr.ScanError):
        vzarr.build([FIXTURES / "archive" / "tas_202301.nc", FIXTURES / "bad_text.nc"], concat_dim="time",
                    output=out)
    assert not out.exists()


def test_skip_returns_the_failures_and_strict_refuses(tmp_path):
    refs = vzarr.build([FIXTURES / "archive" / "tas_202301.nc", FIXTURES / "bad_truncated.nc",
                        FIXTURES / "archive" / "tas_202302.nc"], concat_dim="time", on_error="skip")
    assert [Path(s).name for s, _ in refs.report.failures] == ["bad_truncated.nc"]
    assert "truncated" in refs.report.failures[0][1]
    assert refs.report.summary["failed"] == 1
    assert len(refs["vzarr"]["sources"]) == 2
    # Left-out variables are warnings; strict=True makes them an error.
    refs = vzarr.build(FIXTURES / "dtypes.h5")
    assert any("vlen_int" in w for w in refs.report.warnings)
    assert not any("objref" in w for w in refs.report.warnings)
    refs = vzarr.build(FIXTURES / "dtypes.h5", object_references=False)
    assert any("objref: object references" in w for w in refs.report.warnings)
    with pytest.raises(vzarr.ScanError) as e:
        vzarr.build(FIXTURES / "dtypes.h5", strict=True)
    assert e.value.file and e.value.file.endswith("dtypes.h5")


def test_prints_nothing_unless_asked():
    code = (
        "import vzarr, sys\n"
        f"vzarr.build({str(FIXTURES / 'archive')!r}, concat_dim='time')\n"
        f"vzarr.build({str(FIXTURES / 'dtypes.h5')!r})\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (p.stdout, p.stderr) == ("", "")


def test_links_no_hdf5_or_netcdf_c_library():
    ext = Path(vzarr._vzarr.__file__)
    data = ext.read_bytes()
    for symbol in (b"H5Fopen", b"H5Dread", b"nc_open", b"nc_get_vara"):
        assert symbol not in data, f"{ext.name} holds {symbol.decode()}"
    ldd = subprocess.run(["ldd", str(ext)], capture_output=True, text=True).stdout
    assert "hdf5" not in ldd and "netcdf" not in ldd, ldd


def test_help_documents_every_option():
    doc = vzarr.build.__doc__
    import inspect
    for name in inspect.signature(vzarr.build).parameters:
        assert f"{name}:" in doc or f"{name} /" in doc or f"/ {name}:" in doc, name


# --- the VirtualiZarr parser ------------------------------------------------------------------

def _registry():
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    return ObjectStoreRegistry({"file://": LocalStore()})


def _manifest_arrays(group, prefix=""):
    """path -> ManifestArray of a VirtualiZarr ManifestGroup, nested groups included."""
    out = {f"{prefix}{k}": a for k, a in group.arrays.items()}
    for name, g in group.groups.items():
        out.update(_manifest_arrays(g, f"{prefix}{name}/"))
    return out


def _source_values(path: Path):
    """path -> values of every dataset, read by h5py (HDF5/NetCDF4) or netCDF4 (NetCDF3)."""
    import h5py
    from conftest import h5_values_as_read
    with open(path, "rb") as f:
        hdf5 = f.read(8) == b"\x89HDF\r\n\x1a\n"
    out = {}
    if hdf5:
        with h5py.File(path, "r") as f:
            def visit(name, obj):
                if isinstance(obj, h5py.Dataset):
                    try:
                        out[name] = h5_values_as_read(obj)
                    except Exception:  # noqa: BLE001  (types h5py cannot read either)
                        pass
            f.visititems(visit)
    else:
        with netCDF4.Dataset(path) as nc:
            nc.set_auto_maskandscale(False)
            nc.set_auto_chartostring(False)
            for name, var in nc.variables.items():
                out[name] = var[...]
    return out


PARSER_FIXTURES = [f["name"] for f in good_fixtures(("hdf5", "netcdf4", "netcdf3"))]


@pytest.mark.parametrize("name", PARSER_FIXTURES)
def test_parser_values_and_virtualizarrs_own_parsers(name):
    import zarr
    from virtualizarr.parsers import HDFParser, NetCDF3Parser

    from conftest import assert_values_equal
    path = FIXTURES / name
    url = path.as_uri()
    registry = _registry()
    # dtypes.h5 holds object references: read as paths only when asked, as VirtualiZarr's.
    parser = vzarr.virtualizarr.Parser(links_and_references=name == "dtypes.h5")
    store = parser(url, registry)
    ours = _manifest_arrays(store._group)
    # Every array through our ManifestStore equals what h5py / netCDF4-python read.
    group = zarr.open_group(store, mode="r", zarr_format=3)
    expected = _source_values(path)
    checked = 0
    for p in ours:
        if p in expected:
            assert_values_equal(expected[p], group[p][...], f"{name}:{p}")
            checked += 1
    assert checked == len([p for p in ours if p in expected]) and checked > 0, name
    # VirtualiZarr's own parser of the format: the same manifests where it reads the array.
    theirs_parser = NetCDF3Parser() if name.startswith("nc3") else HDFParser(
        links_and_references=name == "dtypes.h5")
    try:
        theirs = _manifest_arrays(theirs_parser(url, registry)._group)
    except Exception as e:  # noqa: BLE001
        print(f"{name}: VirtualiZarr's {type(theirs_parser).__name__} refuses the file: {e!r}; "
              f"ours read {checked} arrays equal to the source")
        return
    same = differ = 0
    for p, a in ours.items():
        b = theirs.get(p)
        if b is None:
            print(f"{name}:{p}: not in VirtualiZarr's output; ours equals the source")
            continue
        assert a.shape == b.shape, f"{name}:{p}"
        if a.manifest.shape_chunk_grid != b.manifest.shape_chunk_grid:
            differ += 1
            print(f"{name}:{p}: chunk grid {a.manifest.shape_chunk_grid} here, "
                  f"{b.manifest.shape_chunk_grid} in VirtualiZarr's; ours "
                  "equals the source")
        elif a.manifest == b.manifest:
            same += 1
        else:
            differ += 1
            print(f"{name}:{p}: manifest differs from VirtualiZarr's; ours equals the source")
    print(f"{name}: {same} manifests equal to VirtualiZarr's, {differ} differ")


def _month_files(tmp_path: Path) -> list[Path]:
    """Two 30-day files whose time chunks (10) divide their length (VirtualiZarr concatenates
    whole chunks only: the bundled archive's 31-day months, chunked by 10, it refuses)."""
    rng = np.random.default_rng(7)
    out = []
    for k in range(2):
        p = tmp_path / f"m{k}.nc"
        with netCDF4.Dataset(p, "w") as nc:
            nc.createDimension("time", None)
            nc.createDimension("lat", 4)
            nc.createDimension("lon", 5)
            t = nc.createVariable("time", "f8", ("time",))
            t.units, t.calendar = "days since 2023-01-01", "standard"
            t[:] = np.arange(30) + 30 * k
            nc.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-60, 60, 4)
            nc.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 288, 5)
            v = nc.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(10, 4, 5),
                                  zlib=True, fill_value=np.float32(1e20))
            v[:] = rng.normal(280, 10, (30, 4, 5)).astype("f4")
            v[3, 0, 0] = np.ma.masked
        out.append(p)
    return out


def test_parser_in_open_virtual_mfdataset_and_the_kerchunk_writer(tmp_path):
    """open_virtual_mfdataset with our parser, written with VirtualiZarr's kerchunk writer and
    read back through fsspec + xarray: equal to the sources read by xarray over
    netCDF4-python."""
    import fsspec
    from virtualizarr import open_virtual_mfdataset

    files = _month_files(tmp_path)
    vds = open_virtual_mfdataset([f.as_uri() for f in files], registry=_registry(),
                                 parser=vzarr.virtualizarr.Parser(), combine="nested",
                                 concat_dim="time", loadable_variables=["time", "lat", "lon"],
                                 coords="minimal", compat="override", data_vars="minimal")
    out = tmp_path / "refs.json"
    vds.vz.to_kerchunk(str(out), format="json")
    fs = fsspec.filesystem("reference", fo=str(out))
    got = xr.open_dataset(fs.get_mapper(""), engine="zarr", consolidated=False, zarr_format=2)
    ref = xr.open_mfdataset(files, engine="netcdf4", combine="nested", concat_dim="time",
                            data_vars="minimal", coords="minimal", compat="override")
    assert got.sizes["time"] == 60
    for v in ("tas", "time", "lat"):
        np.testing.assert_array_equal(got[v].values, ref[v].values, err_msg=v)
    assert np.isnan(got["tas"].values[3, 0, 0])


def test_sources_on_object_storage(moto_server, monkeypatch):
    """vzarr.build over an s3:// prefix and the parser over an s3:// object (moto server):
    the same chunk references as the local files', and the parser's store, reading through an
    obstore S3Store in the registry, gives the values netCDF4-python reads locally."""
    import zarr
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import S3Store

    client, env = moto_server
    for k in ("AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
              "AWS_REGION"):
        monkeypatch.setenv(k, env[k])
    client.create_bucket(Bucket="pyvz")
    for f in MONTHS:
        client.upload_file(str(f), "pyvz", f"archive/{f.name}")
    remote = vzarr.build("s3://pyvz/archive/", concat_dim="time")
    local = vzarr.build(FIXTURES / "archive", concat_dim="time")
    prefix = (FIXTURES / "archive").as_uri() + "/"
    assert remote["refs"].keys() == local["refs"].keys()
    for k, v in local["refs"].items():
        r = remote["refs"][k]
        if isinstance(v, list):
            assert r == [v[0].replace(prefix, "s3://pyvz/archive/"), *v[1:]], k
        else:
            assert r == v, k

    registry = ObjectStoreRegistry({"s3://pyvz": S3Store(
        "pyvz", endpoint=env["AWS_ENDPOINT_URL"], access_key_id="test",
        secret_access_key="test", region="us-east-1", client_options={"allow_http": True})})
    store = vzarr.virtualizarr.Parser()("s3://pyvz/archive/tas_202302.nc", registry)
    group = zarr.open_group(store, mode="r", zarr_format=3)
    with netCDF4.Dataset(FIXTURES / "archive" / "tas_202302.nc") as nc:
        nc.set_auto_mask(False)
        for v in ("tas", "pr", "time"):
            np.testing.assert_array_equal(group[v][...], nc[v][...], err_msg=v)


def test_parser_to_icechunk_read_by_icechunk_python(tmp_path):
    """open_virtual_mfdataset with our parser, written with VirtualiZarr's to_icechunk into a
    local repository whose virtual chunk container is the sources' folder, read back with
    icechunk-python + xarray (authorising that container): equal to xarray over
    netCDF4-python."""
    import icechunk
    from virtualizarr import open_virtual_mfdataset

    src = tmp_path / "src"
    src.mkdir()
    files = _month_files(src)
    vds = open_virtual_mfdataset([f.as_uri() for f in files], registry=_registry(),
                                 parser=vzarr.virtualizarr.Parser(), combine="nested",
                                 concat_dim="time", loadable_variables=["time", "lat", "lon"],
                                 coords="minimal", compat="override", data_vars="minimal")
    prefix = src.as_uri() + "/"
    storage = icechunk.local_filesystem_storage(str(tmp_path / "repo"))
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(src))))
    repo = icechunk.Repository.create(storage, config)
    session = repo.writable_session("main")
    vds.vz.to_icechunk(session.store)
    session.commit("two months through vzarr's VirtualiZarr parser")
    creds = icechunk.containers_credentials(
        {prefix: icechunk.credentials.LocalFileSystemAccess})
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)
    got = xr.open_zarr(repo.readonly_session("main").store, consolidated=False, zarr_format=3)
    ref = xr.open_mfdataset(files, engine="netcdf4", combine="nested", concat_dim="time",
                            data_vars="minimal", coords="minimal", compat="override")
    assert got.sizes["time"] == 60
    for v in ("tas", "time", "lat", "lon"):
        np.testing.assert_array_equal(got[v].values, ref[v].values, err_msg=v)
    # vzarr opens the repository VirtualiZarr wrote too (no vzarr provenance in its commit;
    # every source checked against the prefixes allowed before it is read).
    ours = vzarr.open_dataset(tmp_path / "repo", allow_prefixes=str(src))
    for v in ("tas", "time", "lat", "lon"):
        np.testing.assert_array_equal(ours[v].values, ref[v].values, err_msg=v)


def test_options_are_validated_as_the_cli_validates_them(tmp_path):
    """One validation in the library: Python and the CLI refuse the same things with the same
    words."""
    month = FIXTURES / "archive" / "tas_202301.nc"
    with pytest.raises(ValueError, match="not combined along a dimension"):
        vzarr.build(month, time_units="days since 2000-01-01")
    p = run_vzarr("build", month, "--time-units", "days since 2000-01-01", "-o",
                  tmp_path / "o.json", check=False)
    assert p.returncode != 0 and "not combined along a dimension" in p.stderr
    with pytest.raises(ValueError, match="no existing dimension to concatenate"):
        vzarr.build(FIXTURES / "archive", new_dim="member", order_by="time")
    with pytest.raises(ValueError, match="empty dimension"):
        vzarr.build(FIXTURES / "archive", concat_dim=" ")
    with pytest.raises(ValueError, match="without a new dimension"):
        vzarr.build(FIXTURES / "archive", concat_dim="time", new_dim_values=["a"])
    with pytest.raises(ValueError, match="format"):
        vzarr.build(month, output=tmp_path / "o", format="zip")
    with pytest.raises(ValueError, match="need output"):
        vzarr.build(month, format="icechunk")
    with pytest.raises(ValueError, match="HTTP"):
        vzarr.build(month, output="https://example.com/refs.json")
    assert not (tmp_path / "o.json").exists() and not (tmp_path / "o").exists()


def test_output_to_object_storage(tmp_path, moto_server, monkeypatch):
    """output= an s3:// URL: the object holds the bytes the CLI writes to a local file; the
    CLI writes the same to S3; append=True extends it to what a build of all the files gives;
    a failed build leaves no object."""
    client, env = moto_server
    for k in ("AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
              "AWS_REGION"):
        monkeypatch.setenv(k, env[k])
    client.create_bucket(Bucket="pyvz-out")
    get = lambda key: client.get_object(Bucket="pyvz-out", Key=key)["Body"].read()  # noqa: E731
    want = cli_bytes(tmp_path, *MONTHS[:2], "--concat-dim", "time")
    report = vzarr.build(MONTHS[:2], concat_dim="time", output="s3://pyvz-out/refs/tas.json")
    assert report.output == "s3://pyvz-out/refs/tas.json" and report.commit is None
    assert get("refs/tas.json") == want
    run_vzarr("build", *MONTHS[:2], "--concat-dim", "time", "-o", "s3://pyvz-out/refs/cli.json",
              env=env)
    assert get("refs/cli.json") == want
    # Appending the next month rewrites the object as a build of the three, planning only
    # the object's last month and the new one (the object read from S3).
    r = vzarr.build(MONTHS[2], output="s3://pyvz-out/refs/tas.json", append=True)
    assert r.summary["append"] == {"planned": "tail", "files": 2}, r.summary
    assert get("refs/tas.json") == cli_bytes(tmp_path, *MONTHS[:3], "--concat-dim", "time")
    with pytest.raises(vzarr.WriteError, match="nothing to append"):
        vzarr.build(MONTHS[2], output="s3://pyvz-out/refs/tas.json", append=True)
    with pytest.raises(vzarr.ScanError):
        vzarr.build([MONTHS[0], FIXTURES / "bad_text.nc"], concat_dim="time",
                    output="s3://pyvz-out/refs/bad.json")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="pyvz-out")["Contents"]]
    assert sorted(keys) == ["refs/cli.json", "refs/tas.json"]
    with pytest.raises(ValueError, match="name the object"):
        vzarr.build(MONTHS[0], output="s3://pyvz-out/refs/")


def test_output_to_an_icechunk_repository(tmp_path):
    """format="icechunk": a repository made from Python, a second year appended (in pieces)
    as a second commit; icechunk-python + xarray (authorising the one container the commit report names)
    read the values xarray reads over netCDF4-python, and the first commit still reads as the
    first year."""
    import icechunk
    from test_concat import MONTHS_24, expected_concat, write_archive

    src = tmp_path / "src"
    src.mkdir()
    paths = write_archive(src, MONTHS_24, chunk_t=31)
    repo_path = tmp_path / "repo"
    first = vzarr.build(paths[:12], concat_dim="time", output=repo_path, format="icechunk")
    assert first.output == str(repo_path)
    assert first.commit["created"] and first.commit["branch"] == "main"
    assert first.commit["containers"] == [src.as_uri() + "/"]
    # The append in pieces of 5 chunks: one commit each, all on the branch.
    second = vzarr.build(paths[12:], output=repo_path, format="icechunk", append=True,
                         piece_refs=5)
    assert not second.commit["created"] and second.commit["snapshot"] != first.commit["snapshot"]
    assert second.commit["pieces"] > 1 and first.commit["pieces"] == 1
    storage = icechunk.local_filesystem_storage(str(repo_path))
    creds = icechunk.containers_credentials(
        {c: icechunk.credentials.LocalFileSystemAccess for c in second.commit["containers"]})
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)
    history = list(repo.ancestry(branch="main"))
    n = second.commit["commits"]
    assert n == second.commit["pieces"]
    assert [history[0].id, history[n].id] == [second.commit["snapshot"], first.commit["snapshot"]]
    import zarr
    zarr.config.set({"array.rectilinear_chunks": True})
    for snapshot, files in ((second.commit["snapshot"], paths), (first.commit["snapshot"], paths[:12])):
        got = xr.open_zarr(repo.readonly_session(snapshot_id=snapshot).store,
                           consolidated=False, zarr_format=3)
        want = expected_concat(files)
        assert got.sizes["time"] == want.sizes["time"]
        for v in want.variables:
            np.testing.assert_array_equal(got[v].values, want[v].values, err_msg=v)
    # A failed build makes no commit.
    with pytest.raises(vzarr.ScanError):
        vzarr.build([paths[0], FIXTURES / "bad_text.nc"], concat_dim="time", output=repo_path,
                    format="icechunk")
    assert len(list(repo.ancestry(branch="main"))) == len(history)


def test_icechunk_commit_per_piece(tmp_path):
    """commit_per_piece=True: one commit per piece, reported in ``commit["commits"]``; the
    tip reads as the sources (xarray over netCDF4-python)."""
    import icechunk
    import zarr
    from test_concat import MONTHS_24, expected_concat, write_archive

    paths = write_archive(tmp_path, MONTHS_24[:3], chunk_t=31)
    repo_path = tmp_path / "repo"
    r = vzarr.build(paths, concat_dim="time", output=repo_path, format="icechunk",
                    piece_refs=2, commit_per_piece=True)
    assert r.commit["commits"] == r.commit["pieces"] > 1
    storage = icechunk.local_filesystem_storage(str(repo_path))
    creds = icechunk.containers_credentials(
        {c: icechunk.credentials.LocalFileSystemAccess for c in r.commit["containers"]})
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)
    history = list(repo.ancestry(branch="main"))
    assert len(history) == r.commit["commits"] + 1
    assert history[0].id == r.commit["snapshot"]
    zarr.config.set({"array.rectilinear_chunks": True})
    got = xr.open_zarr(repo.readonly_session(branch="main").store, consolidated=False,
                       zarr_format=3)
    want = expected_concat(paths)
    for v in want.variables:
        np.testing.assert_array_equal(got[v].values, want[v].values, err_msg=v)
    # Without it, the same: a build past piece_refs is one commit per piece anyway.
    by_size = vzarr.build(paths, concat_dim="time", output=tmp_path / "by-size",
                          format="icechunk", piece_refs=2)
    assert by_size.commit["commits"] == by_size.commit["pieces"] == r.commit["pieces"]


def test_parser_reads_through_the_registrys_store(moto_server, monkeypatch):
    """The parser reads an s3:// source through the obstore store the registry gives (its own
    endpoint, credentials and prefix), not the environment's: with the environment pointing
    nowhere it still reads, and the values equal netCDF4-python's. A URL the registry does not
    resolve raises its ValueError; a MemoryStore is refused by name; a missing object is a
    SourceError naming its URL."""
    import zarr
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import MemoryStore

    client, env = moto_server
    client.create_bucket(Bucket="pyvz-reg")
    for f in MONTHS[:2]:
        client.upload_file(str(f), "pyvz-reg", f"deep/archive/{f.name}")
    registry = registry_store_only(env, monkeypatch, "pyvz-reg", "deep")
    # "inline" (not the parser's default): small arrays read and kept inline, through the
    # registry's store; the default keeps every chunk referenced.
    parser = vzarr.virtualizarr.Parser(file_timeout=60, small_chunks="inline")
    keep = vzarr.virtualizarr.Parser(file_timeout=60)
    for f in MONTHS[:2]:
        url = f"s3://pyvz-reg/deep/archive/{f.name}"
        ms = parser(url, registry)
        group = zarr.open_group(ms, mode="r", zarr_format=3)
        with netCDF4.Dataset(f) as nc:
            nc.set_auto_mask(False)
            for v in ("tas", "pr", "time", "lat"):
                np.testing.assert_array_equal(group[v][...], nc[v][...], err_msg=v)
        # (Small arrays are kept inline: read through the registry's store too.)
        assert set(np.unique(ms._group.arrays["lat"].manifest._paths).tolist()) == {
            "__inlined__"}
        # The references name the source's URL, not the store's path.
        ms = keep(url, registry)
        manifest = ms._group.arrays["tas"].manifest
        assert set(np.unique(manifest._paths).tolist()) == {url}
    assert len(parser._stores) == 1  # recreated once, reused for the second file
    with pytest.raises(ValueError):
        parser("s3://elsewhere/x.nc", registry)
    with pytest.raises(vzarr.SourceError) as e:
        parser("s3://pyvz-reg/deep/archive/missing.nc", registry)
    assert e.value.file == "s3://pyvz-reg/deep/archive/missing.nc"
    with pytest.raises(ValueError, match="MemoryStore"):
        parser("s3://mem/x.nc", ObjectStoreRegistry({"s3://mem": MemoryStore()}))
