"""References opened in one call (issue 30): `vzarr.open_dataset` and
`xarray.open_dataset(..., engine="vzarr")` take a reference file (a path, or a URL on S3) or an
Icechunk repository (a directory, or a prefix on S3) built by the vzarr binary, turn on
rectilinear chunk grids when needed, and read the values netCDF4-python reads from the sources.
What the references point at must be under the prefixes the caller allows (as for
`vzarr verify`): a reference outside them is refused before anything is read from it (a
reference file's when it opens; a repository's, read key by key, when the chunk is read)."""

import json
import os
import subprocess
import sys

import netCDF4
import numpy as np
import pytest
import xarray as xr

from conftest import FIXTURES, run_vzarr, vzarr_bin

import vzarr

ARCHIVE = FIXTURES / "archive"
MONTHS = sorted(ARCHIVE.glob("tas_2023*.nc"))


# Only what each test allows: no VZARR_ALLOW_PREFIXES, no configuration file.
pytestmark = pytest.mark.usefixtures("no_configured_prefixes")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The monthly archive (31/28/30-day months: a rectilinear time axis) built by the CLI as
    kerchunk JSON and as an Icechunk repository."""
    d = tmp_path_factory.mktemp("built")
    run_vzarr("build", ARCHIVE, "--concat-dim", "time", "-o", d / "tas.json")
    run_vzarr("build", ARCHIVE, "--concat-dim", "time", "--format", "icechunk", "-o", d / "tas.icechunk")
    return d


def netcdf4_values(var):
    """`var` of every month, raw, as netCDF4-python reads it, concatenated along time."""
    parts = []
    for f in MONTHS:
        with netCDF4.Dataset(f) as nc:
            nc.set_auto_mask(False)
            nc.set_auto_scale(False)
            parts.append(nc[var][...])
    return np.concatenate(parts)


def assert_archive(ds):
    """Raw values and decoded ones equal what netCDF4-python and xarray read from the files."""
    np.testing.assert_array_equal(ds["tas"].values, xr.concat(
        [xr.open_dataset(f, engine="netcdf4")["tas"] for f in MONTHS], dim="time").values)
    assert ds.sizes["time"] == 365
    time = xr.concat([xr.open_dataset(f, engine="netcdf4")["time"] for f in MONTHS], dim="time")
    np.testing.assert_array_equal(ds["time"].values, time.values)


def test_a_reference_file_opens_in_one_call(built):
    path = built / "tas.json"
    for ds in (
        vzarr.open_dataset(path, allow_prefixes=str(ARCHIVE)),
        vzarr.open_dataset(str(path), trust_references=True),
        xr.open_dataset(path, engine="vzarr", allow_prefixes=[f"{ARCHIVE}/"]),
    ):
        assert not ds["tas"].variable._in_memory
        assert_archive(ds)
    raw = xr.open_dataset(path, engine="vzarr", trust_references=True, mask_and_scale=False,
                          decode_times=False)
    np.testing.assert_array_equal(raw["tas"].values, netcdf4_values("tas"))
    # Time is re-encoded into the first month's units (decoded, it equals the files': above).
    assert raw["time"].attrs["units"] == "days since 2023-01-01"
    # Build options do not apply to what is already built.
    with pytest.raises(TypeError, match="a reference file"):
        vzarr.open_dataset(path, concat_dim="time")


def test_an_icechunk_repository_opens_in_one_call(built):
    repo = built / "tas.icechunk"
    for ds in (
        vzarr.open_dataset(repo, trust_references=True),
        xr.open_dataset(repo, engine="vzarr", allow_prefixes=str(ARCHIVE)),
    ):
        assert_archive(ds)
    raw = xr.open_dataset(str(repo), engine="vzarr", trust_references=True, mask_and_scale=False)
    np.testing.assert_array_equal(raw["tas"].values, netcdf4_values("tas"))
    with pytest.raises(vzarr.VzarrError, match="no-such-branch"):
        vzarr.open_dataset(repo, trust_references=True, branch="no-such-branch")


def test_sources_still_build():
    ds = vzarr.open_dataset(ARCHIVE, concat_dim="time")
    assert_archive(ds)
    one = xr.open_dataset(MONTHS[0], engine="vzarr")
    want = xr.open_dataset(MONTHS[0], engine="netcdf4")
    np.testing.assert_array_equal(one["tas"].values, want["tas"].values)


def test_references_outside_the_allowed_prefixes_are_refused(built, tmp_path):
    path = built / "tas.json"
    # Nothing allowed: refused, whatever the references record.
    with pytest.raises(vzarr.NotAllowedError, match="no allowed prefixes"):
        vzarr.open_dataset(path)
    # Another directory allowed: refused.
    with pytest.raises(vzarr.NotAllowedError, match="not under an allowed prefix"):
        vzarr.open_dataset(path, allow_prefixes=str(tmp_path))
    # A tampered reference to /etc/passwd: refused even when the references are trusted (they
    # record the archive's directory only), and even when the tampered file records `/`
    # unless trusted.
    refs = json.loads(path.read_text())
    key = next(k for k in refs["refs"] if k.startswith("tas/c/"))
    refs["refs"][key] = ["file:///etc/passwd", 0, 64]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(refs))
    for kwargs in ({"trust_references": True}, {"allow_prefixes": str(ARCHIVE)}):
        with pytest.raises(vzarr.NotAllowedError, match="/etc/passwd") as e:
            vzarr.open_dataset(bad, **kwargs)
        assert isinstance(e.value, vzarr.SourceError)
        with pytest.raises(vzarr.NotAllowedError, match="/etc/passwd"):
            xr.open_dataset(bad, engine="vzarr", **kwargs)
    refs["vzarr"]["allowed_prefixes"] = ["file:///"]
    bad.write_text(json.dumps(refs))
    with pytest.raises(vzarr.NotAllowedError, match="/etc/passwd"):
        vzarr.open_dataset(bad, allow_prefixes=str(ARCHIVE))
    # The environment and the configuration file allow as allow_prefixes= does.
    os.environ["VZARR_ALLOW_PREFIXES"] = f"/nowhere,{ARCHIVE}"
    try:
        assert_archive(vzarr.open_dataset(path))
    finally:
        del os.environ["VZARR_ALLOW_PREFIXES"]
    conf = tmp_path / "config" / "vzarr"
    conf.mkdir(parents=True)
    (conf / "allowed-prefixes").write_text(f"# the archive\n{ARCHIVE}\n")
    assert_archive(vzarr.open_dataset(path))


def test_a_repository_pointing_outside_the_allowed_prefixes_is_refused(built, tmp_path):
    repo = built / "tas.icechunk"
    # The sources its commit records are checked when it opens.
    with pytest.raises(vzarr.NotAllowedError, match="no allowed prefixes"):
        vzarr.open_dataset(repo)
    with pytest.raises(vzarr.NotAllowedError, match="not under an allowed prefix"):
        xr.open_dataset(repo, engine="vzarr", allow_prefixes=str(tmp_path))


def _tampered_repository(tmp_path, target):
    """The monthly archive as a repository (its sources copied under tmp_path/allowed), then
    a commit by icechunk-python (no vzarr provenance) that points tas's first chunk at
    ``target`` through a virtual chunk container the repository declares for it."""
    import shutil

    import icechunk

    allowed = tmp_path / "allowed"
    allowed.mkdir()
    for f in MONTHS:
        shutil.copy(f, allowed / f.name)
    repo = tmp_path / "tas.icechunk"
    run_vzarr("build", allowed, "--concat-dim", "time", "--format", "icechunk", "-o", repo)
    storage = icechunk.local_filesystem_storage(str(repo))
    config = icechunk.RepositoryConfig.default()
    prefix = f"file://{os.path.dirname(target)}/"
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(os.path.dirname(target))))
    ic = icechunk.Repository.open(storage, config=config)
    ic.save_config()
    session = ic.writable_session("main")
    session.store.set_virtual_ref("tas/c/0/0/0", f"file://{target}", offset=0, length=64)
    session.commit("a reference outside the archive")
    return repo, allowed


def test_a_repository_whose_references_leave_the_allowed_prefixes_is_refused_before_reading(tmp_path):
    """A commit not made by vzarr points one chunk at a file outside the allowed directory, and
    declares a virtual chunk container for it: the repository opens (nothing it records is
    outside), the variables that stay inside read equal to the sources, and reading the
    tampered chunk raises NotAllowedError naming the file, before any byte of it is read,
    whether the caller allows the archive's directory or trusts what the repository records.
    vzarr's own rules decide, not the containers the repository declares."""
    secret = tmp_path / "secret" / "key.bin"
    secret.parent.mkdir()
    secret.write_bytes(b"s" * 4096)
    repo, allowed = _tampered_repository(tmp_path, secret)
    for kwargs in ({"allow_prefixes": str(allowed)}, {"allow_prefixes": [str(allowed), str(tmp_path / "nowhere")]}):
        ds = vzarr.open_dataset(repo, **kwargs)
        np.testing.assert_array_equal(ds["lat"].values, xr.open_dataset(MONTHS[0], engine="netcdf4")["lat"].values)
        np.testing.assert_array_equal(ds["tas"][40:].values, xr.concat(
            [xr.open_dataset(f, engine="netcdf4")["tas"] for f in MONTHS], dim="time")[40:].values)
        with pytest.raises(vzarr.NotAllowedError, match="key.bin") as e:
            ds["tas"][0].values
        assert "not under an allowed prefix" in str(e.value)
    # The store alone, as dask and zarr-python use it.
    store = vzarr.store.VzarrStore(repo, allow_prefixes=str(allowed))
    with pytest.raises(vzarr.NotAllowedError, match="key.bin"):
        store.get_sync("tas/c/0/0/0")


def test_a_link_inside_the_allowed_directory_that_leads_out_is_refused(tmp_path):
    """A reference to a symbolic link inside the allowed directory whose target is outside:
    refused once the link is resolved (as for reference files), although its URL is under
    both the allowed prefix and the repository's container."""
    secret = tmp_path / "secret" / "key.bin"
    secret.parent.mkdir()
    secret.write_bytes(b"s" * 4096)
    link = tmp_path / "allowed" / "link.nc"
    repo, allowed = _tampered_repository(tmp_path, link)
    link.symlink_to(secret)
    ds = vzarr.open_dataset(repo, allow_prefixes=str(allowed))
    with pytest.raises(vzarr.NotAllowedError, match="link.nc") as e:
        ds["tas"][0].values
    assert str(secret) in str(e.value)


def test_rectilinear_grids_are_turned_on_as_needed(built):
    """In a fresh interpreter, with zarr-python's default configuration (rectilinear chunk
    grids off), the uneven monthly archive opens and reads."""
    code = (
        "import sys, zarr, xarray as xr, numpy as np\n"
        "assert not zarr.config.get('array.rectilinear_chunks')\n"
        "for p in sys.argv[1:]:\n"
        "    ds = xr.open_dataset(p, engine='vzarr', trust_references=True)\n"
        "    print(p, float(ds['tas'].sum()))\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(built / "tas.json"), str(built / "tas.icechunk")],
                       capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "ZARR_ARRAY__RECTILINEAR_CHUNKS"})
    assert p.returncode == 0, p.stderr
    sums = [float(line.split()[-1]) for line in p.stdout.splitlines()]
    want = float(xr.concat([xr.open_dataset(f, engine="netcdf4")["tas"] for f in MONTHS], dim="time").sum())
    assert sums == pytest.approx([want, want], rel=1e-6)


def test_references_and_repositories_on_s3(moto_server, built, tmp_path, monkeypatch):
    """A reference file and a repository on S3 (the sources local), opened by URL."""
    client, env = moto_server
    bucket = "vzarr-open"
    client.create_bucket(Bucket=bucket)
    for k in ("AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(k, env[k])
    client.upload_file(str(built / "tas.json"), bucket, "refs/tas.json")
    url = f"s3://{bucket}/refs/tas.json"
    assert_archive(vzarr.open_dataset(url, allow_prefixes=str(ARCHIVE)))
    with pytest.raises(vzarr.NotAllowedError):
        xr.open_dataset(url, engine="vzarr")
    repo = f"s3://{bucket}/repos/tas"
    p = subprocess.run([vzarr_bin(), "build", str(ARCHIVE), "--concat-dim", "time", "--format", "icechunk", "-o", repo],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert_archive(xr.open_dataset(repo, engine="vzarr", trust_references=True))
    with pytest.raises(vzarr.NotAllowedError):
        vzarr.open_dataset(repo, allow_prefixes=str(tmp_path))
