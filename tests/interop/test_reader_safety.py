"""The Python readers keep the CLI's promises (issue 52): a source rewritten since it was
referenced is refused, naming it, by `vzarr.open_dataset`, `engine="vzarr"` and `VzarrStore`
(vzarr's reference JSON, its Icechunk repositories, and the checksums of references in
repositories vzarr did not write), before any of its bytes is used; `ignore_stale=True` reads
it as it is now; references that record no state are read as they are. Opening changes
nothing in the process (zarr-python's configuration); the store's async methods do not block
the event loop; a pickled store carries the policy resolved where it was made; errors are
`vzarr.*` classes with the CLI's hints in Python's terms."""

import asyncio
import datetime
import json
import os
import pickle
import shutil
import subprocess
import sys
import threading

import netCDF4
import numpy as np
import pytest
import xarray as xr

import vzarr
import vzarr.store
from conftest import FIXTURES, run_vzarr

ARCHIVE = FIXTURES / "archive"
MONTHS = sorted(ARCHIVE.glob("tas_2023*.nc"))


# Only what each test allows: no VZARR_ALLOW_PREFIXES, no configuration file.
pytestmark = pytest.mark.usefixtures("no_configured_prefixes")


@pytest.fixture
def rewritten(tmp_path):
    """The monthly archive copied, built by the CLI as reference JSON and as an Icechunk
    repository, then March rewritten in place by netCDF-C (tas + 100: new bytes, size and
    modification time). Returns (directory of the copies, json, repository, March)."""
    src = tmp_path / "archive"
    src.mkdir()
    for f in MONTHS:
        shutil.copy(f, src / f.name)
    refs = tmp_path / "tas.json"
    repo = tmp_path / "tas.icechunk"
    run_vzarr("build", src, "--concat-dim", "time", "-o", refs)
    run_vzarr("build", src, "--concat-dim", "time", "--format", "icechunk", "-o", repo)
    march = src / MONTHS[2].name
    before = march.stat().st_mtime_ns
    with netCDF4.Dataset(march, "r+") as nc:
        nc.set_auto_maskandscale(False)
        nc["tas"][...] = nc["tas"][...] + 100
    os.utime(march, ns=(before + 2_000_000_000, before + 2_000_000_000))
    return src, refs, repo, march


def month_values(src):
    return xr.concat([xr.open_dataset(src / f.name, engine="netcdf4")["tas"] for f in MONTHS],
                     dim="time").values


@pytest.mark.parametrize("kind", ["json", "icechunk"])
def test_a_rewritten_source_is_refused_by_every_python_reader(rewritten, kind):
    src, refs, repo, march = rewritten
    location = refs if kind == "json" else repo
    opens = [
        lambda **kw: vzarr.open_dataset(location, allow_prefixes=str(src), **kw),
        lambda **kw: xr.open_dataset(location, engine="vzarr", allow_prefixes=str(src), **kw),
    ]
    for open_ in opens:
        ds = open_()
        # January is untouched and reads; March's chunks are refused, naming the file.
        np.testing.assert_array_equal(ds["tas"][:31].values, month_values(src)[:31])
        with pytest.raises(vzarr.StaleSourceError, match=march.name) as e:
            ds["tas"].values
        assert "changed since" in str(e.value) and "ignore_stale=True" in str(e.value)
        assert isinstance(e.value, vzarr.SourceError)
        # Asked for, it reads the recorded byte ranges of the file as it is now (March's
        # chunks may have moved: its values are whatever is there now).
        anyway = open_(ignore_stale=True)["tas"].values
        np.testing.assert_array_equal(anyway[:59], month_values(src)[:59])
    store = vzarr.store.VzarrStore(location, allow_prefixes=str(src))
    with pytest.raises(vzarr.StaleSourceError, match=march.name):
        store.get_sync("tas/c/7/0/0")  # March's first ten days
    assert store.get_sync("tas/c/0/0/0") is not None
    # The choice travels with the store (a dask worker reads as the caller asked).
    ignoring = vzarr.store.VzarrStore(location, allow_prefixes=str(src), ignore_stale=True)
    assert pickle.loads(pickle.dumps(ignoring)).get_sync("tas/c/7/0/0") is not None
    with pytest.raises(vzarr.StaleSourceError):
        pickle.loads(pickle.dumps(store)).get_sync("tas/c/7/0/0")


def test_a_rewritten_source_is_refused_through_fsspec_too(rewritten):
    """References read through fsspec's reference filesystem (remote_protocol= given): the
    recorded sources are checked when they open, since fsspec checks nothing."""
    src, refs, _, march = rewritten
    with pytest.raises(vzarr.StaleSourceError, match=march.name):
        vzarr.open_dataset(refs, allow_prefixes=str(src), remote_protocol="file")
    ds = vzarr.open_dataset(refs, allow_prefixes=str(src), remote_protocol="file",
                            ignore_stale=True)
    np.testing.assert_array_equal(ds["tas"][:59].values, month_values(src)[:59])


def test_references_that_record_no_state_are_read_as_they_are(tmp_path):
    """A source touched since (its modification time only): refused through vzarr's
    references, which record it; read as it is through the same references without that
    record (as kerchunk writes them: nothing to compare with; the docs say so)."""
    src = tmp_path / "archive"
    src.mkdir()
    for f in MONTHS:
        shutil.copy(f, src / f.name)
    refs = tmp_path / "tas.json"
    run_vzarr("build", src, "--concat-dim", "time", "-o", refs)
    doc = json.loads(refs.read_text())
    doc.pop("vzarr")
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(doc))
    march = src / MONTHS[2].name
    march.touch()
    with pytest.raises(vzarr.StaleSourceError, match="modification time"):
        vzarr.open_dataset(refs, allow_prefixes=str(src))["tas"].values
    ds = vzarr.open_dataset(plain, allow_prefixes=str(src))
    np.testing.assert_array_equal(ds["tas"].values, month_values(src))


def _foreign_repository(tmp_path, checksum):
    """A repository icechunk-python wrote (no vzarr provenance): one float64 array of 8 values
    whose only chunk is a virtual reference into a raw file, carrying ``checksum``."""
    import icechunk
    import zarr

    tmp_path.mkdir(parents=True, exist_ok=True)
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.arange(8, dtype="<f8").tobytes())
    storage = icechunk.local_filesystem_storage(str(tmp_path / "foreign.icechunk"))
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(
        f"file://{tmp_path}/", icechunk.local_filesystem_store(str(tmp_path))))
    repo = icechunk.Repository.create(storage, config=config)
    session = repo.writable_session("main")
    root = zarr.group(store=session.store)
    root.create_array("x", shape=(8,), chunks=(8,), dtype="<f8", compressors=None,
                      dimension_names=["x"],
                      fill_value=0.0)
    session.store.set_virtual_ref("x/c/0", f"file://{raw}", offset=0, length=64,
                                  checksum=checksum)
    session.commit("by icechunk-python")
    return tmp_path / "foreign.icechunk", raw


def test_checksums_of_a_repository_vzarr_did_not_write_are_honoured(tmp_path):
    """Icechunk's checksum of a reference (here the time the source may not be modified
    after) is checked before the range is read, as icechunk-python checks it."""
    old = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
    repo, raw = _foreign_repository(tmp_path / "a", old)
    with pytest.raises(vzarr.StaleSourceError, match="raw.bin") as e:
        vzarr.store.VzarrStore(repo, allow_prefixes=str(tmp_path)).get_sync("x/c/0")
    assert "after the" in str(e.value)
    assert vzarr.store.VzarrStore(repo, allow_prefixes=str(tmp_path),
                                  ignore_stale=True).get_sync("x/c/0") is not None
    # So does the CLI, and reads it with --ignore-stale.
    refused = run_vzarr("cat", repo, "x", "--allow-prefix", str(tmp_path), check=False)
    assert refused.returncode != 0 and "raw.bin" in refused.stderr, refused.stderr
    assert "changed since" in refused.stderr and "panicked" not in refused.stderr
    anyway = run_vzarr("cat", repo, "x", "--json", "--allow-prefix", str(tmp_path),
                       "--ignore-stale")
    assert json.loads(anyway.stdout) == list(range(8))
    # icechunk-python refuses the same reference.
    import icechunk
    import zarr
    ic = icechunk.Repository.open(
        icechunk.local_filesystem_storage(str(repo)),
        authorize_virtual_chunk_access={f"file://{tmp_path / 'a'}/": None})
    with pytest.raises(Exception):
        zarr.open_array(ic.readonly_session("main").store, path="x", mode="r")[:]
    # A checksum the source still meets reads the values.
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    repo, _ = _foreign_repository(tmp_path / "b", later)
    ds = vzarr.open_dataset(repo, allow_prefixes=str(tmp_path))
    np.testing.assert_array_equal(ds["x"].values, np.arange(8, dtype="<f8"))


def test_opening_changes_nothing_in_the_process(tmp_path):
    """In a fresh interpreter with zarr-python's defaults: after opening and reading the
    uneven archive, zarr-python's configuration is what it was (no codec pipeline set for the
    process, rectilinear grids not left on), while the arrays read through vzarr's pipeline;
    and no panic hook or other global is left behind that a second open would trip on."""
    refs = tmp_path / "tas.json"
    run_vzarr("build", ARCHIVE, "--concat-dim", "time", "-o", refs)
    code = (
        "import sys, zarr, xarray as xr\n"
        "import vzarr, vzarr.store\n"
        "from vzarr.pipeline import VzarrCodecPipeline\n"
        "before = (zarr.config.get('codec_pipeline.path'), zarr.config.get('array.rectilinear_chunks'))\n"
        "assert before[1] is False, before\n"
        "ds = vzarr.open_dataset(sys.argv[1], trust_references=True)\n"
        "total = float(ds['tas'].sum())\n"
        "after = (zarr.config.get('codec_pipeline.path'), zarr.config.get('array.rectilinear_chunks'))\n"
        "assert after == before, (before, after)\n"
        "store = vzarr.store.VzarrStore(sys.argv[1], trust_references=True)\n"
        "from vzarr.netcdf_view import open_netcdf_view\n"
        "import zarr.core.array\n"
        "seen = []\n"
        "orig = VzarrCodecPipeline.read_sync\n"
        "def spy(self, *a, **k):\n"
        "    seen.append(1)\n"
        "    return orig(self, *a, **k)\n"
        "VzarrCodecPipeline.read_sync = spy\n"
        "ds2 = open_netcdf_view(store, source='x', consolidated=True)\n"
        "assert float(ds2['tas'].sum()) == total\n"
        "assert seen, 'the arrays of a VzarrStore read through vzarr.pipeline'\n"
        "other = zarr.create_array(zarr.storage.MemoryStore(), shape=(4,), dtype='i4')\n"
        "assert type(other._async_array.codec_pipeline).__name__ != 'VzarrCodecPipeline'\n"
        "print(total)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ZARR_ARRAY__RECTILINEAR_CHUNKS"}
    p = subprocess.run([sys.executable, "-c", code, str(refs)], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, p.stderr[-3000:]


class _Recording:
    """A stand-in for the Rust side that records the thread each call runs on."""

    def __init__(self, inner):
        self.inner = inner
        self.threads = []
        self.stamp = inner.stamp

    def exists(self, key):
        self.threads.append(threading.get_ident())
        return self.inner.exists(key)

    def list_dir(self, prefix):
        self.threads.append(threading.get_ident())
        return self.inner.list_dir(prefix)


def test_the_stores_async_methods_do_not_block_the_event_loop(tmp_path):
    refs = tmp_path / "tas.json"
    run_vzarr("build", ARCHIVE, "--concat-dim", "time", "-o", refs)
    store = vzarr.store.VzarrStore(refs, trust_references=True)
    rec = _Recording(store._inner)
    store._inner = rec

    async def calls():
        loop_thread = threading.get_ident()
        assert await store.exists("zarr.json")
        names = [n async for n in store.list_dir("")]
        return loop_thread, names

    loop_thread, names = asyncio.run(calls())
    assert "tas" in names
    assert len(rec.threads) == 2 and loop_thread not in rec.threads


def test_a_pickled_store_carries_the_policy_resolved_where_it_was_made(tmp_path, monkeypatch):
    """Relative allowed prefixes and location are made absolute, and the environment's
    prefixes read, when the store is made: unpickled elsewhere (another directory, another
    environment), it allows exactly what it allowed."""
    work = tmp_path / "work"
    (work / "archive").mkdir(parents=True)
    for f in MONTHS:
        shutil.copy(f, work / "archive" / f.name)
    run_vzarr("build", work / "archive", "--concat-dim", "time", "-o", work / "tas.json")
    extra = "s3://elsewhere/"
    monkeypatch.chdir(work)
    monkeypatch.setenv("VZARR_ALLOW_PREFIXES", extra)
    store = vzarr.store.VzarrStore("tas.json", allow_prefixes="archive/")
    assert store.location == str(work / "tas.json")
    assert store.allow_prefixes == [str(work / "archive") + os.sep, extra]
    data = pickle.dumps(store)
    # Elsewhere: another directory holding its own "archive/", another environment.
    other = tmp_path / "other"
    (other / "archive").mkdir(parents=True)
    monkeypatch.chdir(other)
    monkeypatch.setenv("VZARR_ALLOW_PREFIXES", "/")
    again = pickle.loads(data)
    assert again.allow_prefixes == store.allow_prefixes
    assert again.location == store.location
    assert again.get_sync("tas/c/0/0/0") == store.get_sync("tas/c/0/0/0")


def test_errors_are_vzarrs_classes_with_hints_in_pythons_terms(tmp_path):
    refs = tmp_path / "tas.json"
    run_vzarr("build", ARCHIVE, "--concat-dim", "time", "-o", refs)
    with pytest.raises(vzarr.NotAllowedError) as e:
        vzarr.open_dataset(refs, allow_prefixes=str(tmp_path / "nowhere"))
    assert type(e.value).__module__ == "vzarr"
    assert "allow_prefixes=" in str(e.value) and "trust_references=True" in str(e.value)
    assert "--" not in str(e.value).split("hint:", 1)[1]
    for cls in (vzarr.VzarrError, vzarr.SourceError, vzarr.NotAllowedError,
                vzarr.StaleSourceError, vzarr.ScanError, vzarr.PlanError, vzarr.WriteError):
        assert cls.__module__ == "vzarr" and getattr(vzarr, cls.__name__) is cls
        assert pickle.loads(pickle.dumps(cls("x"))).args == ("x",)


def test_build_errors_carry_the_hint_in_pythons_terms():
    """Two files and no way to combine them: the CLI says --concat-dim; Python says the
    keyword argument vzarr.build takes."""
    with pytest.raises(vzarr.VzarrError) as e:
        vzarr.build([MONTHS[0], MONTHS[1]])
    message = str(e.value)
    assert 'hint: combine them with concat_dim="time"' in message, message
    assert "--" not in message


def test_an_output_that_cannot_be_written_is_refused_before_the_build(tmp_path):
    """As the CLI does: an output into a directory that does not exist fails before any source
    is scanned (a source that does not exist would fail the scan otherwise)."""
    with pytest.raises(vzarr.WriteError, match="does not exist") as e:
        vzarr.build(tmp_path / "no-such-source.nc", output=tmp_path / "missing" / "out.json")
    assert "no-such-source" not in str(e.value)


HOSTILE = FIXTURES.parent / "tests" / "cli" / "data" / "hostile"

_REPLAY = r'''
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import vzarr, vzarr.store
allow = sys.argv[1]
for location in sys.argv[2:]:
    for name, call in [
        ("open_dataset", lambda: vzarr.open_dataset(location, allow_prefixes=allow)["x"].values),
        ("store", lambda: vzarr.store.VzarrStore(location, allow_prefixes=allow).get_sync("x/c/0")),
    ]:
        try:
            call()
        except Exception as e:  # what `except Exception` catches: not pyo3's PanicException
            first = str(e).splitlines()[0]
            print(f"{location}|{name}: {type(e).__module__}.{type(e).__name__}: {first}")
        else:
            print(f"{location}|{name}: no error")
'''


def _hostile_inputs(tmp_path):
    """The reference files that crashed the readers (tests/cli/hostile.rs has the CLI's side):
    `gen` arithmetic that overflows and a `gen` entry of 2^27 references, a 300-byte Parquet
    `.zmetadata` of 2^31 one-row record files, and Icechunk `repo` files with one change each."""
    (tmp_path / "d.bin").write_bytes(bytes(64))

    def gen(name, n, offset):
        zarray = {"zarr_format": 2, "shape": [n], "chunks": [1], "dtype": "<i2",
                  "compressor": None, "filters": None, "fill_value": 0, "order": "C"}
        refs = {"version": 1, "templates": {"u": str(tmp_path / "d.bin")},
                "refs": {".zgroup": '{"zarr_format":2}', "x/.zarray": json.dumps(zarray),
                         "x/.zattrs": '{"_ARRAY_DIMENSIONS":["x"]}'},
                "gen": [{"key": "x/{{i}}", "url": "{{u}}", "offset": offset, "length": "2",
                         "dimensions": {"i": {"stop": n}}}]}
        (tmp_path / name).write_text(json.dumps(refs))
        return tmp_path / name

    low = "(-170141183460469231731687303715884105727 - 1)"
    yield gen("div.json", 4, "{{ %s // -1 }}" % low), "integer overflow"
    yield gen("big.json", 1 << 27, "{{ i * 2 }}"), "max_generated"
    parq = tmp_path / "refs31"
    parq.mkdir()
    (parq / ".zmetadata").write_text(json.dumps({"record_size": 1, "metadata": {
        ".zgroup": {"zarr_format": 2},
        "x/.zarray": {"zarr_format": 2, "shape": [1 << 31], "chunks": [1], "dtype": "<i2",
                      "compressor": None, "filters": None, "fill_value": 0, "order": "C"},
        "x/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]}}}))
    yield parq, "max_record_files"
    for d in sorted(HOSTILE.iterdir()):
        if (d / "repo").is_file():
            repo = tmp_path / d.name
            repo.mkdir()
            shutil.copy(d / "repo", repo / "repo")
            yield repo, d.name


def test_inputs_that_crashed_the_readers_are_exceptions_in_python(tmp_path):
    """Each crashing input of the issue, opened from Python in a process limited to 1 GiB of
    address space: an ``Exception`` naming the file (no abort, no PanicException, no
    allocation failure), from vzarr.open_dataset and from the store."""
    env = dict(os.environ, MALLOC_ARENA_MAX="2", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1")
    inputs = list(_hostile_inputs(tmp_path))
    assert len(inputs) >= 6, inputs
    p = subprocess.run([sys.executable, "-c", _REPLAY, str(tmp_path),
                        *[str(loc) for loc, _ in inputs]],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\n{p.stderr[-2000:]}"
    assert "PanicException" not in p.stdout + p.stderr and "panicked" not in p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 2 * len(inputs), p.stdout + p.stderr
    for (location, why), pair in zip(inputs, zip(lines[::2], lines[1::2])):
        for line in pair:
            assert line.startswith(f"{location}|"), line
            said = line.split(": ", 1)[1]
            assert said.startswith(("vzarr.", "builtins.ValueError")), f"{why}: {line}"
            assert location.name in said, f"{why}: {line}"
