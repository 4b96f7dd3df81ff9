"""Appends planned at the tail (issue 51): monthly archives written here with netCDF4-python
(NetCDF4 and NetCDF3, uneven months, padded chunks compressed or not that move mid-axis,
static variables, CF time in other units and calendars) built from their first months, then
appended to month by month. After every append the reference file is byte for byte the one a
full build of the same files writes, and the values read through it with xarray equal
`xarray.concat` of the files read by netCDF4-python; an Icechunk repository appended the same
way reads the same through icechunk-python, and each append adds only the manifests it
touches."""

import json

import netCDF4
import pytest

from conftest import run_vzarr
from test_icechunk import open_local, open_xr
from test_concat import MONTHS_24, assert_matches_concat, expected_concat, open_virtual, write_archive

# (scenario id, write_archive options, build options, whether the tail is enough for every
# append).
SCENARIOS = [
    ("nc4-month-chunks", dict(chunk_t=31), (), True),
    ("nc4-ten-day-chunks-zlib", dict(chunk_t=10, zlib=True), (), True),
    # Padded uncompressed chunks cut by reference (small chunks kept as they are: merged, they
    # would be one chunk a month).
    ("nc4-ten-day-chunks-trimmed", dict(chunk_t=10), ("--small-chunks", "keep"), True),
    ("nc4-noleap-hours", dict(chunk_t=7, zlib=True, cal="noleap", time_in_hours=True), (), True),
    ("nc4-units-since-2000", dict(chunk_t=10, zlib=True, units="days since 2000-01-01"), (), True),
    # Chunks of a day (192 bytes) and NetCDF3 records are kept inline whole.
    ("nc4-daily-chunks-inline", dict(chunk_t=1), (), True),
    ("nc3-classic", dict(fmt="NETCDF3_CLASSIC"), (), True),
    ("nc3-64bit-offset", dict(fmt="NETCDF3_64BIT_OFFSET"), (), True),
    ("nc3-float64", dict(fmt="NETCDF3_64BIT_OFFSET", tas_dtype="f8"), (), True),
    # Uncompressed chunks merged into a month each: merging is decided from the whole array,
    # so every file is planned again (and the result is still a full build's).
    ("nc4-ten-day-chunks-merged", dict(chunk_t=10), (), False),
]


def tail_or_full(p):
    line = next((l for l in p.stdout.splitlines() if l.startswith("appended ")), None)
    assert line is not None, p.stdout
    return "tail" if line.startswith("appended at the tail") else "full"


@pytest.mark.parametrize(
    "opts,build_opts,tail", [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS]
)
def test_appends_equal_a_full_build(tmp_path, opts, build_opts, tail):
    months = MONTHS_24[:8]
    src = tmp_path / "src"
    src.mkdir()
    paths = write_archive(src, months, **opts)
    out = tmp_path / "appended.json"
    run_vzarr("build", *paths[:3], "--concat-dim", "time", "-o", out, *build_opts)
    ways = []
    # One month, then two at once, then the rest one by one.
    steps = [paths[3:4], paths[4:6], paths[6:7], paths[7:8]]
    done = 3
    for step in steps:
        p = run_vzarr("build", "--append", *step, "-o", out)
        ways.append(tail_or_full(p))
        if ways[-1] == "tail":
            # Read at its tail: the rest of the file copied, not parsed and rendered again.
            assert "the rest of the file kept as it was" in p.stdout, p.stdout
        done += len(step)
        full = tmp_path / f"full{done}.json"
        run_vzarr("build", *paths[:done], "--concat-dim", "time", "-o", full, *build_opts)
        assert out.read_bytes() == full.read_bytes(), f"after {done} months ({ways[-1]})"
    assert set(ways) == ({"tail"} if tail else {"full"}), ways
    _, _, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(paths))


@pytest.mark.parametrize(
    "opts,build_opts,tail", [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS]
)
def test_a_reprocessed_month_is_replaced_in_place(tmp_path, opts, build_opts, tail):
    """`vzarr sync` after a month in the middle was re-processed (its `tas` rewritten by
    netCDF4-python: other values, and where compressed other chunk sizes and offsets) and a
    new month came: the month replaced in place between its neighbours and the new one
    appended where the tail is enough, every file planned where not; either way the reference
    file is byte for byte a full build's and the values netCDF4-python's."""
    src = tmp_path / "src"
    src.mkdir()
    paths = write_archive(src, MONTHS_24[:7], **opts)
    later = paths[6].rename(tmp_path / paths[6].name)
    out = tmp_path / "out.json"
    run_vzarr("build", src, "--concat-dim", "time", "-o", out, *build_opts)
    later.rename(paths[6])
    with netCDF4.Dataset(paths[3], "a") as ds:
        ds["tas"][:] = ds["tas"][:] * 1.01 + 0.5
    p = run_vzarr("sync", out, "--allow-prefix", src)
    assert "1 added, 1 replaced, 0 removed" in p.stdout, p.stdout
    assert ("1 changed file(s) replaced in place" in p.stdout) == tail, p.stdout
    full = tmp_path / "full.json"
    run_vzarr("build", src, "--concat-dim", "time", "-o", full, *build_opts)
    assert out.read_bytes() == full.read_bytes()
    _, _, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(paths))


def test_new_files_before_the_last_plan_every_file(tmp_path):
    """A month that belongs before the output's last file: the tail is not enough; the append
    plans every file and equals a full build."""
    paths = write_archive(tmp_path, MONTHS_24[:5], chunk_t=10, zlib=True)
    out = tmp_path / "out.json"
    run_vzarr("build", paths[0], paths[1], paths[3], "--concat-dim", "time", "--allow-gaps", "-o", out)
    p = run_vzarr("build", "--append", paths[2], paths[4], "--allow-gaps", "-o", out)
    assert tail_or_full(p) == "full" and "come before its last file" in p.stdout, p.stdout
    full = tmp_path / "full.json"
    run_vzarr("build", *paths, "--concat-dim", "time", "-o", full)
    assert out.read_bytes() == full.read_bytes()


def test_a_changed_last_file_plans_every_file(tmp_path):
    """The output's last file rewritten since it was recorded: the append plans every file
    (what the files hold now), never joins the old references to a new plan of it."""
    paths = write_archive(tmp_path, MONTHS_24[:4], chunk_t=10, zlib=True)
    out = tmp_path / "out.json"
    run_vzarr("build", *paths[:3], "--concat-dim", "time", "-o", out)
    # March written again (other chunking, so other offsets), same days.
    write_archive(tmp_path, MONTHS_24[:3], chunk_t=5, zlib=True)
    p = run_vzarr("build", "--append", paths[3], "-o", out, check=False)
    # Its chunking now differs from January's and February's (also rewritten): whatever the
    # planner says of that, it says it of every file, as a full build does.
    full = run_vzarr("build", *paths, "--concat-dim", "time", "-o", tmp_path / "full.json", check=False)
    assert p.returncode == full.returncode, (p.stdout + p.stderr, full.stdout + full.stderr)
    if p.returncode == 0:
        assert tail_or_full(p) == "full"
        assert out.read_bytes() == (tmp_path / "full.json").read_bytes()


def repo_bytes(path):
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def manifests(path):
    return {f.name for f in (path / "manifests").iterdir()}


@pytest.mark.parametrize(
    "opts", [dict(chunk_t=10, zlib=True), dict(chunk_t=31)], ids=["ten-day-zlib", "month-chunks"]
)
def test_icechunk_appends_write_what_changed(tmp_path, opts):
    """An Icechunk repository appended month by month: each append is one commit, reads
    through icechunk-python equal to the files, keeps every manifest of the arrays that did
    not change, and equals (document by document) a repository built from every file."""
    months = MONTHS_24[:8]
    src = tmp_path / "src"
    src.mkdir()
    paths = write_archive(src, months, **opts)
    repo_path = tmp_path / "repo"
    run_vzarr("build", *paths[:3], "--concat-dim", "time", "-o", repo_path, "--format", "icechunk")
    for k in range(3, len(paths)):
        before = manifests(repo_path)
        p = run_vzarr("build", "--append", paths[k], "-o", repo_path, "--format", "icechunk")
        assert tail_or_full(p) == "tail", p.stdout
        after = manifests(repo_path)
        assert before <= after, "no manifest is deleted"
        # lat, lon and orog (kept once) and the untouched splits keep their manifests: an
        # append adds one manifest per array that changed (tas, pr_t, time, time_bnds, count
        # at most), never the whole repository again.
        assert len(after - before) <= 5, (len(before), len(after))
    repo, _ = open_local(repo_path)
    history = list(repo.ancestry(branch="main"))
    assert len(history) == 1 + 1 + (len(paths) - 3)
    # Each append records what it changed of its parent's provenance, the build the whole.
    assert all("vzarr_delta" in h.metadata and "vzarr" not in h.metadata for h in history[:-2])
    assert "vzarr" in history[-2].metadata
    assert len(json.dumps(history[0].metadata["vzarr_delta"])) < len(
        json.dumps(history[-2].metadata["vzarr"])
    )
    assert_matches_concat(open_xr(repo), expected_concat(paths))
    # The same documents as a repository built from every file.
    full_path = tmp_path / "full"
    run_vzarr("build", *paths, "--concat-dim", "time", "-o", full_path, "--format", "icechunk")
    a = json.loads(run_vzarr("inspect", repo_path, "--json").stdout)
    b = json.loads(run_vzarr("inspect", full_path, "--json").stdout)
    for d in (a, b):
        for k in ("repository", "snapshot", "history"):
            d.pop(k, None)
    assert a == b
    v = run_vzarr("verify", repo_path, "--trust-references", check=False)
    assert v.returncode == 0, v.stdout + v.stderr


def test_expiring_an_appended_repository_keeps_it_appendable(tmp_path):
    """Old snapshots of a repository appended month by month expired and collected: with
    icechunk-python's calls alone the appends' recorded changes lose what they apply to (the
    control: vzarr then refuses to append, naming why); after `vzarr.expire` (a checkpoint of
    the whole provenance first; tests/cli/sync.rs runs `vzarr expire`) the repository is
    smaller, reads through icechunk-python equal to the files, and takes the next append at
    its tail."""
    import datetime

    import shutil

    months = MONTHS_24[:7]
    src = tmp_path / "src"
    src.mkdir()
    paths = write_archive(src, months, chunk_t=10, zlib=True)
    repo_path = tmp_path / "repo"
    run_vzarr("build", *paths[:3], "--concat-dim", "time", "-o", repo_path, "--format", "icechunk")
    for k in range(3, 6):
        run_vzarr("build", "--append", paths[k], "-o", repo_path, "--format", "icechunk")
    plain = tmp_path / "plain"
    shutil.copytree(repo_path, plain)
    now = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)

    # The control: Icechunk's own expiration cuts the chain of recorded changes.
    repo, _ = open_local(plain)
    assert len(repo.expire_snapshots(older_than=now)) == 3  # all but the first and the tip
    repo.garbage_collect(now)
    p = run_vzarr("build", "--append", paths[6], "-o", plain, "--format", "icechunk", check=False)
    assert p.returncode != 0 and "the history was cut" in p.stderr, p.stdout + p.stderr
    import vzarr

    # Expiring it again through vzarr: nothing left to keep, said, and the expiration done.
    done = vzarr.expire(plain, older_than=now)
    assert done["checkpoints"] == [] and len(done["lost"]) == 1, done
    assert done["lost"][0].startswith("main: ") and "the history was cut" in done["lost"][0], done

    def size(path):
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())

    before = size(repo_path)
    with pytest.raises(ValueError, match="time zone"):
        vzarr.expire(repo_path, older_than=now.replace(tzinfo=None))
    done = vzarr.expire(repo_path, older_than=now)
    assert done["checkpoints"] == ["main"] and done["snapshots_expired"] == 4, done
    assert done["lost"] == [], done
    assert done["collected"]["bytes"] > 0, done
    assert size(repo_path) < before
    repo, _ = open_local(repo_path)
    history = list(repo.ancestry(branch="main"))
    assert len(history) == 2 and "vzarr" in history[0].metadata, [h.message for h in history]
    assert_matches_concat(open_xr(repo), expected_concat(paths[:6]))
    p = run_vzarr("build", "--append", paths[6], "-o", repo_path, "--format", "icechunk")
    assert tail_or_full(p) == "tail", p.stdout
    repo, _ = open_local(repo_path)
    assert_matches_concat(open_xr(repo), expected_concat(paths))
