"""Builds from object storage survive what S3 services and networks do (issue 33), through
benches/compare/s3proxy.py with --faults in front of the moto server: a catalog of 1,100
objects (two listing pages) built while the proxy answers 4% of reads, HEADs and listings
with 503 SlowDown, 2% with 500, resets 2% of connections, cuts 2% of response bodies short,
cuts the body of the second listing page and answers its retry with 503, gives the output a
clean build gives, byte for byte; an object that is persistently refused (403) is named, and
left out with --on-error skip; a build killed part-way leaves no output."""

import json
import signal
import subprocess
import sys
import time

import netCDF4
import numpy as np
import pytest
import xarray as xr

from conftest import ROOT, counting_proxy, open_store, vzarr_bin

BUCKET = "vzarr-faults"
N = 1100  # two listing pages of S3's 1,000 keys


def vzarr_env(env, *args):
    return subprocess.run([vzarr_bin(), *map(str, args)], capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def catalog(moto_server, tmp_path_factory):
    """N small NetCDF3 files of 2 records each, uploaded under s3://BUCKET/cat/."""
    client, env = moto_server
    client.create_bucket(Bucket=BUCKET)
    d = tmp_path_factory.mktemp("faults")
    paths = []
    for k in range(N):
        p = d / f"f{k:04}.nc"
        with netCDF4.Dataset(p, "w", format="NETCDF3_CLASSIC") as nc:
            nc.createDimension("time", None)
            t = nc.createVariable("time", "f8", ("time",))
            t.units = "hours since 2024-01-01"
            t[:] = [2 * k, 2 * k + 1]
            nc.createVariable("x", "f4", ("time",))[:] = [k, -k]
        client.upload_file(str(p), BUCKET, f"cat/{p.name}")
        paths.append(p)
    return paths, f"s3://{BUCKET}/cat/", env


def test_a_catalog_built_through_faults_equals_a_clean_build(catalog, tmp_path):
    paths, prefix, env = catalog
    clean = tmp_path / "clean.json"
    p = vzarr_env(env, "build", prefix, "--concat-dim", "time", "-o", clean)
    assert p.returncode == 0, p.stderr
    # The second page's listing cut short, its retry answered 503, the next retry served.
    faults = "503=0.04,500=0.02,reset=0.02,cut=0.02,cut-list=2,503-list=3,seed=7"
    with counting_proxy(env, tmp_path, "--faults", faults) as (penv, take):
        out = tmp_path / "faulty.json"
        p = vzarr_env(penv, "build", prefix, "--concat-dim", "time", "-o", out)
        st = take()
    assert p.returncode == 0, p.stderr
    # Every kind of fault happened, the listing's among them.
    assert {"503", "500", "reset", "cut"} <= set(st["faults"]), st["faults"]
    assert sum(st["faults"].values()) >= 100, st["faults"]
    assert st["by_class"]["LIST"] >= 4, st["by_class"]
    assert out.read_bytes() == clean.read_bytes()
    refs = json.loads(out.read_text())
    ds = xr.open_zarr(open_store(refs), consolidated=False)
    assert ds.sizes["time"] == 2 * N
    np.testing.assert_array_equal(ds["x"].values[-2:], [N - 1, -(N - 1)])


def test_a_refused_object_is_named_and_skipped(catalog, tmp_path):
    paths, prefix, env = catalog
    denied = f"s3://{BUCKET}/cat/f0100.nc"
    with counting_proxy(env, tmp_path, "--faults", "deny=f0100") as (penv, _):
        out = tmp_path / "out.json"
        p = vzarr_env(penv, "build", prefix, "--concat-dim", "time", "-o", out)
        assert p.returncode == 1
        assert denied in p.stderr and "403" in p.stderr, p.stderr
        assert not out.exists()
        report = tmp_path / "failed.txt"
        p = vzarr_env(penv, "build", prefix, "--concat-dim", "time", "-o", out, "--allow-gaps",
                      "--on-error", "skip", "--report", report)
    assert p.returncode == 2, p.stderr
    lines = report.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith(denied) and "403" in lines[0], lines
    ds = xr.open_zarr(open_store(json.loads(out.read_text())), consolidated=False)
    assert ds.sizes["time"] == 2 * (N - 1)


def test_a_build_killed_part_way_leaves_no_output(catalog, tmp_path):
    paths, prefix, env = catalog
    # 50 ms a request: the build takes seconds; it is killed within the first.
    with counting_proxy(env, tmp_path, delay_ms=50) as (penv, take):
        out = tmp_path / "out.json"
        proc = subprocess.Popen([vzarr_bin(), "build", prefix, "--concat-dim", "time", "-o",
                                 str(out)], env=penv, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        assert proc.poll() is None, "the build ended before it could be killed"
        assert take()["requests"] > 0
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert not out.exists()
    assert list(tmp_path.glob("out.json*")) == []


def test_the_proxy_itself():
    """s3proxy.py's own tests (framing, counters, faults): stdlib only."""
    p = subprocess.run([sys.executable, str(ROOT / "benches" / "compare" / "test_s3proxy.py")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
