"""vzarr's zarr-python store (issue 42): `vzarr.store.VzarrStore` serves a reference file to
zarr-python through vzarr's Rust reader. Values read through it equal what netCDF4-python reads
from the sources, local and on S3, with and without dask; references outside the allowed
prefixes are refused when the store opens, before any value is read; the store pickles small
and reopens; the root `zarr.json` carries the consolidated metadata zarr-python itself writes;
a consolidated block that disagrees with the per-node documents is refused."""

import asyncio
import json
import pickle

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import cpu
from zarr.storage import MemoryStore

from conftest import FIXTURES, open_store, run_vzarr

import vzarr
from vzarr.store import VzarrStore  # noqa: E402

ARCHIVE = FIXTURES / "archive"
MONTHS = sorted(ARCHIVE.glob("tas_2023*.nc"))
PROTO = cpu.buffer_prototype


@pytest.fixture(autouse=True)
def no_configured_prefixes(monkeypatch, tmp_path):
    """Only what each test allows: no VZARR_ALLOW_PREFIXES, no configuration file."""
    monkeypatch.delenv("VZARR_ALLOW_PREFIXES", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    zarr.config.set({"array.rectilinear_chunks": True})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The monthly archive (a rectilinear time axis) and the nested-group fixture, built by
    the CLI as kerchunk JSON."""
    d = tmp_path_factory.mktemp("store")
    run_vzarr("build", ARCHIVE, "--concat-dim", "time", "-o", d / "tas.json")
    run_vzarr("build", FIXTURES / "attrs_groups.h5", "-o", d / "groups.json")
    return d


def netcdf4_raw(var, files=MONTHS):
    """`var` of every file, raw, as netCDF4-python reads it, concatenated along time."""
    parts = []
    for f in files:
        with netCDF4.Dataset(f) as nc:
            nc.set_auto_mask(False)
            nc.set_auto_scale(False)
            parts.append(nc[var][...])
    return np.concatenate(parts)


def assert_raw_archive(store, chunks):
    """tas and time through xarray on `store`, raw, equal netCDF4-python's."""
    ds = xr.open_zarr(store, consolidated=True, zarr_format=3, chunks=chunks,
                      mask_and_scale=False, decode_times=False)
    if chunks is not None:
        assert ds["tas"].chunks is not None
    np.testing.assert_array_equal(ds["tas"].values, netcdf4_raw("tas"))
    assert ds.sizes["time"] == 365
    decoded = xr.open_zarr(store, consolidated=True, zarr_format=3, chunks=chunks)
    want = xr.concat([xr.open_dataset(f, engine="netcdf4")["tas"] for f in MONTHS], dim="time")
    np.testing.assert_array_equal(decoded["tas"].values, want.values)
    np.testing.assert_array_equal(decoded["time"].values, want["time"].values)


@pytest.mark.parametrize("chunks", [None, {}])
def test_values_through_the_store_equal_the_sources(built, chunks):
    store = VzarrStore(built / "tas.json", allow_prefixes=str(ARCHIVE))
    assert_raw_archive(store, chunks)
    ds = vzarr.open_dataset(built / "tas.json", allow_prefixes=str(ARCHIVE),
                            xarray_options={"chunks": chunks})
    want = xr.concat([xr.open_dataset(f, engine="netcdf4")["tas"] for f in MONTHS], dim="time")
    np.testing.assert_array_equal(ds["tas"].values, want.values)
    # Its arrays read through vzarr.pipeline (zarr-python's fused pipeline, chunks fetched in
    # blocks); the process' default is untouched.
    assert zarr.config.get("codec_pipeline.path").endswith("BatchedCodecPipeline")


def test_keys_ranges_and_listing_agree_with_fsspec(built):
    """Every key, byte range and listing the store serves equals what fsspec's reference
    filesystem serves over the same references."""
    refs = json.loads((built / "tas.json").read_text())
    mine = VzarrStore(built / "tas.json", trust_references=True)
    theirs = open_store(refs)

    async def check():
        keys = sorted([k async for k in mine.list()])
        assert keys == sorted(refs["refs"])
        assert sorted([k async for k in mine.list_prefix("tas/")]) == sorted(
            k for k in refs["refs"] if k.startswith("tas/"))
        for d in ("", "tas", "tas/c", "tas/c/0", "time/c"):
            assert sorted([k async for k in mine.list_dir(d)]) == sorted(
                [k async for k in theirs.list_dir(d)]), d
        chunk = next(k for k in refs["refs"] if k.startswith("tas/c/"))
        for key in ("zarr.json", "tas/zarr.json", chunk, "time/c/0"):
            whole = await theirs.get(key, PROTO)
            assert (await mine.get(key, PROTO)).to_bytes() == whole.to_bytes()
            n = len(whole)
            for r in (RangeByteRequest(1, 5), OffsetByteRequest(3), SuffixByteRequest(4)):
                got = (await mine.get(key, PROTO, r)).to_bytes()
                assert got == (await theirs.get(key, PROTO, r)).to_bytes(), (key, r)
            got = await mine.get_partial_values(PROTO, [(key, RangeByteRequest(0, n)), (key, None)])
            assert [g.to_bytes() for g in got] == [whole.to_bytes()] * 2
            assert await mine.exists(key)
        assert await mine.get("tas/c/99/0/0", PROTO) is None
        assert await mine.get("nothing/zarr.json", PROTO) is None
        assert not await mine.exists("tas/c/99/0/0")
        # Many gets of one loop turn: one batch, in order.
        many = await asyncio.gather(*(mine.get(k, PROTO) for k in keys))
        assert [m.to_bytes() for m in many] == [(await theirs.get(k, PROTO)).to_bytes() for k in keys]

    asyncio.run(check())
    with pytest.raises(ValueError):
        mine.with_read_only(False)
    assert mine.with_read_only(True) == mine
    assert mine.supports_consolidated_metadata and not mine.supports_writes


def read_tas(location, pipeline, **kwargs):
    """`tas` of the references at `location`, read whole by zarr-python through VzarrStore
    under the codec pipeline `pipeline` (a path in zarr-python's registry)."""
    with zarr.config.set({"codec_pipeline.path": pipeline}):
        arr = zarr.open_array(VzarrStore(location, **kwargs), path="tas", zarr_format=3,
                              mode="r")
    assert type(arr._async_array.codec_pipeline).__name__ == pipeline.rsplit(".", 1)[1]
    return arr[...]


def test_the_bulk_pipeline_reads_what_the_fused_one_reads(built, tmp_path, monkeypatch):
    """vzarr.open_dataset reads through vzarr.pipeline (a read's chunks fetched from the store
    in blocks): values and missing chunks as zarr-python's fused pipeline reads them, across
    many blocks, and a source gone since opening fails the read with the store's error."""
    from vzarr import pipeline

    fused = "zarr.core.codec_pipeline.FusedCodecPipeline"
    bulk = "vzarr.pipeline.VzarrCodecPipeline"
    monkeypatch.setattr(pipeline, "FIRST_BLOCK", 2)
    monkeypatch.setattr(pipeline, "BLOCK_CHUNKS", 5)
    refs = json.loads((built / "tas.json").read_text())
    gone = sorted(k for k in refs["refs"] if k.startswith("tas/c/"))[7]
    del refs["refs"][gone]
    holed = tmp_path / "holed.json"
    holed.write_text(json.dumps(refs))
    want = read_tas(holed, fused, allow_prefixes=str(ARCHIVE))
    got = read_tas(holed, bulk, allow_prefixes=str(ARCHIVE))
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(want, netcdf4_raw("tas"))  # the missing chunk: the fill value
    ds = vzarr.open_dataset(holed, allow_prefixes=str(ARCHIVE),
                            xarray_options={"mask_and_scale": False, "decode_times": False})
    np.testing.assert_array_equal(ds["tas"].values, want)

    archive = tmp_path / "archive"
    archive.mkdir()
    for f in MONTHS:
        (archive / f.name).write_bytes(f.read_bytes())
    run_vzarr("build", archive, "--concat-dim", "time", "-o", tmp_path / "copy.json")
    errors = []
    for name in (fused, bulk):
        with zarr.config.set({"codec_pipeline.path": name}):
            arr = zarr.open_array(VzarrStore(tmp_path / "copy.json",
                                             allow_prefixes=str(archive)),
                                  path="tas", zarr_format=3, mode="r")
        (archive / MONTHS[3].name).unlink(missing_ok=True)
        with pytest.raises(vzarr.VzarrError) as e:
            arr[...]
        errors.append(str(e.value))
    assert errors[0] == errors[1] and MONTHS[3].name in errors[0]


def test_references_outside_the_prefixes_are_refused_before_reading(built, tmp_path):
    refs = json.loads((built / "tas.json").read_text())
    key = next(k for k in refs["refs"] if k.startswith("tas/c/"))
    refs["refs"][key] = ["file:///etc/passwd", 0, 64]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(refs))
    for kwargs in ({"trust_references": True}, {"allow_prefixes": str(ARCHIVE)}):
        # The store does not open: nothing can be read through it.
        with pytest.raises(vzarr.NotAllowedError, match="/etc/passwd"):
            VzarrStore(bad, **kwargs)
        with pytest.raises(vzarr.NotAllowedError, match="/etc/passwd"):
            vzarr.open_dataset(bad, **kwargs)
    with pytest.raises(vzarr.NotAllowedError, match="no allowed prefixes"):
        VzarrStore(built / "tas.json")


def test_the_store_pickles_small_and_reads_the_same(built):
    import dask.base

    store = VzarrStore(built / "tas.json", allow_prefixes=[str(ARCHIVE)])
    blob = pickle.dumps(store)
    assert len(blob) < 1024
    back = pickle.loads(blob)
    assert back == store and back is not store
    assert dask.base.tokenize(back) == dask.base.tokenize(store)
    other = VzarrStore(built / "tas.json", trust_references=True)
    assert dask.base.tokenize(other) != dask.base.tokenize(store)
    a = xr.open_zarr(store, consolidated=True, zarr_format=3, chunks=None)["tas"].values
    b = xr.open_zarr(back, consolidated=True, zarr_format=3, chunks=None)["tas"].values
    np.testing.assert_array_equal(a, b)
    # dask's own round trip (what a distributed worker does) reads the same values.
    ds = xr.open_zarr(back, consolidated=True, zarr_format=3, chunks={"time": -1})
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(ds["tas"].data)).compute(), a)


def zarr_consolidated(refs: dict) -> dict:
    """The root document zarr.consolidate_metadata writes over the references' per-node
    documents (each without a consolidated block) in a MemoryStore."""
    store = MemoryStore()

    async def fill():
        for k, v in refs["refs"].items():
            if k.endswith("zarr.json"):
                doc = json.loads(v)
                doc.pop("consolidated_metadata", None)
                await store.set(k, cpu.Buffer.from_bytes(json.dumps(doc).encode()))

    asyncio.run(fill())
    with pytest.warns(UserWarning, match="Consolidated metadata"):
        zarr.consolidate_metadata(store)
    return json.loads(asyncio.run(store.get("zarr.json", PROTO)).to_bytes())


@pytest.mark.parametrize("name", ["tas.json", "groups.json"])
def test_consolidated_metadata_is_what_zarr_python_writes(built, name):
    refs = json.loads((built / name).read_text())
    ours = json.loads(refs["refs"]["zarr.json"])
    theirs = zarr_consolidated(refs)
    # The same members, nested groups with an empty block of their own. zarr-python orders
    # them by depth, then by name; vzarr by depth, then in the source's order (the order
    # zarr-python and xarray then list them in, as netCDF4-python lists the file's).
    mine = list(ours["consolidated_metadata"]["metadata"])
    assert sorted(mine) == sorted(theirs["consolidated_metadata"]["metadata"])
    assert [k.count("/") for k in mine] == sorted(k.count("/") for k in mine)
    assert {k: v for k, v in ours["consolidated_metadata"].items() if k != "metadata"} == {
        "kind": "inline", "must_understand": False}
    for path, doc in theirs["consolidated_metadata"]["metadata"].items():
        if doc["node_type"] == "group":
            assert ours["consolidated_metadata"]["metadata"][path]["consolidated_metadata"] == \
                doc["consolidated_metadata"]
    # Read by zarr-python, both give the same metadata, member by member.
    from zarr.core.group import GroupMetadata

    a, b = GroupMetadata.from_dict(dict(ours)), GroupMetadata.from_dict(dict(theirs))
    assert a.to_dict() == b.to_dict()
    # And zarr-python opening consolidated sees every node.
    group = zarr.open_group(VzarrStore(built / name, trust_references=True), mode="r",
                            use_consolidated=True)
    assert group.metadata.consolidated_metadata is not None
    assert sorted(k for k, _ in group.members(max_depth=None)) == sorted(
        theirs["consolidated_metadata"]["metadata"])


def test_a_tampered_consolidated_block_is_refused(built, tmp_path):
    """A block that says something else than the per-node documents would let zarr-python
    read something vzarr never checked: vzarr.open_dataset, the store and vzarr verify refuse
    it, naming the entry."""
    refs = json.loads((built / "tas.json").read_text())
    root = json.loads(refs["refs"]["zarr.json"])
    root["consolidated_metadata"]["metadata"]["tas"]["attributes"]["scale_factor"] = 1000.0
    refs["refs"]["zarr.json"] = json.dumps(root)
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(refs))
    with pytest.raises(vzarr.VzarrError, match="consolidated metadata disagrees.*\"tas\""):
        vzarr.open_dataset(bad, trust_references=True)
    with pytest.raises(vzarr.VzarrError, match="consolidated metadata disagrees"):
        VzarrStore(bad, trust_references=True)
    p = run_vzarr("verify", bad, "--trust-references", check=False)
    assert p.returncode != 0 and "consolidated metadata disagrees" in p.stderr
    # A member left out, or one without a document of its own: refused too.
    for change in ("drop", "add"):
        root = json.loads(json.loads((built / "tas.json").read_text())["refs"]["zarr.json"])
        meta = root["consolidated_metadata"]["metadata"]
        if change == "drop":
            del meta["time"]
        else:
            meta["ghost"] = meta["tas"]
        refs["refs"]["zarr.json"] = json.dumps(root)
        bad.write_text(json.dumps(refs))
        with pytest.raises(vzarr.VzarrError, match="consolidated metadata disagrees"):
            VzarrStore(bad, trust_references=True)


def test_values_on_s3_through_the_store(moto_server, built, tmp_path, monkeypatch):
    """Sources and references on S3 (moto): values equal the local files', with and without
    dask; a source prefix not allowed is refused."""
    client, env = moto_server
    bucket = "vzarr-store"
    client.create_bucket(Bucket=bucket)
    for k in ("AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(k, env[k])
    for f in MONTHS:
        client.upload_file(str(f), bucket, f"archive/{f.name}")
    url = f"s3://{bucket}/refs/tas.json"
    run_vzarr("build", *[f"s3://{bucket}/archive/{f.name}" for f in MONTHS], "--concat-dim", "time",
              "-o", url, env={k: env[k] for k in env if k.startswith("AWS_")})
    for chunks in (None, {}):
        store = VzarrStore(url, allow_prefixes=f"s3://{bucket}/archive/")
        assert_raw_archive(store, chunks)
    ds = vzarr.open_dataset(url, allow_prefixes=f"s3://{bucket}/archive/")
    np.testing.assert_array_equal(ds["tas"].values, xr.concat(
        [xr.open_dataset(f, engine="netcdf4")["tas"] for f in MONTHS], dim="time").values)
    with pytest.raises(vzarr.NotAllowedError):
        VzarrStore(url, allow_prefixes=f"s3://{bucket}/elsewhere/")
