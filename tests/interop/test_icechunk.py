"""`vzarr build --format icechunk`: Icechunk repositories read back with icechunk-python 2.3,
zarr-python and xarray (authorising exactly the virtual chunk containers the repository lists)
and compared with independent readers of the sources (netCDF4-python through xarray, h5py,
netCDF4-python raw): monthly archives (whole-month chunks, a rectilinear grid, and time chunk
1; re-encoded edge chunks stored as native chunks), every HDF5/NetCDF4 fixture, NetCDF3;
repository and sources on an S3 server (moto); append as a second commit; `vzarr verify`,
`cat` and `inspect` on repositories, and staleness after a source is touched."""

import json
from datetime import datetime, timezone
import os
import shutil

import h5py
import hdf5plugin  # noqa: F401  (registers zstd/blosc/lz4 so h5py can read those fixtures)
import icechunk
import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

from conftest import (FIXTURES, VERIFY_READERS, assert_values_equal, good_fixtures,
                      h5_values_as_read, run_vzarr)
from test_concat import (
    MONTHS_2023,
    MONTHS_24,
    assert_matches_concat,
    expected_concat,
    write_archive,
)
from test_hdf5_values import h5_datasets

zarr.config.set({"array.rectilinear_chunks": True})


def build_repo(repo, *inputs_and_flags, check=True, keep=True):
    """`vzarr build --format icechunk`; with `keep`, every chunk is a virtual reference as
    stored (the small chunks of these small archives would otherwise be kept inline, as
    native chunks: test_small_chunks.py and the fixture and real-file tests cover that)."""
    small = ["--small-chunks", "keep"] if keep else []
    return run_vzarr("build", *inputs_and_flags, *small, "--format", "icechunk", "-o", repo,
                     check=check)


def containers(repo_obj) -> list[str]:
    return sorted((repo_obj.config.virtual_chunk_containers or {}).keys())


def open_local(repo_path, authorize=True):
    """Opens a local repository as a reader would: the virtual chunk containers it lists are
    what it must authorise (local files need no credentials)."""
    storage = icechunk.local_filesystem_storage(str(repo_path))
    conts = containers(icechunk.Repository.open(storage))
    creds = (
        icechunk.containers_credentials({c: icechunk.credentials.LocalFileSystemAccess for c in conts})
        if authorize
        else None
    )
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)
    return repo, conts


def open_xr(repo, branch="main"):
    session = repo.readonly_session(branch=branch)
    return xr.open_zarr(session.store, consolidated=False, zarr_format=3)


def zarr_group(repo, branch="main"):
    return zarr.open_group(repo.readonly_session(branch=branch).store, mode="r", zarr_format=3)


@pytest.mark.parametrize(
    "months,chunk_t,zlib,grid",
    [
        (MONTHS_24, 31, False, "rectilinear"),  # whole-month chunks over a leap year
        (MONTHS_2023, 1, False, "regular"),  # time chunk 1
        (MONTHS_2023, 10, True, "rectilinear"),  # padded compressed edges: native chunks
    ],
    ids=["whole-month", "time-chunk-1", "ten-day-zlib"],
)
def test_monthly_archive_reads_as_the_sources(tmp_path, months, chunk_t, zlib, grid):
    src = tmp_path / "src"
    src.mkdir()
    paths = write_archive(src, months, chunk_t=chunk_t, zlib=zlib)
    repo_path = tmp_path / "repo"
    p = build_repo(repo_path, *paths, "--concat-dim", "time")
    assert "Icechunk" in p.stdout
    repo, conts = open_local(repo_path)
    assert conts == [f"file://{src}/"]
    tas_doc = json.loads(
        zarr.core.sync.sync(
            repo.readonly_session(branch="main").store.get(
                "tas/zarr.json", zarr.core.buffer.default_buffer_prototype()
            )
        ).to_bytes()
    )
    assert tas_doc["chunk_grid"]["name"] == grid
    virt = open_xr(repo)
    assert_matches_concat(virt, expected_concat(paths))
    # One commit on main besides the repository's first, naming vzarr and the inputs.
    history = list(repo.ancestry(branch="main"))
    assert len(history) == 2
    assert history[0].message.startswith("vzarr ")
    assert paths[0].name in history[0].message
    assert "vzarr" in history[0].metadata
    if zlib:
        assert "re-encoded inline" in p.stdout and "0 native chunks" not in p.stdout


def pieces_of(p):
    """The number of pieces a build's output says it was written in (1 when it says none)."""
    line = next((l for l in p.stdout.splitlines() if l.startswith("written in ")), None)
    if line is None:
        return 1
    assert line.endswith("pieces, one commit each"), line
    return int(line.split()[2])


def assert_no_garbage(repo):
    """Icechunk's garbage collection, cutoff now, finds nothing to delete: every snapshot,
    transaction log and manifest the builds wrote is reachable from the branch."""
    cutoff = datetime.now(timezone.utc)
    gc = repo.garbage_collect(cutoff)
    assert (gc.snapshots_deleted, gc.transaction_logs_deleted, gc.manifests_deleted) == (0, 0, 0), gc


@pytest.mark.parametrize("piece_refs", [1, 7, 100])
def test_pieces_read_as_the_sources(tmp_path, piece_refs):
    """A build written in many pieces (`--piece-refs`; down to one chunk each) reads back with
    icechunk-python + xarray equal to the sources, adds one commit per piece to the branch (the
    last naming the build), leaves no temporary branch and no garbage; an append in pieces
    adds its own and reads equal to the whole."""
    paths = write_archive(tmp_path, MONTHS_24, chunk_t=10, zlib=True)
    repo_path = tmp_path / "repo"
    p = build_repo(repo_path, *paths[:12], "--concat-dim", "time", "--piece-refs", piece_refs)
    n = pieces_of(p)
    assert n > 1 if piece_refs < 100 else n >= 1
    repo, _ = open_local(repo_path)
    assert_matches_concat(open_xr(repo), expected_concat(paths[:12]))
    history = list(repo.ancestry(branch="main"))
    assert len(history) == n + 1
    assert "build of 12 source(s)" in history[0].message
    assert "vzarr" in history[0].metadata
    assert set(repo.list_branches()) == {"main"}
    p = build_repo(repo_path, *paths[12:], "--append", "--piece-refs", piece_refs)
    m = pieces_of(p)
    repo, _ = open_local(repo_path)
    history = list(repo.ancestry(branch="main"))
    assert len(history) == n + m + 1 and "append of 24 source(s)" in history[0].message
    assert set(repo.list_branches()) == {"main"}
    assert_matches_concat(open_xr(repo), expected_concat(paths))
    # The first build's last commit still reads as the first year.
    first = xr.open_zarr(
        repo.readonly_session(snapshot_id=history[m].id).store, consolidated=False, zarr_format=3
    )
    assert_matches_concat(first, expected_concat(paths[:12]))
    assert_no_garbage(repo)
    assert_matches_concat(open_xr(repo), expected_concat(paths))
    v = run_vzarr("verify", repo_path, "--trust-references", check=False)
    assert v.returncode == 0, v.stdout + v.stderr


def test_one_commit_whatever_the_size(tmp_path):
    """`--one-commit`: a build past `--piece-refs` is still one commit, equal to the sources."""
    paths = write_archive(tmp_path, MONTHS_24, chunk_t=10, zlib=True)
    repo_path = tmp_path / "repo"
    p = build_repo(repo_path, *paths[:12], "--concat-dim", "time", "--piece-refs", "7",
                   "--one-commit")
    assert "one commit each" not in p.stdout
    repo, _ = open_local(repo_path)
    assert len(list(repo.ancestry(branch="main"))) == 2
    assert_matches_concat(open_xr(repo), expected_concat(paths[:12]))
    assert_no_garbage(repo)


def test_http_sources_read_as_the_sources(tmp_path, http_files):
    """Sources on an HTTP server (ranged GETs): the repository lists the server's directory as
    an HTTP container, and icechunk-python + xarray, authorising it, read through the server
    the values xarray reads from the files; `vzarr verify` is clean."""
    root, base = http_files
    paths = write_archive(root, MONTHS_2023[:3], chunk_t=31)
    urls = [f"{base}/{p.name}" for p in paths]
    repo_path = tmp_path / "repo"
    build_repo(repo_path, *urls, "--concat-dim", "time")
    storage = icechunk.local_filesystem_storage(str(repo_path))
    assert containers(icechunk.Repository.open(storage)) == [f"{base}/"]
    repo = icechunk.Repository.open(
        storage,
        authorize_virtual_chunk_access=icechunk.containers_credentials(
            {f"{base}/": icechunk.credentials.HttpAccess}
        ),
    )
    assert_matches_concat(open_xr(repo), expected_concat(paths))
    v = run_vzarr("verify", repo_path, "--allow-prefix", f"{base}/", check=False)
    assert v.returncode == 0, v.stdout + v.stderr


def test_pieces_committed_one_by_one(tmp_path):
    """`--commit-per-piece`: the branch gains one commit per piece, the last naming the build
    and holding the provenance, and reads back equal to the sources; so does an append; each
    intermediate snapshot opens and says which piece it holds; no temporary branch is left."""
    paths = write_archive(tmp_path, MONTHS_24, chunk_t=10, zlib=True)
    repo_path = tmp_path / "repo"

    p = build_repo(repo_path, *paths[:12], "--concat-dim", "time", "--piece-refs", "7",
                   "--commit-per-piece")
    n = pieces_of(p)
    assert n > 2
    repo, _ = open_local(repo_path)
    assert_matches_concat(open_xr(repo), expected_concat(paths[:12]))
    history = list(repo.ancestry(branch="main"))
    assert len(history) == n + 1
    assert "build of 12 source(s)" in history[0].message and "vzarr" in history[0].metadata
    for k, h in enumerate(history[1:n], start=1):
        assert h.message == f"vzarr: piece {n - k} of {n} of a build (complete only in the last)"
        assert "vzarr" not in h.metadata
        # Every piece's snapshot is a readable dataset (chunks of later pieces read as fill,
        # so time values may not decode yet).
        part = xr.open_zarr(repo.readonly_session(snapshot_id=h.id).store,
                            consolidated=False, zarr_format=3, decode_times=False)
        assert set(part.data_vars) == set(open_xr(repo).data_vars)
    assert set(repo.list_branches()) == {"main"}
    p = build_repo(repo_path, *paths[12:], "--append", "--piece-refs", "7", "--commit-per-piece")
    m = pieces_of(p)
    repo, _ = open_local(repo_path)
    history = list(repo.ancestry(branch="main"))
    assert len(history) == n + m + 1 and "append of 24 source(s)" in history[0].message
    assert set(repo.list_branches()) == {"main"}
    assert_matches_concat(open_xr(repo), expected_concat(paths))
    v = run_vzarr("verify", repo_path, "--trust-references", check=False)
    assert v.returncode == 0, v.stdout + v.stderr


def test_reading_needs_the_containers_authorised(tmp_path):
    paths = write_archive(tmp_path, MONTHS_2023[:2], chunk_t=31)
    repo_path = tmp_path / "repo"
    build_repo(repo_path, *paths, "--concat-dim", "time")
    repo, _ = open_local(repo_path, authorize=False)
    with pytest.raises(Exception, match="(?i)authoriz|container"):
        zarr_group(repo)["tas"][...]


@pytest.mark.parametrize("keep", [True, False], ids=["references", "small-inline"])
@pytest.mark.parametrize("name", [f["name"] for f in good_fixtures()])
def test_hdf5_fixture_equals_h5py(tmp_path, name, keep):
    entry = next(f for f in good_fixtures() if f["name"] == name)
    src = FIXTURES / name
    repo_path = tmp_path / "repo"
    build_repo(repo_path, src, keep=keep)
    repo, conts = open_local(repo_path)
    assert conts == [f"file://{FIXTURES}/"]
    group = zarr_group(repo)
    skipped = set(entry.get("expect_skipped", {})) | set(entry.get("not_arrays", []))
    checked = 0
    with h5py.File(src, "r") as f:
        for path, ds in h5_datasets(f).items():
            if path in skipped:
                continue
            assert_values_equal(h5_values_as_read(ds), group[path][...], f"{name}:{path}")
            checked += 1
    assert checked > 0


def test_paths_with_spaces_and_percent_signs(tmp_path):
    """A source whose directory and name need percent-encoding in a URL (`a b%20c.nc` in
    `sp ace/`): icechunk-python finds its container and reads the file named so."""
    src_dir = tmp_path / "sp ace"
    src_dir.mkdir()
    src = src_dir / "a b%20c.nc"
    shutil.copy(FIXTURES / "nc4_climate.nc", src)
    repo_path = tmp_path / "repo"
    build_repo(repo_path, src)
    repo, conts = open_local(repo_path)
    assert conts == [f"file://{src_dir}/"]
    group = zarr_group(repo)
    with netCDF4.Dataset(src) as ds:
        ds.set_auto_maskandscale(False)
        for var in ds.variables.values():
            assert_values_equal(var[...], group[var.name][...], var.name)
    v = run_vzarr("verify", repo_path, "--trust-references", check=False)
    assert v.returncode == 0, v.stdout + v.stderr


@pytest.mark.parametrize("name", [f["name"] for f in good_fixtures(formats=("netcdf3",))])
def test_netcdf3_fixture_equals_netcdf4_python(tmp_path, name):
    repo_path = tmp_path / "repo"
    build_repo(repo_path, FIXTURES / name, keep=False)
    repo, _ = open_local(repo_path)
    group = zarr_group(repo)
    with netCDF4.Dataset(FIXTURES / name) as ds:
        ds.set_auto_maskandscale(False)
        ds.set_auto_chartostring(False)
        for var in ds.variables.values():
            assert_values_equal(var[...], group[var.name][...], f"{name}:{var.name}")


def test_append_is_a_second_commit_equal_to_the_whole(tmp_path):
    paths = write_archive(tmp_path, MONTHS_24, chunk_t=31)
    repo_path = tmp_path / "repo"
    cache = tmp_path / "cache"
    build_repo(repo_path, *paths[:12], "--concat-dim", "time", "--cache-dir", cache)
    p = build_repo(repo_path, *paths[12:], "--append", "--cache-dir", cache)
    assert "new repository" not in p.stdout
    repo, _ = open_local(repo_path)
    history = list(repo.ancestry(branch="main"))
    assert [h.message.split(":")[0] for h in history[:2]] == ["vzarr 0.1.0", "vzarr 0.1.0"]
    assert "append of 24 source(s)" in history[0].message
    assert "build of 12 source(s)" in history[1].message
    assert len(history) == 3
    virt = open_xr(repo)
    assert_matches_concat(virt, expected_concat(paths))
    # The first commit still reads as the first year.
    first = xr.open_zarr(
        repo.readonly_session(snapshot_id=history[1].id).store, consolidated=False, zarr_format=3
    )
    assert first.sizes["time"] == 365
    assert_matches_concat(first, expected_concat(paths[:12]))
    # The same append rules as for JSON.
    again = build_repo(repo_path, *paths[12:], "--append", check=False)
    assert again.returncode != 0 and "nothing to append" in again.stderr
    wrong = build_repo(repo_path, paths[0], "--append", "--concat-dim", "lat", check=False)
    assert wrong.returncode != 0 and "concatenated along" in wrong.stderr
    assert len(list(repo.ancestry(branch="main"))) == 3
    # Appending needs a repository.
    none = build_repo(tmp_path / "none", *paths[12:], "--append", check=False)
    assert none.returncode != 0 and "no Icechunk repository" in none.stderr
    assert not (tmp_path / "none").exists()


def test_verify_cat_inspect_and_staleness(tmp_path):
    paths = write_archive(tmp_path, MONTHS_2023, chunk_t=10, zlib=True)
    repo_path = tmp_path / "repo"
    build_repo(repo_path, *paths, "--concat-dim", "time")
    for readers in VERIFY_READERS:
        v = run_vzarr("verify", repo_path, "--trust-references", "--readers", readers, check=False)
        assert v.returncode == 0, v.stdout + v.stderr
        assert "all values match" in v.stdout
    cat = json.loads(run_vzarr("cat", repo_path, "tas[29:33,1,2]", "--json", "--trust-references").stdout)
    want = xr.concat([xr.open_dataset(p, mask_and_scale=False) for p in paths], dim="time")["tas"][29:33, 1, 2]
    assert np.array_equal(np.array(cat, dtype="f4"), want.values)
    ins = json.loads(run_vzarr("inspect", repo_path, "--json").stdout)
    assert len(ins["history"]) == 2 and ins["dataset"]["arrays"]
    # A source touched since the build: verify reports it stale, and so does icechunk-python
    # (the reference's last-modified checksum).
    st = os.stat(paths[3])
    os.utime(paths[3], ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    v = run_vzarr("verify", repo_path, "--trust-references", check=False)
    assert v.returncode != 0
    assert "changed since" in (v.stdout + v.stderr) or "stale" in (v.stdout + v.stderr).lower()
    repo, _ = open_local(repo_path)
    with pytest.raises(Exception, match="(?i)modified|changed|precondition"):
        zarr_group(repo)["tas"][...]


def test_failed_build_leaves_no_commit(tmp_path):
    paths = write_archive(tmp_path, MONTHS_2023[:2], chunk_t=31)
    repo_path = tmp_path / "repo"
    build_repo(repo_path, *paths, "--concat-dim", "time")
    bad = tmp_path / "bad.nc"
    bad.write_bytes(b"not a netcdf file")
    p = build_repo(repo_path, paths[0], bad, "--concat-dim", "time", check=False)
    assert p.returncode != 0
    repo, _ = open_local(repo_path)
    assert len(list(repo.ancestry(branch="main"))) == 2
    # A new repository whose build fails is not created at all.
    p = build_repo(tmp_path / "new", bad, check=False)
    assert p.returncode != 0 and not (tmp_path / "new").exists()


def test_sharded_scans_combine_into_a_repository(tmp_path):
    """`vzarr scan --shard K/N` then `vzarr combine --format icechunk`: one commit whose
    dataset reads as the sources (and as the single-process build's repository does); the
    commit message names the combine; a branch other than main is created in the new
    repository."""
    paths = write_archive(tmp_path, MONTHS_2023, chunk_t=31)
    parts = [tmp_path / f"part-{k}.json" for k in range(3)]
    for k, part in enumerate(parts):
        run_vzarr("scan", *paths, "--shard", f"{k}/3", "-o", part)
    repo_path = tmp_path / "repo"
    p = run_vzarr("combine", *parts, "--concat-dim", "time", "--format", "icechunk",
                  "--branch", "sharded", "-o", repo_path)
    assert "Icechunk, branch sharded" in p.stdout and "new repository" in p.stdout
    repo, conts = open_local(repo_path)
    assert conts == [tmp_path.as_uri() + "/"]
    history = list(repo.ancestry(branch="sharded"))
    assert "combine of 12 source(s)" in history[0].message
    assert_matches_concat(open_xr(repo, branch="sharded"), expected_concat(paths))
    single = tmp_path / "single"
    build_repo(single, *paths, "--concat-dim", "time")
    want = open_xr(open_local(single)[0])
    got = open_xr(repo, branch="sharded")
    for v in want.variables:
        np.testing.assert_array_equal(got[v].values, want[v].values, err_msg=v)
    # A combine into a kerchunk file is what it was.
    out = tmp_path / "combined.json"
    run_vzarr("combine", *parts, "--concat-dim", "time", "-o", out)
    assert json.loads(out.read_text())["vzarr"]["sources"][0]["url"] == paths[0].as_uri()


def test_repository_and_sources_on_s3(tmp_path, moto_server):
    """Sources and repository on an S3 server: half a year built, the rest uploaded and
    appended (the prefix given again: only the new objects are added) as a second commit."""
    client, env = moto_server
    bucket = "icechunk-test"
    client.create_bucket(Bucket=bucket)
    paths = write_archive(tmp_path, MONTHS_2023, chunk_t=31)
    for p in paths[:6]:
        client.upload_file(str(p), bucket, f"archive/{p.name}")
    repo_url = f"s3://{bucket}/repos/tas"
    p = run_vzarr_env(env, "build", f"s3://{bucket}/archive/", "--concat-dim", "time",
                      "--format", "icechunk", "-o", repo_url)
    assert f"s3://{bucket}/archive/" in p.stdout
    for p in paths[6:]:
        client.upload_file(str(p), bucket, f"archive/{p.name}")
    # The append in pieces: the temporary branch and the branch's move on S3 too.
    p = run_vzarr_env(env, "build", f"s3://{bucket}/archive/", "--append", "--format", "icechunk",
                      "-o", repo_url, "--piece-refs", "5")
    m = pieces_of(p)
    assert m > 1
    endpoint = env["AWS_ENDPOINT_URL"]
    storage = icechunk.s3_storage(
        bucket=bucket, prefix="repos/tas", endpoint_url=endpoint, allow_http=True, region="us-east-1",
        access_key_id="test", secret_access_key="test", force_path_style=True,
    )
    conts = containers(icechunk.Repository.open(storage))
    assert conts == [f"s3://{bucket}/archive/"]
    creds = icechunk.containers_credentials(
        {c: icechunk.s3_credentials(access_key_id="test", secret_access_key="test") for c in conts}
    )
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)
    history = list(repo.ancestry(branch="main"))
    assert len(history) == m + 2 and "append of 12 source(s)" in history[0].message
    assert set(repo.list_branches()) == {"main"}
    virt = open_xr(repo)
    assert_matches_concat(virt, expected_concat(paths))
    # vzarr verify reads the repository on S3 too, and sees an object replaced since.
    for readers in VERIFY_READERS:
        v = run_vzarr_env(env, "verify", repo_url, "--trust-references", "--readers", readers, check=False)
        assert v.returncode == 0, v.stdout + v.stderr
    # An object replaced by other bytes (a new ETag): vzarr verify reports it, and
    # icechunk-python refuses its chunks (the references' ETag checksum).
    client.upload_file(str(paths[1]), bucket, f"archive/{paths[0].name}")
    v = run_vzarr_env(env, "verify", repo_url, "--trust-references", check=False)
    assert v.returncode != 0
    with pytest.raises(Exception, match="(?i)modified|changed|precondition|etag"):
        zarr_group(repo)["tas"][0:31]


def run_vzarr_env(env, *args, check=True):
    import subprocess

    from conftest import vzarr_bin

    p = subprocess.run([vzarr_bin(), *map(str, args)], capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"vzarr {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr}")
    return p
