"""Catalog builds from object storage: NetCDF3 files under an s3:// prefix are listed through
object_store, scanned with ranged reads of their headers, combined along time, and the result
read with xarray equals xarray.concat of the local files; `vzarr verify` passes against the
bucket; the same for NetCDF4 files, and every HDF5 fixture's manifest from the bucket equals
the one from the local file."""

import json
import subprocess

import xarray as xr

from conftest import FIXTURES, open_store, vzarr_bin
from test_concat import assert_matches_concat, expected_concat, write_archive

BUCKET = "vzarr-batch"


def vzarr_env(env, *args):
    return subprocess.run([vzarr_bin(), *map(str, args)], capture_output=True, text=True, env=env)


def test_prefix_of_netcdf3_files(moto_server, tmp_path):
    client, env = moto_server
    client.create_bucket(Bucket=BUCKET)
    paths = write_archive(tmp_path, [(2021, m) for m in (1, 2, 3)], fmt="NETCDF3_64BIT_OFFSET")
    for p in paths:
        client.upload_file(str(p), BUCKET, f"nc3/{p.name}")
    client.put_object(Bucket=BUCKET, Key="nc3/README.txt", Body=b"not data")
    out = tmp_path / "s3.json"
    sumf = tmp_path / "summary.json"
    p = vzarr_env(
        env, "build", f"s3://{BUCKET}/nc3/", "--include", "*.nc", "--concat-dim", "time", "-o", out,
        "--summary-json", sumf,
    )
    assert p.returncode == 0, p.stderr
    refs = json.loads(out.read_text())
    urls = [s["url"] for s in refs["vzarr"]["sources"]]
    assert urls == [f"s3://{BUCKET}/nc3/{p.name}" for p in paths]
    assert all(s.get("etag") for s in refs["vzarr"]["sources"])
    assert json.loads(sumf.read_text())["scanned"] == 3
    # The test venv has no s3fs for fsspec, so xarray reads the same bytes through file://
    # URLs of the uploaded files; vzarr verify below reads from the bucket itself.
    local = json.loads(out.read_text().replace(f"s3://{BUCKET}/nc3/", f"file://{tmp_path}/"))
    virt = xr.open_zarr(open_store(local), consolidated=False)
    assert_matches_concat(virt, expected_concat(paths))
    # verify reads every chunk from the bucket and compares with the sources there.
    v = vzarr_env(dict(env, VZARR_ALLOW_PREFIXES=f"s3://{BUCKET}/"), "verify", out)
    assert v.returncode == 0, v.stderr + v.stdout


def test_prefix_of_netcdf4_files(moto_server, tmp_path):
    """NetCDF4 (HDF5) files on object storage: scanned natively with ranged reads, combined
    along time, values equal xarray.concat of the local files, verify passes on the bucket."""
    client, env = moto_server
    bucket = BUCKET + "-nc4"
    client.create_bucket(Bucket=bucket)
    paths = write_archive(tmp_path, [(2021, m) for m in (1, 2, 3, 4)], zlib=True, chunk_t=5)
    for p in paths:
        client.upload_file(str(p), bucket, f"nc4/{p.name}")
    out = tmp_path / "s3.json"
    sumf = tmp_path / "summary.json"
    p = vzarr_env(
        env, "build", f"s3://{bucket}/nc4/", "--concat-dim", "time", "-o", out, "--summary-json", sumf,
    )
    assert p.returncode == 0, p.stderr
    refs = json.loads(out.read_text())
    assert [s["url"] for s in refs["vzarr"]["sources"]] == [f"s3://{bucket}/nc4/{p.name}" for p in paths]
    assert json.loads(sumf.read_text())["scanned"] == 4
    local = json.loads(out.read_text().replace(f"s3://{bucket}/nc4/", f"file://{tmp_path}/"))
    virt = xr.open_zarr(open_store(local), consolidated=False)
    assert_matches_concat(virt, expected_concat(paths))
    v = vzarr_env(dict(env, VZARR_ALLOW_PREFIXES=f"s3://{bucket}/"), "verify", out)
    assert v.returncode == 0, v.stderr + v.stdout


HDF5_FIXTURES = sorted(
    p for p in FIXTURES.iterdir()
    if p.suffix in (".h5", ".nc") and not p.name.startswith(("bad_", "nc3_"))
)


def test_every_hdf5_fixture_scans_the_same_from_object_storage(moto_server, tmp_path):
    """The manifest of an HDF5 fixture read from the bucket equals the one from the local file,
    byte for byte but for the source's URL and object-store identity (etag, mtime)."""
    client, env = moto_server
    bucket = BUCKET + "-fixtures"
    client.create_bucket(Bucket=bucket)
    assert len(HDF5_FIXTURES) >= 8, HDF5_FIXTURES
    for f in HDF5_FIXTURES:
        client.upload_file(str(f), bucket, f.name)
        remote, local = tmp_path / f"{f.name}.s3.json", tmp_path / f"{f.name}.local.json"
        r = vzarr_env(env, "build", f"s3://{bucket}/{f.name}", "-o", remote)
        assert r.returncode == 0, (f.name, r.stderr)
        l = vzarr_env(env, "build", f, "-o", local)
        assert l.returncode == 0, (f.name, l.stderr)
        rj, lj = json.loads(remote.read_text()), json.loads(local.read_text())
        (rs,), (ls,) = rj["vzarr"].pop("sources"), lj["vzarr"].pop("sources")
        assert rs["url"] == f"s3://{bucket}/{f.name}" and rs.get("etag"), rs
        assert (rs["size"], rs.get("fingerprint")) == (ls["size"], ls.get("fingerprint")), f.name
        rj["vzarr"].pop("allowed_prefixes", None)
        lj["vzarr"].pop("allowed_prefixes", None)
        text = json.dumps(rj, sort_keys=True).replace(f"s3://{bucket}/{f.name}", "SRC")
        assert text == json.dumps(lj, sort_keys=True).replace(ls["url"], "SRC"), f.name
    # The libhdf5 scanner (an oracle behind a flag) reads only local files and says so.
    f = HDF5_FIXTURES[0]
    r = vzarr_env(env, "inspect", f"s3://{bucket}/{f.name}", "--hdf5-scanner", "libhdf5")
    assert r.returncode != 0
    assert f"s3://{bucket}/{f.name}" in r.stderr and "reads only local files" in r.stderr, r.stderr
