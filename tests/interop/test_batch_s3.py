"""Catalog builds from object storage: NetCDF3 files under an s3:// prefix are listed through
object_store, scanned with ranged reads of their headers, combined along time, and the result
read with xarray equals xarray.concat of the local files; `vzarr verify` passes against the
bucket; the same for NetCDF4 files, and every HDF5 fixture's manifest from the bucket equals
the one from the local file.

The planner on object storage, counted by a proxy in front of the server
(benches/compare/s3proxy.py, no delay): at most 2 requests per file (the scan's head GET and
one read of what lies beyond it), no HEAD, no byte fetched twice; the same after a rebuild from
the scan cache and for a combine of sharded scans; an append, a rebuild from the cache and a
combine of shards give byte-identical outputs to one build."""

import json
import subprocess

import netCDF4
import numpy as np
import pytest
import xarray as xr

from conftest import FIXTURES, counting_proxy, open_store, vzarr_bin
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
        # An object's ETag tells a rewrite: no fingerprint of its head (a local file's has one).
        assert rs["size"] == ls["size"] and rs.get("etag") and "fingerprint" not in rs, f.name
        assert ls.get("fingerprint"), f.name
        rj["vzarr"].pop("allowed_prefixes", None)
        lj["vzarr"].pop("allowed_prefixes", None)
        text = json.dumps(rj, sort_keys=True).replace(f"s3://{bucket}/{f.name}", "SRC")
        assert text == json.dumps(lj, sort_keys=True).replace(ls["url"], "SRC"), f.name
    # The libhdf5 scanner (an oracle behind a flag) reads only local files and says so.
    f = HDF5_FIXTURES[0]
    r = vzarr_env(env, "inspect", f"s3://{bucket}/{f.name}", "--hdf5-scanner", "libhdf5")
    assert r.returncode != 0
    assert f"s3://{bucket}/{f.name}" in r.stderr and "reads only local files" in r.stderr, r.stderr


# --- the planner on object storage ------------------------------------------------------------

PLAN_BUCKET = BUCKET + "-plan"
# NetCDF3 months larger than the scan's 256 KiB head, most of them over 1 MiB (2 record
# variables of 96x192 int16): their late time records lie beyond the head.
PLAN_MONTHS = [(2001, m) for m in (1, 2, 3, 4, 5)]


def write_nc3_month(path, year, month, day0):
    nd = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    ds = netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC")
    ds.createDimension("time", None)
    ds.createDimension("lat", 96)
    ds.createDimension("lon", 192)
    ds.createDimension("nv", 2)
    t = ds.createVariable("time", "f8", ("time",))
    t.units = f"days since {year}-{month:02d}-01"
    t.calendar = "noleap"
    t.bounds = "time_bnds"
    tb = ds.createVariable("time_bnds", "f8", ("time", "nv"))
    lat = ds.createVariable("lat", "f4", ("lat",))
    lon = ds.createVariable("lon", "f4", ("lon",))
    lat[:] = np.linspace(-89, 89, 96)
    lon[:] = np.arange(192) * 1.875
    days = np.arange(nd, dtype="f8")
    for name in ("air", "uwnd"):
        v = ds.createVariable(name, "i2", ("time", "lat", "lon"))
        v.scale_factor = 0.01
        v[:] = ((day0 + days)[:, None, None] + np.arange(96)[None, :, None] + np.zeros(192)).astype("i2")
    t[:] = days + 0.5
    tb[:] = np.stack([days, days + 1], axis=1)
    ds.close()
    return nd


@pytest.fixture(scope="module")
def plan_archive(moto_server, tmp_path_factory):
    """Five NetCDF3 months in the bucket: (local paths, their s3:// URLs, the prefix)."""
    client, _ = moto_server
    client.create_bucket(Bucket=PLAN_BUCKET)
    d = tmp_path_factory.mktemp("plan-archive")
    paths, day0 = [], 0
    for y, m in PLAN_MONTHS:
        p = d / f"air_{y}{m:02d}.nc"
        day0 += write_nc3_month(p, y, m, day0)
        client.upload_file(str(p), PLAN_BUCKET, f"nc3/{p.name}")
        paths.append(p)
    assert sum(p.stat().st_size > (1 << 20) for p in paths) >= 4
    urls = [f"s3://{PLAN_BUCKET}/nc3/{p.name}" for p in paths]
    return paths, urls, f"s3://{PLAN_BUCKET}/nc3/"


def assert_requests_per_file(st, files, *, lists, per_file=2):
    """At most `per_file` requests per object, no HEAD, `lists` listings, and no byte fetched
    twice (the GET bytes are at most the objects' sizes together)."""
    keys = {f"{PLAN_BUCKET}/nc3/{p.name}" for p in files}
    assert st["by_class"]["HEAD"] == 0, st
    assert st["by_class"]["LIST"] == lists, st
    assert st["by_class"]["OTHER"] == 0, st
    assert set(st["objects"]) <= keys, st["objects"]
    assert all(n <= per_file for n in st["objects"].values()), st["objects"]
    assert st["requests"] <= per_file * len(files) + lists, st
    assert st["get_bytes"] <= sum(p.stat().st_size for p in files), st


def refs_without_provenance(path, url_prefix):
    j = json.loads(path.read_text())
    return json.dumps(j["refs"], sort_keys=True).replace(url_prefix, "SRC/")


def test_planner_requests_per_file_and_the_scan_cache(moto_server, plan_archive, tmp_path):
    """A build from the bucket: at most 2 requests per file (the head GET and one read beyond
    it), no HEAD, no byte twice; a rebuild from the scan cache the same, byte-identical; the
    chunks equal those of the local build."""
    _, env = moto_server
    paths, _, prefix = plan_archive
    cache = tmp_path / "cache"
    with counting_proxy(env, tmp_path) as (penv, take):
        outs = []
        for k in range(2):
            out, sumf = tmp_path / f"s3-{k}.json", tmp_path / f"summary-{k}.json"
            p = vzarr_env(penv, "build", prefix, "--concat-dim", "time", "-o", out,
                          "--cache-dir", cache, "--summary-json", sumf)
            assert p.returncode == 0, p.stderr
            st = take()
            assert_requests_per_file(st, paths, lists=1)
            summary = json.loads(sumf.read_text())
            assert (summary["scanned"], summary["cache_hits"]) == ((5, 0) if k == 0 else (0, 5)), summary
            outs.append(out.read_bytes())
        assert outs[0] == outs[1], "the rebuild from the scan cache differs"
    local = tmp_path / "local.json"
    p = vzarr_env(env, "build", *paths, "--concat-dim", "time", "-o", local)
    assert p.returncode == 0, p.stderr
    assert refs_without_provenance(tmp_path / "s3-0.json", prefix) == refs_without_provenance(
        local, f"file://{paths[0].parent}/"
    )
    refs = json.loads((tmp_path / "s3-0.json").read_text())
    virt = xr.open_zarr(open_store(json.loads(json.dumps(refs).replace(prefix, f"file://{paths[0].parent}/"))),
                        consolidated=False)
    assert_matches_concat(virt, expected_concat(paths))


def test_append_to_an_object_storage_build_equals_a_rebuild(moto_server, plan_archive, tmp_path):
    _, env = moto_server
    _, urls, _ = plan_archive
    cache = tmp_path / "cache"
    out = tmp_path / "appended.json"
    p = vzarr_env(env, "build", *urls[:3], "--concat-dim", "time", "-o", out, "--cache-dir", cache)
    assert p.returncode == 0, p.stderr
    sumf = tmp_path / "append.summary.json"
    p = vzarr_env(env, "build", "--append", "-o", out, *urls[3:], "--cache-dir", cache, "--summary-json", sumf)
    assert p.returncode == 0, p.stderr
    summary = json.loads(sumf.read_text())
    # The new files scanned; of the recorded ones only the last is planned again (cached).
    assert (summary["scanned"], summary["cache_hits"]) == (2, 1), summary
    assert summary["append"] == {"planned": "tail", "files": 3}, summary
    full = tmp_path / "full.json"
    p = vzarr_env(env, "build", *urls, "--concat-dim", "time", "-o", full)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes() == full.read_bytes(), "append differs from a rebuild"


def test_sharded_scans_of_object_storage_combine_to_one_build(moto_server, plan_archive, tmp_path):
    """`vzarr scan --shard K/N` over a catalog of s3:// URLs, then `vzarr combine`: the same
    bytes as one build; the combine (whose partial scans carry no bytes) reads each file at most
    twice, no HEAD."""
    _, env = moto_server
    paths, urls, _ = plan_archive
    cat = tmp_path / "files.txt"
    cat.write_text("\n".join(urls) + "\n")
    single = tmp_path / "single.json"
    p = vzarr_env(env, "build", "--catalog", cat, "--concat-dim", "time", "-o", single)
    assert p.returncode == 0, p.stderr
    n = 3
    parts = [tmp_path / f"part-{k}.json" for k in range(n)]
    for k in range(n):
        p = vzarr_env(env, "scan", "--catalog", cat, "--shard", f"{k}/{n}", "-o", parts[k])
        assert p.returncode == 0, p.stderr
    combined = tmp_path / "combined.json"
    with counting_proxy(env, tmp_path) as (penv, take):
        p = vzarr_env(penv, "combine", *reversed(parts), "--concat-dim", "time", "-o", combined)
        assert p.returncode == 0, p.stderr
        assert_requests_per_file(take(), paths, lists=0)
    assert combined.read_bytes() == single.read_bytes()

    # The last object replaced after its scan: the combine reads it as the scan recorded it
    # (conditional on the ETag), so it is left out and reported as changed (a combine goes on
    # past files it cannot combine), never read with references made for other bytes.
    client, _ = moto_server
    key = urls[-1].removeprefix(f"s3://{PLAN_BUCKET}/")
    changed = tmp_path / "changed.nc"
    changed.write_bytes(paths[-1].read_bytes()[:-8] + b"\x00" * 8)
    client.upload_file(str(changed), PLAN_BUCKET, key)
    try:
        stale, report = tmp_path / "stale.json", tmp_path / "stale.failed.txt"
        p = vzarr_env(env, "combine", *parts, "--concat-dim", "time", "-o", stale, "--report", report)
        assert p.returncode == 2, p.stderr
        failed = report.read_text()
        assert urls[-1] in failed and "changed" in failed, failed
        assert [s["url"] for s in json.loads(stale.read_text())["vzarr"]["sources"]] == urls[:-1]
    finally:
        client.upload_file(str(paths[-1]), PLAN_BUCKET, key)


def test_large_references_stream_to_object_storage(moto_server, tmp_path):
    """References of 300,000 chunks (about 24 MB of JSON, more than one 16 MiB part) written to
    s3:// go up as a multipart upload while they are rendered: the object is byte for byte what
    the same build writes to a local file, and zarr-python reads values through it equal to
    h5py's (at the start, middle and end); an output in a bucket that does not exist fails naming the URL and leaves
    nothing."""
    import h5py

    client, env = moto_server
    bucket = "vzarr-big-out"
    client.create_bucket(Bucket=bucket)
    src = tmp_path / "many.h5"
    rng = np.random.default_rng(7)
    values = rng.integers(-100, 100, size=300_000, dtype=np.int16)
    with h5py.File(src, "w") as f:
        f.create_dataset("v", data=values, chunks=(1,))
    # Every chunk referenced (by default these 2-byte chunks would be merged into one).
    keep = ["--small-chunks", "keep"]
    local = tmp_path / "local.json"
    p = vzarr_env(env, "build", src, "-o", local, *keep)
    assert p.returncode == 0, p.stderr
    assert local.stat().st_size > 17 * 2**20
    url = f"s3://{bucket}/refs/many.json"
    p = vzarr_env(env, "build", src, "-o", url, *keep)
    assert p.returncode == 0, p.stderr
    body = client.get_object(Bucket=bucket, Key="refs/many.json")["Body"].read()
    assert body == local.read_bytes()
    v = xr.open_zarr(open_store(json.loads(body)), consolidated=False)["v"]
    for part in (slice(0, 500), slice(149_800, 150_300), slice(299_500, 300_000)):
        np.testing.assert_array_equal(v[part].values, values[part])
    p = vzarr_env(env, "build", src, "-o", "s3://vzarr-no-such-bucket/refs/many.json")
    assert p.returncode != 0
    assert "s3://vzarr-no-such-bucket/refs/many.json" in p.stderr, p.stderr
    with pytest.raises(client.exceptions.NoSuchBucket):
        client.list_objects_v2(Bucket="vzarr-no-such-bucket")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["refs/many.json"]
    uploads = client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert uploads == [], "no upload left open"


def test_heads_are_learned_from_the_first_files(moto_server, tmp_path):
    """A catalog of alike files: the first files are opened with the full 256 KiB head, the
    later ones with a head a quarter larger than what the first scans read of theirs (the
    metadata and the small chunks kept for the planner), in the same requests per file; the
    output equals a build of the same files from disk."""
    client, env = moto_server
    bucket = BUCKET + "-heads"
    client.create_bucket(Bucket=bucket)
    rng = np.random.default_rng(3)
    paths = []
    for k in range(24):
        p = tmp_path / f"day{k:02}.nc"
        with netCDF4.Dataset(p, "w") as nc:
            nc.createDimension("time", None)
            nc.createDimension("y", 60)
            nc.createDimension("x", 80)
            t = nc.createVariable("time", "f8", ("time",))
            t.units = "hours since 2024-01-01"
            t[:] = np.arange(24) + 24 * k
            v = nc.createVariable("tas", "f4", ("time", "y", "x"), chunksizes=(1, 60, 80))
            v[:] = rng.normal(280, 5, (24, 60, 80)).astype("f4")
        client.upload_file(str(p), bucket, f"days/{p.name}")
        paths.append(p)
    log = tmp_path / "access.log"
    out = tmp_path / "s3.json"
    with counting_proxy(env, tmp_path, "--access-log", log) as (penv, take):
        p = vzarr_env(penv, "build", f"s3://{bucket}/days/", "--concat-dim", "time", "-o", out,
                      "--jobs", "2")
        st = take()
    assert p.returncode == 0, p.stderr
    # Each object's first GET is its head: full for the first files, learned for the rest.
    heads = {}
    for line in log.read_text().splitlines():
        f = line.split()
        if not line.startswith("#") and f[2] == "GET":
            heads.setdefault(f[4], int(f[7]))
    size = paths[0].stat().st_size
    assert size > 460_000, size
    full = [n for n in heads.values() if n == 256 << 10]
    learned = [n for n in heads.values() if n < 256 << 10]
    assert len(heads) == 24 and 4 <= len(full) <= 8, heads
    assert max(learned) <= 64 << 10, heads
    assert st["requests"] <= 2 * 24 + 1, st
    # The same references as from disk.
    local = tmp_path / "local.json"
    assert vzarr_env(env, "build", *paths, "--concat-dim", "time", "-o", local).returncode == 0
    assert json.loads(out.read_text())["refs"] == json.loads(
        local.read_text().replace(f"file://{tmp_path}/", f"s3://{bucket}/days/"))["refs"]
