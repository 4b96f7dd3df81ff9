"""`vzarr verify` and `vzarr cat` with sources on an S3-compatible server: moto, started here on
loopback. References are built from the local fixtures and their file:// URLs rewritten to
s3://; the values `vzarr cat` prints equal netCDF4-python's reads of the same files, another
bucket is refused, and a modification time that differs from the build is reported stale."""

import json
import subprocess

import netCDF4
import numpy as np
import pytest

from conftest import FIXTURES, build_refs, vzarr_bin

BUCKET = "vzarr-interop"
OTHER = "vzarr-other"


@pytest.fixture(scope="module")
def s3(moto_server):
    """Two buckets on the moto server with a few fixtures in each; yields (client, env)."""
    client, env = moto_server
    for b in (BUCKET, OTHER):
        client.create_bucket(Bucket=b)
    for name in ("nc4_climate.nc", "nc3_classic.nc", "layouts_latest.h5"):
        client.upload_file(str(FIXTURES / name), BUCKET, f"fixtures/{name}")
        client.upload_file(str(FIXTURES / name), OTHER, f"fixtures/{name}")
    # What the user allows vzarr to read (the references' recorded prefixes only narrow it).
    return client, dict(env, VZARR_ALLOW_PREFIXES=f"s3://{BUCKET}/")


def vzarr_env(env, *args):
    return subprocess.run([vzarr_bin(), *map(str, args)], capture_output=True, text=True, env=env)


def s3_refs(name, tmp_path, keep_mtime=False):
    """References of a fixture with its URLs on S3 (every chunk referenced: the fixtures'
    small chunks would otherwise be kept inline, nothing left to read from S3); returns
    (path, refs)."""
    refs = build_refs(FIXTURES / name, tmp_path / f"{name}.local.json", "--small-chunks", "keep")
    text = json.dumps(refs).replace(f"file://{FIXTURES}/", f"s3://{BUCKET}/fixtures/")
    refs = json.loads(text)
    if not keep_mtime:
        for s in refs["vzarr"]["sources"]:
            s.pop("mtime_ns", None)
    out = tmp_path / f"{name}.s3.json"
    out.write_text(json.dumps(refs))
    return out, refs


@pytest.mark.parametrize("name", ["nc4_climate.nc", "nc3_classic.nc", "layouts_latest.h5"])
def test_verify_through_s3(s3, tmp_path, name):
    _, env = s3
    out, _ = s3_refs(name, tmp_path)
    # vzarr's readers read HDF5 objects in place with ranged reads, libhdf5 a downloaded copy;
    # NetCDF3 on object storage is read by vzarr's NetCDF3 reader either way.
    for readers, says in [("native", "vzarr's"), ("c", "vzarr's NetCDF3" if name.startswith("nc3") else "libhdf5")]:
        p = vzarr_env(env, "verify", out, "--readers", readers)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "all values match" in p.stdout, p.stdout
        assert f"compared with {says}" in p.stdout, p.stdout


@pytest.mark.parametrize(
    "name,selection,var,index",
    [
        ("nc4_climate.nc", "tas[8:12, 3, :]", "tas", np.s_[8:12, 3, :]),
        ("nc3_classic.nc", "tas[-2:, 1:3]", "tas", np.s_[-2:, 1:3]),
    ],
)
def test_cat_through_s3_matches_netcdf4(s3, tmp_path, name, selection, var, index):
    _, env = s3
    out, _ = s3_refs(name, tmp_path)
    p = vzarr_env(env, "cat", out, selection, "--json")
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    with netCDF4.Dataset(FIXTURES / name) as ds:
        v = ds[var]
        v.set_auto_maskandscale(False)
        want = np.asarray(v[index])
    got = np.array(
        [[float(x) for x in row] for row in got] if want.ndim == 2 else got, dtype=want.dtype
    )
    assert got.shape == want.shape
    assert np.array_equal(got.view(f"u{want.dtype.itemsize}"), want.view(f"u{want.dtype.itemsize}"))


def test_references_on_s3(s3, tmp_path):
    client, env = s3
    out, _ = s3_refs("nc3_classic.nc", tmp_path)
    client.upload_file(str(out), BUCKET, "refs/nc3_classic.json")
    p = vzarr_env(env, "verify", f"s3://{BUCKET}/refs/nc3_classic.json", "--sample", "3")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verified 3 chunks" in p.stdout, p.stdout


def test_another_bucket_is_refused(s3, tmp_path):
    _, env = s3
    out, refs = s3_refs("nc3_classic.nc", tmp_path)
    key = "tas/c/0/0/0"
    refs["refs"][key][0] = f"s3://{OTHER}/fixtures/nc3_classic.nc"
    out.write_text(json.dumps(refs))
    for args in (["verify", out], ["cat", out, "tas[0]"]):
        p = vzarr_env(env, *args)
        assert p.returncode != 0
        assert f"refusing to read s3://{OTHER}/fixtures/nc3_classic.nc" in p.stderr, p.stderr
        assert "(array tas)" in p.stderr, p.stderr


def test_changed_object_is_stale(s3, tmp_path):
    _, env = s3
    # The recorded modification time is the local file's, not the upload's.
    out, _ = s3_refs("nc3_classic.nc", tmp_path, keep_mtime=True)
    p = vzarr_env(env, "verify", out)
    assert p.returncode != 0
    assert f"s3://{BUCKET}/fixtures/nc3_classic.nc" in p.stderr, p.stderr
    assert "modification time changed" in p.stderr, p.stderr
    p = vzarr_env(env, "verify", out, "--ignore-stale")
    assert p.returncode == 0, p.stdout + p.stderr
