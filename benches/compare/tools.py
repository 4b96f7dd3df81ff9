"""The Python side of the comparison benchmark: the peers, the HDF5 floor and the checks.

Each subcommand runs in its own process, started (and timed) by bench.py:

  tools.py kerchunk     --format hdf5|nc3 [--concat-dim time --identical lat,lon]
                        [--s3-endpoint URL] -o OUT FILES...
  tools.py virtualizarr --format hdf5|nc3 [--concat-dim time] [--s3-endpoint URL]
                        [--threads N] -o OUT FILES...
  tools.py floor FILE DATASET          h5py: open the file, Dataset.id.chunk_iter, nothing else
  tools.py check [--s3-endpoint URL] OUT ARCHIVES_JSON NAME   open OUT with xarray (zarr
                                       engine through fsspec's ReferenceFileSystem), check
                                       shapes and a few values against the local files

Object storage (bench.py's s3 cases): with --s3-endpoint, FILES is one s3://BUCKET/PREFIX/
that the tool lists itself (kerchunk through s3fs, VirtualiZarr through obstore), and every
file is read from that S3 endpoint (credentials test/test, region us-east-1, plain HTTP):
kerchunk through s3fs (storage_options with client_kwargs.endpoint_url), VirtualiZarr through
an obstore S3Store in its registry. The check reads the s3:// references of OUT through
fsspec's s3 (s3fs) at its own --s3-endpoint.

The peers are used as their documentation shows: kerchunk SingleHdf5ToZarr / NetCDF3ToZarr per
file, MultiZarrToZarr to combine, the references written as JSON; VirtualiZarr
open_virtual_dataset per file, xarray.concat, .vz.to_kerchunk(format="json"), or with
--threads N open_virtual_mfdataset with a thread pool of N (parallel=ThreadPoolExecutor, as
its documentation recommends for many files). Every subcommand
prints one JSON line on stdout with its own phase timings (seconds, measured in-process after
the imports); bench.py measures the whole process from outside.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

T_START = time.perf_counter()


def emit(**kw) -> None:
    print(json.dumps(kw), flush=True)


# --- object storage -------------------------------------------------------------------------

S3_KEY = S3_SECRET = "test"
S3_REGION = "us-east-1"


def s3fs_options(endpoint: str) -> dict:
    """fsspec storage_options of an s3fs filesystem at a local S3 endpoint."""
    return {"key": S3_KEY, "secret": S3_SECRET,
            "client_kwargs": {"endpoint_url": endpoint, "region_name": S3_REGION}}


def split_s3(url: str) -> tuple[str, str]:
    """("bucket", "prefix/") of "s3://bucket/prefix/"."""
    if not url.startswith("s3://"):
        raise SystemExit(f"expected an s3:// URL, got {url}")
    bucket, _, prefix = url[len("s3://"):].partition("/")
    return bucket, prefix


def mzz_remote_options(options: dict | None) -> dict | None:
    """remote_options for MultiZarrToZarr. It reads the values that the per-file references do
    not inline (NetCDF3 time records) through zarr, on zarr's own event loop; the s3fs
    instance that the scan made (and fsspec cached) holds an aiohttp session of fsspec's loop
    and fails there ("... attached to a different loop", zarr-python issue 3487), so the
    combine asks for a fresh instance, whose session is made on zarr's loop."""
    return None if options is None else {**options, "skip_instance_cache": True}


def list_s3fs(prefix_url: str, options: dict) -> list[str]:
    """The .nc files under an s3:// prefix, listed through s3fs (one LIST request), sorted."""
    import fsspec

    fs = fsspec.filesystem("s3", **options)
    return sorted("s3://" + p for p in fs.glob(prefix_url.rstrip("/") + "/*.nc"))


# --- kerchunk 0.2.10 ------------------------------------------------------------------


def run_kerchunk(a) -> None:
    import ujson
    from kerchunk.combine import MultiZarrToZarr
    from kerchunk.hdf import SingleHdf5ToZarr
    from kerchunk.netCDF3 import NetCDF3ToZarr

    t_import = time.perf_counter()
    files, options, protocol = a.files, None, "file"
    if a.s3_endpoint:
        options, protocol = s3fs_options(a.s3_endpoint), "s3"
        files = list_s3fs(a.files[0], options)
    refs = []
    for path in files:
        if a.format == "hdf5":
            refs.append(SingleHdf5ToZarr(path, storage_options=options).translate())
        else:
            refs.append(NetCDF3ToZarr(path, storage_options=options).translate())
    t_scan = time.perf_counter()
    if a.concat_dim:
        mzz = MultiZarrToZarr(refs, concat_dims=[a.concat_dim],
                              identical_dims=a.identical.split(",") if a.identical else None,
                              remote_protocol=protocol,
                              remote_options=mzz_remote_options(options))
        out = mzz.translate()
    else:
        out = refs[0]
    t_combine = time.perf_counter()
    with open(a.output, "wb") as f:
        f.write(ujson.dumps(out).encode())
    t_write = time.perf_counter()
    emit(imports=t_import - T_START, scan=t_scan - t_import, combine=t_combine - t_scan,
         write=t_write - t_combine)


# --- VirtualiZarr 2.8 -------------------------------------------------------------------


def run_virtualizarr(a) -> None:
    import xarray as xr
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser, NetCDF3Parser

    t_import = time.perf_counter()
    if a.s3_endpoint:
        registry, urls = s3_registry(a.files[0], a.s3_endpoint)
    else:
        # One local store for the archive's directory, as the VirtualiZarr docs show for
        # local files.
        root = os.path.dirname(os.path.commonpath([os.path.abspath(p) for p in a.files])) \
            if len(a.files) == 1 else os.path.commonpath([os.path.abspath(p) for p in a.files])
        registry = ObjectStoreRegistry({f"file://{root}": LocalStore(prefix=root)})
        urls = [f"file://{os.path.abspath(p)}" for p in a.files]
    parser = HDFParser() if a.format == "hdf5" else NetCDF3Parser()
    if a.threads:
        from concurrent.futures import ThreadPoolExecutor

        from virtualizarr import open_virtual_mfdataset

        vds = open_virtual_mfdataset(
            urls, registry=registry, parser=parser, concat_dim=a.concat_dim,
            combine="nested", parallel=ThreadPoolExecutor(max_workers=a.threads),
            coords="minimal", compat="override", data_vars="minimal",
            combine_attrs="override")
        t_scan = t_combine = time.perf_counter()  # one call: scan and combine together
        vds.vz.to_kerchunk(a.output, format="json")
        emit(imports=t_import - T_START, scan=t_scan - t_import, combine=0.0,
             write=time.perf_counter() - t_combine)
        return
    vdss = [open_virtual_dataset(url=url, registry=registry, parser=parser) for url in urls]
    t_scan = time.perf_counter()
    if a.concat_dim:
        vds = xr.concat(vdss, dim=a.concat_dim, coords="minimal", compat="override",
                        data_vars="minimal", combine_attrs="override")
    else:
        vds = vdss[0]
    t_combine = time.perf_counter()
    vds.vz.to_kerchunk(a.output, format="json")
    t_write = time.perf_counter()
    emit(imports=t_import - T_START, scan=t_scan - t_import, combine=t_combine - t_scan,
         write=t_write - t_combine)


def s3_registry(prefix_url: str, endpoint: str):
    """An ObjectStoreRegistry with one obstore S3Store for the bucket of prefix_url (at a local
    endpoint, plain HTTP), and the .nc files under the prefix listed through that store."""
    import obstore
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import S3Store

    bucket, prefix = split_s3(prefix_url)
    store = S3Store(bucket, endpoint=endpoint, access_key_id=S3_KEY,
                    secret_access_key=S3_SECRET, region=S3_REGION,
                    client_options={"allow_http": True})
    paths = [m["path"] for batch in obstore.list(store, prefix=prefix) for m in batch]
    urls = sorted(f"s3://{bucket}/{p}" for p in paths if p.endswith(".nc"))
    return ObjectStoreRegistry({f"s3://{bucket}": store}), urls


# --- the floor: chunk iteration through the HDF5 library ------------------------------------


def run_floor(a) -> None:
    import h5py

    t_import = time.perf_counter()
    n = 0

    def visit(_info):
        nonlocal n
        n += 1

    with h5py.File(a.file, "r") as f:
        t_open = time.perf_counter()
        f[a.dataset].id.chunk_iter(visit)
        t_iter = time.perf_counter()
    emit(imports=t_import - T_START, open=t_open - t_import, iterate=t_iter - t_open,
         chunks=n, hdf5=h5py.version.hdf5_version)


# --- sanity check of an output --------------------------------------------------------------


def open_refs(path: str, s3_endpoint: str | None = None):
    import fsspec
    import xarray as xr
    import zarr

    zarr.config.set({"array.rectilinear_chunks": True})
    with open(path) as f:
        refs = json.load(f)
    if s3_endpoint:
        protocol, options = "s3", s3fs_options(s3_endpoint)
    else:
        protocol, options = "file", {}
    fs = fsspec.filesystem("reference", fo=refs, remote_protocol=protocol, asynchronous=True,
                           remote_options={**options, "asynchronous": True})
    store = zarr.storage.FsspecStore(fs, path="/", read_only=True)
    return xr.open_zarr(store, consolidated=False, decode_times=False,
                        mask_and_scale=False), refs


def run_check(a) -> None:
    """Shapes of every expected variable, then values against the source files: every data
    variable at the first and last day of the first, a middle and the last file (for the
    single HDF5 file: a few slabs), and the concatenated time coordinate."""
    import numpy as np

    arch = json.load(open(a.archives))[a.name]
    ds, refs = open_refs(a.output, a.s3_endpoint)
    problems = []
    for var, shape in arch["expect"].items():
        if var not in ds.variables:
            problems.append(f"{var}: missing")
        elif list(ds[var].shape) != shape:
            problems.append(f"{var}: shape {list(ds[var].shape)}, expected {shape}")
    if problems:
        raise SystemExit("check failed: " + "; ".join(problems))
    fmt = refs.get("refs", refs)
    zarr_format = 3 if "zarr.json" in fmt else 2
    if arch["kind"] == "hdf5":
        import h5py
        with h5py.File(arch["files"][0], "r") as f:
            src = f[arch["dataset"]]
            n = src.shape[0]
            for i in (0, n // 2, n - 1):
                got = ds[arch["dataset"]][i].values
                if not np.array_equal(got, src[i]):
                    problems.append(f"{arch['dataset']}[{i}] differs from the source")
    else:
        import netCDF4
        files = arch["files"]
        lengths = []
        for p in files:
            with netCDF4.Dataset(p) as nc:
                lengths.append(len(nc.dimensions["time"]))
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        time_ref = []
        for p in files:
            with netCDF4.Dataset(p) as nc:
                time_ref.append(nc["time"][:].data)
        time_ref = np.concatenate(time_ref)
        if not np.array_equal(ds["time"].values, time_ref):
            problems.append("time coordinate differs from the concatenated source values")
        for k in sorted({0, len(files) // 2, len(files) - 1}):
            with netCDF4.Dataset(files[k]) as nc:
                nc.set_auto_maskandscale(False)
                for var in arch["data_vars"]:
                    for t in (0, lengths[k] - 1):
                        want = nc[var][t]
                        got = ds[var][int(starts[k]) + t].values
                        if not np.array_equal(np.asarray(got), np.asarray(want)):
                            problems.append(f"{var} at time index {int(starts[k]) + t} "
                                            f"({os.path.basename(files[k])}, day {t}) differs")
    if problems:
        raise SystemExit("check failed: " + "; ".join(problems[:5]))
    emit(ok=True, zarr_format=zarr_format, variables=sorted(ds.variables))


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    for tool in ("kerchunk", "virtualizarr"):
        s = sub.add_parser(tool)
        s.add_argument("--format", choices=["hdf5", "nc3"], required=True)
        s.add_argument("--concat-dim")
        s.add_argument("--identical")
        s.add_argument("--s3-endpoint", help="read FILES (one s3:// prefix) from this endpoint")
        if tool == "virtualizarr":
            s.add_argument("--threads", type=int, default=0,
                           help="open_virtual_mfdataset with a pool of this many threads")
        s.add_argument("-o", "--output", required=True)
        s.add_argument("files", nargs="+")
    s = sub.add_parser("floor")
    s.add_argument("file")
    s.add_argument("dataset")
    s = sub.add_parser("check")
    s.add_argument("--s3-endpoint", help="where the s3:// references of OUTPUT are read")
    s.add_argument("output")
    s.add_argument("archives")
    s.add_argument("name")
    a = ap.parse_args()
    {"kerchunk": run_kerchunk, "virtualizarr": run_virtualizarr, "floor": run_floor,
     "check": run_check}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
