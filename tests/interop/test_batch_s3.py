"""Catalog builds from object storage: NetCDF3 files under an s3:// prefix are listed through
object_store, scanned with ranged reads of their headers, combined along time, and the result
read with xarray equals xarray.concat of the local files; `vzarr verify` passes against the
bucket; an HDF5 source on object storage is refused with a clear message."""

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


def test_hdf5_on_object_storage_is_refused_clearly(moto_server, tmp_path):
    client, env = moto_server
    client.create_bucket(Bucket=BUCKET + "-h5")
    client.upload_file(str(FIXTURES / "nc4_climate.nc"), BUCKET + "-h5", "nc4_climate.nc")
    out = tmp_path / "out.json"
    p = vzarr_env(env, "build", f"s3://{BUCKET}-h5/nc4_climate.nc", "-o", out)
    assert p.returncode == 1
    assert "nc4_climate.nc" in p.stderr and "not yet supported" in p.stderr, p.stderr
    assert not out.exists()
