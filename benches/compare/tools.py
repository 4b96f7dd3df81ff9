"""The Python side of the comparison benchmark: the peers, the HDF5 floor and the checks.

Each subcommand runs in its own process, started (and timed) by bench.py:

  tools.py kerchunk     --format hdf5|nc3 [--concat-dim time --identical lat,lon] -o OUT FILES...
  tools.py virtualizarr --format hdf5|nc3 [--concat-dim time] -o OUT FILES...
  tools.py floor FILE DATASET          h5py: open the file, Dataset.id.chunk_iter, nothing else
  tools.py check OUT ARCHIVES_JSON NAME   open OUT with xarray (zarr engine through fsspec's
                                       ReferenceFileSystem), check shapes and a few values

The peers are used as their documentation shows: kerchunk SingleHdf5ToZarr / NetCDF3ToZarr per
file, MultiZarrToZarr to combine, the references written as JSON; VirtualiZarr
open_virtual_dataset per file, xarray.concat, .vz.to_kerchunk(format="json"). Every subcommand
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


# --- kerchunk 0.2.10 ------------------------------------------------------------------


def run_kerchunk(a) -> None:
    import ujson
    from kerchunk.combine import MultiZarrToZarr
    from kerchunk.hdf import SingleHdf5ToZarr
    from kerchunk.netCDF3 import NetCDF3ToZarr

    t_import = time.perf_counter()
    refs = []
    for path in a.files:
        if a.format == "hdf5":
            refs.append(SingleHdf5ToZarr(path).translate())
        else:
            refs.append(NetCDF3ToZarr(path).translate())
    t_scan = time.perf_counter()
    if a.concat_dim:
        mzz = MultiZarrToZarr(refs, concat_dims=[a.concat_dim],
                              identical_dims=a.identical.split(",") if a.identical else None,
                              remote_protocol="file")
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
    # One local store for the archive's directory, as the VirtualiZarr docs show for local files.
    root = os.path.dirname(os.path.commonpath([os.path.abspath(p) for p in a.files])) \
        if len(a.files) == 1 else os.path.commonpath([os.path.abspath(p) for p in a.files])
    registry = ObjectStoreRegistry({f"file://{root}": LocalStore(prefix=root)})
    parser = HDFParser() if a.format == "hdf5" else NetCDF3Parser()
    vdss = [open_virtual_dataset(url=f"file://{os.path.abspath(p)}", registry=registry,
                                 parser=parser) for p in a.files]
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


def open_refs(path: str):
    import fsspec
    import xarray as xr
    import zarr

    zarr.config.set({"array.rectilinear_chunks": True})
    with open(path) as f:
        refs = json.load(f)
    fs = fsspec.filesystem("reference", fo=refs, remote_protocol="file", asynchronous=True,
                           remote_options={"asynchronous": True})
    store = zarr.storage.FsspecStore(fs, path="/", read_only=True)
    return xr.open_zarr(store, consolidated=False, decode_times=False,
                        mask_and_scale=False), refs


def run_check(a) -> None:
    """Shapes of every expected variable, then values against the source files: every data
    variable at the first and last day of the first, a middle and the last file (for the
    single HDF5 file: a few slabs), and the concatenated time coordinate."""
    import numpy as np

    arch = json.load(open(a.archives))[a.name]
    ds, refs = open_refs(a.output)
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
        s.add_argument("-o", "--output", required=True)
        s.add_argument("files", nargs="+")
    s = sub.add_parser("floor")
    s.add_argument("file")
    s.add_argument("dataset")
    s = sub.add_parser("check")
    s.add_argument("output")
    s.add_argument("archives")
    s.add_argument("name")
    a = ap.parse_args()
    {"kerchunk": run_kerchunk, "virtualizarr": run_virtualizarr, "floor": run_floor,
     "check": run_check}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
