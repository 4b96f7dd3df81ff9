"""`vzarr sync`: an output built from a directory (or an S3 prefix) of the monthly archive
brought in line after months were added and one was re-processed (its `tas` rewritten by
netCDF4-python with other values): the output equals a fresh build of the files as they are
(byte for byte for a reference file), and the values read through it with zarr-python (the
kerchunk JSON) or icechunk-python equal netCDF4-python's reading of the files. Locally, in an
Icechunk repository, and with the sources and the output on S3 (moto)."""

import json
import shutil
import subprocess

import netCDF4
import numpy as np
import pytest

from conftest import FIXTURES, VZARR_ENV, vzarr_bin
from test_concat import assert_matches_concat, expected_concat, open_virtual
from test_icechunk import open_local, open_xr

ARCHIVE = FIXTURES / "archive"


def month_name(m):
    return f"tas_2023{m:02d}.nc"


def add_months(d, months):
    d.mkdir(parents=True, exist_ok=True)
    for m in months:
        shutil.copy(ARCHIVE / month_name(m), d / month_name(m))


def reprocess(path):
    """Rewrites a month's `tas` with other values, as a re-processing would: the same time
    coordinate, other bytes."""
    with netCDF4.Dataset(path, "a") as ds:
        ds["tas"][:] = ds["tas"][:] * 1.01 + 0.5


def vz(*args, env=None, check=True):
    """The binary with no allowed prefixes configured but those passed."""
    e = dict(env or VZARR_ENV, VZARR_ALLOW_PREFIXES="")
    e.pop("XDG_CONFIG_HOME", None)
    p = subprocess.run([vzarr_bin(), *map(str, args)], capture_output=True, text=True, env=e)
    if check:
        assert p.returncode == 0, f"vzarr {' '.join(map(str, args))}:\n{p.stdout}\n{p.stderr}"
    return p


def files(d):
    return sorted(d.glob("tas_*.nc"))


def assert_reprocessed(virt, path, start):
    """The virtual `tas` of the month at `path` (from index `start`) is the re-processed one:
    equal to netCDF4-python's reading of it, and not the original's."""
    with netCDF4.Dataset(path) as ds:
        now = ds["tas"][:].filled(np.nan)
    with netCDF4.Dataset(ARCHIVE / path.name) as ds:
        was = ds["tas"][:].filled(np.nan)
    got = virt["tas"].values[start:start + now.shape[0]]
    np.testing.assert_array_equal(got, now)
    assert not np.array_equal(got, was)


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_sync_of_a_reference_file(tmp_path, config):
    arch = tmp_path / "arch"
    add_months(arch, range(1, 10))
    out, cache = tmp_path / "out.json", tmp_path / "cache"
    vz("build", arch, "--concat-dim", "time", "-o", out, "--cache-dir", cache)
    add_months(arch, [10, 11])
    reprocess(arch / month_name(5))
    # The plan, and nothing written.
    before = out.read_bytes()
    plan = tmp_path / "plan.json"
    p = vz("sync", out, "--allow-prefix", arch, "--cache-dir", cache, "--dry-run", "--summary-json", plan)
    assert "2 added, 1 replaced, 0 removed, 8 unchanged" in p.stdout, p.stdout
    assert out.read_bytes() == before
    s = json.loads(plan.read_text())
    assert [u.rsplit("/", 1)[1] for u in s["added"]] == [month_name(10), month_name(11)]
    assert [r["url"].rsplit("/", 1)[1] for r in s["replaced"]] == [month_name(5)]
    # The sync: only the new and the re-processed months scanned.
    # The month replaced in place between its neighbours, the new ones appended after the
    # last; the rest of the file copied as it was.
    done = tmp_path / "done.json"
    p = vz("sync", out, "--allow-prefix", arch, "--cache-dir", cache, "--summary-json", done)
    assert "1 changed file(s) replaced in place" in p.stdout, p.stdout
    assert "the rest of the file kept as it was" in p.stdout, p.stdout
    s = json.loads(done.read_text())
    assert s["action"] == "rebuild" and s["build"]["scanned"] == 3, s
    assert s["planned"] == {"planned": "tail", "files": 6, "replaced": 1}, s
    fresh = tmp_path / "fresh.json"
    vz("build", arch, "--concat-dim", "time", "-o", fresh)
    assert out.read_bytes() == fresh.read_bytes()
    _, _, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(files(arch)))
    assert_reprocessed(virt, arch / month_name(5), 31 + 28 + 31 + 30)
    # Up to date now.
    p = vz("sync", out, "--allow-prefix", arch)
    assert "up to date" in p.stdout
    # A removed month: refused, then accepted.
    (arch / month_name(11)).unlink()
    p = vz("sync", out, "--allow-prefix", arch, check=False)
    assert p.returncode == 1 and month_name(11) in p.stderr, p.stderr
    assert out.read_bytes() == fresh.read_bytes()
    vz("sync", out, "--allow-prefix", arch, "--allow-removal")
    _, _, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(files(arch)))


def test_sync_of_an_icechunk_repository(tmp_path, config):
    arch = tmp_path / "arch"
    add_months(arch, range(1, 5))
    repo = tmp_path / "repo"
    vz("build", arch, "--concat-dim", "time", "--format", "icechunk", "-o", repo)
    add_months(arch, [5, 6])
    reprocess(arch / month_name(2))
    p = vz("sync", repo, "--allow-prefix", arch)
    assert "2 added, 1 replaced, 0 removed, 3 unchanged" in p.stdout, p.stdout
    assert "1 changed file(s) replaced in place" in p.stdout, p.stdout
    r, _ = open_local(repo)
    assert len(list(r.ancestry(branch="main"))) == 3  # the first commit, the build, the sync
    virt = open_xr(r)
    assert_matches_concat(virt, expected_concat(files(arch)))
    assert_reprocessed(virt, arch / month_name(2), 31)


def test_sync_on_s3(moto_server, tmp_path, config):
    """Sources under an S3 prefix and the output on S3: a re-uploaded (re-processed) month and
    a new one; the output equals a fresh build, and its values (read from local copies of the
    same bytes: the test venv has no s3fs) equal netCDF4-python's."""
    client, env = moto_server
    bucket = "vzarr-sync"
    client.create_bucket(Bucket=bucket)
    local = tmp_path / "arch"
    add_months(local, range(1, 4))
    for p in files(local):
        client.upload_file(str(p), bucket, f"tas/{p.name}")
    prefix = f"s3://{bucket}/tas/"
    out = f"s3://{bucket}/out/tas.json"
    vz("build", prefix, "--concat-dim", "time", "-o", out, env=env)
    add_months(local, [4])
    reprocess(local / month_name(2))
    for m in (2, 4):
        client.upload_file(str(local / month_name(m)), bucket, f"tas/{month_name(m)}")
    p = vz("sync", out, env=env, check=False)
    assert p.returncode == 1 and "allow" in p.stderr, p.stderr
    p = vz("sync", out, "--allow-prefix", prefix, env=env)
    assert "1 added, 1 replaced, 0 removed, 2 unchanged" in p.stdout, p.stdout
    assert "ETag changed" in p.stdout, p.stdout
    assert "1 changed file(s) replaced in place" in p.stdout, p.stdout
    vz("build", prefix, "--concat-dim", "time", "-o", f"s3://{bucket}/out/fresh.json", env=env)
    got = client.get_object(Bucket=bucket, Key="out/tas.json")["Body"].read()
    want = client.get_object(Bucket=bucket, Key="out/fresh.json")["Body"].read()
    assert got == want
    refs = json.loads(got.decode().replace(prefix, f"file://{local}/"))
    path = tmp_path / "local.json"
    path.write_text(json.dumps(refs))
    _, _, virt = open_virtual(path)
    assert_matches_concat(virt, expected_concat(files(local)))
    assert_reprocessed(virt, local / month_name(2), 31)
    # A new month alone: appended at the tail, the reference file on S3 spliced (read once,
    # its untouched entries copied into the upload), equal to a fresh build.
    add_months(local, [5])
    client.upload_file(str(local / month_name(5)), bucket, f"tas/{month_name(5)}")
    p = vz("sync", out, "--allow-prefix", prefix, env=env)
    assert "1 added, 0 replaced" in p.stdout and "the rest of the file kept as it was" in p.stdout, p.stdout
    vz("build", prefix, "--concat-dim", "time", "-o", f"s3://{bucket}/out/fresh.json", env=env)
    got = client.get_object(Bucket=bucket, Key="out/tas.json")["Body"].read()
    want = client.get_object(Bucket=bucket, Key="out/fresh.json")["Body"].read()
    got, want = (json.loads(b) for b in (got, want))
    for d in (got, want):
        d["vzarr"].pop("inputs", None)
    assert got == want


def test_python_sync(tmp_path, config, monkeypatch):
    """`vzarr.sync` as `vzarr sync`: the plan, an append, a rebuild for a re-processed month,
    removal refused (WriteError naming it) then allowed, locations outside the allowed prefixes
    refused (NotAllowedError); the output equals a fresh `vzarr.build`."""
    import vzarr

    monkeypatch.delenv("VZARR_ALLOW_PREFIXES", raising=False)
    arch = tmp_path / "arch"
    add_months(arch, range(1, 4))
    out, cache = tmp_path / "out.json", tmp_path / "cache"
    vzarr.build(arch, concat_dim="time", output=out, cache_dir=cache)
    assert json.loads(out.read_text())["vzarr"]["inputs"]["locations"] == [f"file://{arch}/"]
    with pytest.raises(vzarr.NotAllowedError, match="allow_prefixes="):
        vzarr.sync(out)
    r = vzarr.sync(out, allow_prefixes=arch)
    assert (r.action, r.build, len(r.unchanged)) == ("nothing", None, 3)
    add_months(arch, [4])
    r = vzarr.sync(out, allow_prefixes=arch, cache_dir=cache, dry_run=True)
    assert (r.action, r.dry_run, [u.rsplit("/", 1)[1] for u in r.added]) == ("append", True, [month_name(4)])
    r = vzarr.sync(out, allow_prefixes=arch, cache_dir=cache)
    assert r.action == "append" and r.build.summary["scanned"] == 1, r
    reprocess(arch / month_name(3))
    r = vzarr.sync(out, allow_prefixes=arch, cache_dir=cache)
    assert r.action == "rebuild" and [c["url"].rsplit("/", 1)[1] for c in r.replaced] == [month_name(3)]
    assert r.build.output == str(out)
    fresh = tmp_path / "fresh.json"
    vzarr.build(arch, concat_dim="time", output=fresh)
    assert out.read_bytes() == fresh.read_bytes()
    (arch / month_name(4)).unlink()
    with pytest.raises(vzarr.WriteError, match=month_name(4)) as e:
        vzarr.sync(out, allow_prefixes=arch)
    assert "allow_removal=True" in str(e.value)
    r = vzarr.sync(out, allow_prefixes=arch, allow_removal=True)
    assert r.action == "rebuild" and [u.rsplit("/", 1)[1] for u in r.removed] == [month_name(4)]
    _, _, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(files(arch)))
