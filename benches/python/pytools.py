"""The Python side of the Python-package benchmark: each subcommand runs in its own process,
started (and timed from outside, under GNU time for peak RSS) by bench.py, and prints one
JSON line with its own timings (seconds, in-process, after the imports).

  pytools.py build [--s3-endpoint URL] -o OUT INPUT     vzarr.build(INPUT, concat_dim="time",
                                                       output=OUT): kerchunk JSON
  pytools.py parser --parser vzarr|hdf [--s3-endpoint URL] FILES...
                                                       parser(url, registry) for every file,
                                                       each call timed (the parser alone)
  pytools.py mfdataset --parser vzarr|hdf [--s3-endpoint URL] FILES...
                                                       VirtualiZarr's open_virtual_mfdataset
                                                       with that parser (concat along time)
  pytools.py open --tool vzarr|xarray FILES...         time to a lazy Dataset over the files
                                                       (vzarr.open_dataset, or
                                                       xarray.open_mfdataset(parallel=True,
                                                       engine="h5netcdf")),
                                                       then time to read `tas` in full

With --s3-endpoint, FILES is one s3://BUCKET/PREFIX/ listed through obstore (as the comparison
benchmark's VirtualiZarr runs do) and read at that endpoint (credentials test/test, plain
HTTP): vzarr.build through the standard AWS environment, the parsers through an obstore
S3Store in the registry.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

T_START = time.perf_counter()
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "compare"))


def emit(**kw) -> None:
    print(json.dumps(kw), flush=True)


def registry_and_urls(files: list[str], s3_endpoint: str | None):
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    if s3_endpoint:
        from tools import s3_registry

        return s3_registry(files[0], s3_endpoint)
    paths = [os.path.abspath(p) for p in files]
    root = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    return (ObjectStoreRegistry({f"file://{root}": LocalStore(prefix=root)}),
            [f"file://{p}" for p in paths])


def make_parser(name: str):
    if name == "vzarr":
        import vzarr.virtualizarr

        return vzarr.virtualizarr.Parser()
    from virtualizarr.parsers import HDFParser

    return HDFParser()


def run_build(a) -> None:
    import vzarr

    t_import = time.perf_counter()
    report = vzarr.build(a.input, concat_dim="time", output=a.output)
    t_build = time.perf_counter()
    emit(imports=t_import - T_START, build=t_build - t_import,
         files=report.summary.get("files"), chunks=report.summary.get("chunks"))


def run_parser(a) -> None:
    parser = make_parser(a.parser)
    t_import = time.perf_counter()
    registry, urls = registry_and_urls(a.files, a.s3_endpoint)
    t_list = time.perf_counter()
    per_file = []
    for url in urls:
        t0 = time.perf_counter()
        parser(url, registry)
        per_file.append(time.perf_counter() - t0)
    emit(imports=t_import - T_START, list=t_list - t_import, files=len(urls),
         total=sum(per_file), per_file=per_file)


def run_mfdataset(a) -> None:
    from virtualizarr import open_virtual_mfdataset

    parser = make_parser(a.parser)
    t_import = time.perf_counter()
    registry, urls = registry_and_urls(a.files, a.s3_endpoint)
    t_list = time.perf_counter()
    vds = open_virtual_mfdataset(urls, registry=registry, parser=parser, combine="nested",
                                 concat_dim="time", coords="minimal", compat="override",
                                 data_vars="minimal", combine_attrs="override")
    t_open = time.perf_counter()
    emit(imports=t_import - T_START, list=t_list - t_import, open=t_open - t_list,
         sizes=dict(vds.sizes))


def run_open(a) -> None:
    import xarray as xr

    if a.tool == "vzarr":
        import vzarr
    t_import = time.perf_counter()
    if a.tool == "vzarr":
        ds = vzarr.open_dataset(a.files, concat_dim="time")
    else:
        # h5netcdf: with the netcdf4 engine, opening 120 files on dask's threads fails here
        # ("NetCDF: HDF error", or a bus error: netCDF-C/libhdf5 are not thread-safe).
        ds = xr.open_mfdataset(a.files, engine="h5netcdf", combine="nested", concat_dim="time",
                               parallel=True, data_vars="minimal", coords="minimal",
                               compat="override")
    t_open = time.perf_counter()
    values = ds["tas"].values
    t_read = time.perf_counter()
    emit(imports=t_import - T_START, open=t_open - t_import, read=t_read - t_open,
         shape=list(values.shape), checksum=float(values[::97, ::13, ::29].sum(dtype="f8")))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--s3-endpoint")
    b.add_argument("-o", "--output", required=True)
    b.add_argument("input")
    for name in ("parser", "mfdataset"):
        p = sub.add_parser(name)
        p.add_argument("--parser", choices=["vzarr", "hdf"], required=True)
        p.add_argument("--s3-endpoint")
        p.add_argument("files", nargs="+")
    o = sub.add_parser("open")
    o.add_argument("--tool", choices=["vzarr", "xarray"], required=True)
    o.add_argument("files", nargs="+")
    a = ap.parse_args()
    {"build": run_build, "parser": run_parser, "mfdataset": run_mfdataset,
     "open": run_open}[a.cmd](a)


if __name__ == "__main__":
    main()
