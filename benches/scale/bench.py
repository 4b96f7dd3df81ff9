"""One measurement of benches/scale, in its own process (so peak memory is its own).

    python bench.py open  --refs tas.json --via store|fsspec|fsspec-listing [--allow DIR]
    python bench.py open  --refs tas.icechunk --via icechunk|icechunk-python [--allow DIR]
    python bench.py open  --refs kerchunk.json|kerchunk.parq --via kerchunk-json|kerchunk-parquet
    python bench.py read  --refs tas.json --via store|fsspec|icechunk|icechunk-python|kerchunk-*
                          --read step|point|yearquarter
                          [--pipeline vzarr|fused|batched|zarrs] [--concurrency N] [--profile OUT]

Prints one JSON line: seconds to open (to a lazy xarray.Dataset, no dask: `chunks=None`), peak
RSS after opening (MiB), the read's seconds and peak RSS after it, chunks read. The reads:
`step` one time step (288 chunks), `point` one grid point's whole series (3,650 chunks),
`yearquarter` a year of a quarter of the domain (365 x 72 = 26,280 chunks). `--via store`:
`vzarr.open_dataset` (`--pipeline vzarr`, the default: the pipeline it chooses,
vzarr.pipeline), with `--pipeline fused` under zarr-python's fused pipeline, or with
`--pipeline batched` VzarrStore under zarr-python's default pipeline; `--via fsspec`: the
recipe of docs/python.md for readers without vzarr (`fsspec-listing`: that recipe before consolidated metadata, `consolidated=False`);
`--via icechunk`: `vzarr.open_dataset` of the Icechunk repository vzarr built from the same
catalog (through vzarr's store: one snapshot's metadata at open, each reference looked up
and its source checked when read), `--via icechunk-python`: icechunk-python alone, its
containers authorised;
`--via kerchunk-json|kerchunk-parquet`: kerchunk's Zarr v2 references of the same catalog
(kerchunk_build.py) as kerchunk's users read them, fsspec's reference filesystem and
`xr.open_zarr(..., zarr_format=2, consolidated=False)` (kerchunk writes no consolidated
metadata; Parquet references are read lazily, a record at a time). `checksum` is the read's
sum in float64 (NaNs counted apart) for comparing the vias.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time


def rss_mib() -> float:
    """Peak resident set size of this process so far, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def open_ds(refs: str, via: str, allow: str | None, pipeline: str = "vzarr"):
    """The lazy dataset over `refs`, through vzarr's store or fsspec's reference filesystem
    (the documented recipe for readers without vzarr)."""
    import xarray as xr
    import zarr

    if via == "store" and pipeline == "batched":
        # zarr-python's default pipeline on vzarr's store (vzarr.open_dataset would choose the
        # fused one for its arrays).
        from vzarr.store import VzarrStore

        store = VzarrStore(refs, allow_prefixes=allow, trust_references=allow is None)
        return xr.open_zarr(store, consolidated=True, zarr_format=3, chunks=None)
    if via in ("store", "icechunk"):
        import vzarr

        return vzarr.open_dataset(refs, allow_prefixes=allow, trust_references=allow is None)
    if via == "icechunk-python":
        import icechunk

        storage = icechunk.local_filesystem_storage(refs)
        containers = icechunk.Repository.open(storage).config.virtual_chunk_containers or {}
        creds = icechunk.containers_credentials(
            {c: icechunk.credentials.LocalFileSystemAccess for c in containers})
        repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)
        zarr.config.set({"array.rectilinear_chunks": True})
        return xr.open_zarr(repo.readonly_session(branch="main").store, consolidated=False,
                            zarr_format=3, chunks=None)
    import fsspec

    if via.startswith("kerchunk-"):
        # fo as a path: a JSON file is loaded whole, a Parquet directory opened lazily
        # (fsspec's LazyReferenceMapper).
        fs = fsspec.filesystem("reference", fo=refs, remote_protocol="file", asynchronous=True,
                               remote_options={"asynchronous": True})
        store = zarr.storage.FsspecStore(fs, path="/", read_only=True)
        return xr.open_zarr(store, consolidated=False, zarr_format=2, chunks=None)
    with open(refs) as f:
        fo = json.load(f)
    fs = fsspec.filesystem("reference", fo=fo, remote_protocol="file", asynchronous=True,
                           remote_options={"asynchronous": True})
    store = zarr.storage.FsspecStore(fs, path="/", read_only=True)
    # fsspec-listing: the recipe as docs/python.md gave it before the consolidated metadata
    # (zarr-python lists every key).
    return xr.open_zarr(store, consolidated=via == "fsspec", zarr_format=3, chunks=None)


READS = {
    "step": lambda v: v.isel(time=100),
    "point": lambda v: v.isel(lat=100, lon=200),
    "yearquarter": lambda v: v.isel(time=slice(365, 730), lat=slice(0, 192), lon=slice(0, 384)),
}
CHUNKS = {"step": 288, "point": 3650, "yearquarter": 26280}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["open", "read"])
    ap.add_argument("--refs", required=True)
    ap.add_argument("--via", default="store",
                    choices=["store", "fsspec", "fsspec-listing", "icechunk", "icechunk-python",
                             "kerchunk-json", "kerchunk-parquet"])
    ap.add_argument("--allow")
    ap.add_argument("--read", choices=sorted(READS), default="point")
    ap.add_argument("--pipeline", choices=["vzarr", "batched", "fused", "zarrs"], default="vzarr")
    ap.add_argument("--concurrency", type=int)
    ap.add_argument("--profile")
    a = ap.parse_args()

    import numpy
    import xarray  # noqa: F401
    import zarr

    if a.pipeline == "batched":
        zarr.config.set({"codec_pipeline.path": "zarr.core.codec_pipeline.BatchedCodecPipeline"})
    elif a.pipeline == "fused":
        zarr.config.set({"codec_pipeline.path": "zarr.core.codec_pipeline.FusedCodecPipeline"})
    elif a.pipeline == "zarrs":
        import zarrs  # noqa: F401

        zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"})
    if a.concurrency:
        zarr.config.set({"async.concurrency": a.concurrency})
    base = rss_mib()
    t0 = time.perf_counter()
    ds = open_ds(a.refs, a.via, a.allow, a.pipeline)
    out = {"what": a.what, "via": a.via, "open_s": round(time.perf_counter() - t0, 3),
           "rss_imports_mib": round(base), "rss_open_mib": round(rss_mib())}
    if a.what == "read":
        v = ds["tas"].variable
        sel = READS[a.read](v)
        prof = None
        if a.profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        t0 = time.perf_counter()
        vals = sel.values
        out.update(read=a.read, pipeline=a.pipeline, concurrency=a.concurrency,
                   read_s=round(time.perf_counter() - t0, 3), chunks=CHUNKS[a.read],
                   rss_read_mib=round(rss_mib()),
                   checksum=float(numpy.nansum(vals.astype("f8"))),
                   nans=int(numpy.isnan(vals).sum()), shape=list(vals.shape))
        if prof is not None:
            prof.disable()
            prof.dump_stats(a.profile)
    print(json.dumps(out))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
