"""Deterministic archive generators for the comparison benchmark (benches/compare/run).

    python gen.py WORKDIR [--quick]

Writes four archives under WORKDIR and a description of each (WORKDIR/archives.json):

  a_nc4_daily_t1   monthly NetCDF4 files, daily data, time chunk 1 (regular grid after
                   concatenation), tas/pr/psl float32 on a 180x360 grid, shuffle + deflate
                   level 1 like CMOR-written CMIP data, CF time with bounds, lat/lon with bounds
  b_hdf5_chunks    one HDF5 file, one float32 dataset (10000, 160, 160) in chunks of
                   (1, 16, 16): 1,000,000 chunks (100,000 with --quick), shuffle + deflate
                   level 1, h5py defaults (version 1 B-tree chunk index). A chunk takes about
                   670 bytes, above kerchunk's default inline threshold (500), so every tool
                   references every chunk rather than copying some into the output
  c_nc3_records    monthly NetCDF3 classic files, daily records; air/uwnd/vwnd int16 packed
                   with scale_factor/add_offset on a 73x144 grid (NCEP reanalysis style), the
                   time coordinate is a record variable too
  d_nc4_daily_month  archive (a) with one chunk per month along time: after concatenation
                   the time axis has 31, 28, 31, 30, ... chunk edges (rectilinear)
  m_nc4_monthly24  24 monthly NetCDF4 files (2021-2022), daily tas float32 on a 96x192
                   grid, time chunk 1, shuffle + deflate level 1, the CF layout of (a) (time
                   with bounds, lat/lon with bounds); the same size in --quick. The monthly
                   archive of the object-storage cases (bench.py s3m); generated only when
                   asked for by name

Every value comes from a seeded generator, so a second run writes the same data. An archive
is regenerated only when its parameters (or this generator's version) change: a stamp file
in each archive directory records them.
"""

from __future__ import annotations

import argparse
import calendar
import datetime as dt
import json
import os
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

GEN_VERSION = 1
STAMP = ".generated.json"


# --- parameters ----------------------------------------------------------------------


def params(quick: bool) -> dict[str, dict]:
    nc4 = {"kind": "nc4", "months": 12 if quick else 120, "start": [2001, 1],
           "nlat": 180, "nlon": 360, "vars": ["tas", "pr", "psl"], "complevel": 1}
    return {
        "a_nc4_daily_t1": {**nc4, "time_chunk": "1"},
        "b_hdf5_chunks": {"kind": "hdf5", "shape": [1000 if quick else 10000, 160, 160],
                          "chunks": [1, 16, 16], "complevel": 1},
        "c_nc3_records": {"kind": "nc3", "months": 20 if quick else 200, "start": [1990, 1],
                          "nlat": 73, "nlon": 144, "vars": ["air", "uwnd", "vwnd"]},
        "d_nc4_daily_month": {**nc4, "time_chunk": "month"},
        "m_nc4_monthly24": {**nc4, "months": 24, "start": [2021, 1], "nlat": 96, "nlon": 192,
                            "vars": ["tas"], "time_chunk": "1"},
    }


# Archives generate() writes when not given names: the local cases of bench.py.
DEFAULT = ("a_nc4_daily_t1", "b_hdf5_chunks", "c_nc3_records", "d_nc4_daily_month")


def months(start: list[int], n: int) -> list[tuple[int, int]]:
    y, m = start
    out = []
    for _ in range(n):
        out.append((y, m))
        m += 1
        if m == 13:
            y, m = y + 1, 1
    return out


def days_in(y: int, m: int) -> int:
    return calendar.monthrange(y, m)[1]


# --- smooth, realistic-looking fields ------------------------------------------------


def field(rng: np.random.Generator, nt: int, nlat: int, nlon: int, base: np.ndarray,
          amp: float, noise: float) -> np.ndarray:
    """base + a few large-scale waves with random phases per day + small noise (float32).

    The noise fills the low mantissa bits as real model output does, so shuffle + deflate
    compresses it about as much as it compresses CMIP data (ratio about 1.2-1.5)."""
    lat = np.linspace(-np.pi / 2, np.pi / 2, nlat, dtype=np.float32)[:, None]
    lon = np.linspace(0, 2 * np.pi, nlon, endpoint=False, dtype=np.float32)[None, :]
    out = np.empty((nt, nlat, nlon), dtype=np.float32)
    for t in range(nt):
        k = rng.integers(1, 5, size=3)
        ph = rng.uniform(0, 2 * np.pi, size=3).astype(np.float32)
        wave = (np.sin(k[0] * lon + ph[0]) * np.cos(k[1] * lat + ph[1])
                + 0.5 * np.sin(k[2] * (lon + lat) + ph[2]))
        out[t] = base + amp * wave + noise * rng.standard_normal((nlat, nlon), dtype=np.float32)
    return out


# --- (a) and (d): NetCDF4 -------------------------------------------------------------


def write_nc4(path: str, p: dict, y: int, m: int, seed: int) -> None:
    import netCDF4

    nlat, nlon = p["nlat"], p["nlon"]
    nd = days_in(y, m)
    t0 = (dt.date(y, m, 1) - dt.date(*p["start"], 1)).days
    tchunk = 1 if p["time_chunk"] == "1" else nd
    rng = np.random.default_rng(seed)
    lat = np.linspace(-89.5, 89.5, nlat)
    lon = np.linspace(0.5, 359.5, nlon)
    coslat = np.cos(np.deg2rad(lat)).astype(np.float32)[:, None]
    bases = {
        "tas": (np.float32(230) + 60 * coslat, 8.0, 0.5, "K", "air_temperature"),
        "pr": (np.float32(3e-5) * coslat, 2e-5, 1e-6, "kg m-2 s-1", "precipitation_flux"),
        "psl": (np.float32(101325) + 0 * coslat, 1500.0, 20.0, "Pa", "air_pressure_at_mean_sea_level"),
    }
    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", nlat)
        ds.createDimension("lon", nlon)
        ds.createDimension("bnds", 2)
        units = "days since %04d-%02d-01" % tuple(p["start"])
        tv = ds.createVariable("time", "f8", ("time",), chunksizes=(tchunk,))
        tv.setncatts({"units": units, "calendar": "standard", "standard_name": "time",
                      "axis": "T", "bounds": "time_bnds"})
        tb = ds.createVariable("time_bnds", "f8", ("time", "bnds"), chunksizes=(tchunk, 2))
        la = ds.createVariable("lat", "f8", ("lat",))
        la.setncatts({"units": "degrees_north", "standard_name": "latitude", "axis": "Y",
                      "bounds": "lat_bnds"})
        lb = ds.createVariable("lat_bnds", "f8", ("lat", "bnds"))
        lo = ds.createVariable("lon", "f8", ("lon",))
        lo.setncatts({"units": "degrees_east", "standard_name": "longitude", "axis": "X",
                      "bounds": "lon_bnds"})
        lob = ds.createVariable("lon_bnds", "f8", ("lon", "bnds"))
        days = np.arange(t0, t0 + nd, dtype="f8")
        tv[:] = days + 0.5
        tb[:] = np.stack([days, days + 1], axis=1)
        la[:] = lat
        lb[:] = np.stack([lat - 0.5, lat + 0.5], axis=1)
        lo[:] = lon
        lob[:] = np.stack([lon - 0.5, lon + 0.5], axis=1)
        for name in p["vars"]:
            base, amp, noise, u, sn = bases[name]
            v = ds.createVariable(name, "f4", ("time", "lat", "lon"), zlib=True,
                                  complevel=p["complevel"], shuffle=True,
                                  chunksizes=(tchunk, nlat, nlon), fill_value=np.float32(1e20))
            v.setncatts({"units": u, "standard_name": sn, "cell_methods": "time: mean",
                         "missing_value": np.float32(1e20)})
            v[:] = field(rng, nd, nlat, nlon, base, amp, noise)
        ds.setncatts({"Conventions": "CF-1.7", "frequency": "day",
                      "source": "vzarr benches/compare/gen.py", "title": "synthetic daily data"})
    os.replace(tmp, path)


# --- (c): NetCDF3 ----------------------------------------------------------------------


def write_nc3(path: str, p: dict, y: int, m: int, seed: int) -> None:
    import netCDF4

    nlat, nlon = p["nlat"], p["nlon"]
    nd = days_in(y, m)
    rng = np.random.default_rng(seed)
    lat = np.linspace(90, -90, nlat, dtype="f4")
    lon = np.linspace(0, 357.5, nlon, dtype="f4")
    coslat = np.cos(np.deg2rad(lat)).astype(np.float32)[:, None]
    bases = {  # base, amplitude, noise, units, scale_factor, add_offset
        "air": (np.float32(230) + 60 * coslat, 8.0, 0.5, "degK", 0.01, 477.66),
        "uwnd": (np.float32(5) * coslat, 10.0, 1.0, "m/s", 0.01, 202.66),
        "vwnd": (np.float32(0) * coslat, 6.0, 1.0, "m/s", 0.01, 202.66),
    }
    hours0 = (dt.date(y, m, 1) - dt.date(1800, 1, 1)).days * 24.0
    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", nlat)
        ds.createDimension("lon", nlon)
        la = ds.createVariable("lat", "f4", ("lat",))
        la.setncatts({"units": "degrees_north", "long_name": "Latitude"})
        lo = ds.createVariable("lon", "f4", ("lon",))
        lo.setncatts({"units": "degrees_east", "long_name": "Longitude"})
        tv = ds.createVariable("time", "f8", ("time",))
        tv.setncatts({"units": "hours since 1800-01-01 00:00:0.0", "long_name": "Time",
                      "calendar": "standard"})
        vs = {}
        for name in p["vars"]:
            _, _, _, u, sf, ao = bases[name]
            v = ds.createVariable(name, "i2", ("time", "lat", "lon"))
            v.set_auto_maskandscale(False)
            v.setncatts({"units": u, "scale_factor": np.float32(sf),
                         "add_offset": np.float32(ao), "missing_value": np.int16(32766),
                         "long_name": name})
            vs[name] = v
        la[:] = lat
        lo[:] = lon
        tv[:] = hours0 + 24.0 * np.arange(nd)
        for name in p["vars"]:
            base, amp, noise, _, sf, ao = bases[name]
            f = field(rng, nd, nlat, nlon, base, amp, noise)
            vs[name][:] = np.clip(np.round((f - ao) / sf), -32767, 32765).astype("i2")
        ds.setncatts({"Conventions": "COARDS", "title": "synthetic daily reanalysis-like data"})
    os.replace(tmp, path)


# --- (b): one HDF5 file with many chunks -------------------------------------------


def write_hdf5(path: str, p: dict) -> None:
    import h5py

    shape, chunks = tuple(p["shape"]), tuple(p["chunks"])
    rng = np.random.default_rng(7)
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        d = f.create_dataset("data", shape=shape, dtype="f4", chunks=chunks, shuffle=True,
                             compression="gzip", compression_opts=p["complevel"])
        d.attrs["units"] = "1"
        step = 500
        base = np.float32(280)
        for i in range(0, shape[0], step):
            n = min(step, shape[0] - i)
            d[i:i + n] = field(rng, n, shape[1], shape[2], base, 5.0, 0.2)
    os.replace(tmp, path)


# --- driver -----------------------------------------------------------------------------


def describe(name: str, p: dict, adir: Path) -> dict:
    """What the benchmark needs to know: files, expected shapes, chunk counts."""
    if p["kind"] == "hdf5":
        n_chunks = int(np.prod([s // c for s, c in zip(p["shape"], p["chunks"])]))
        return {"name": name, "kind": "hdf5", "files": [str(adir / "big.h5")],
                "concat_dim": None, "expect": {"data": p["shape"]},
                "data_chunks": n_chunks, "dataset": "data"}
    ms = months(p["start"], p["months"])
    ntime = sum(days_in(y, m) for y, m in ms)
    files = [str(adir / fname(name, p, y, m)) for y, m in ms]
    nvars = len(p["vars"])
    if p["kind"] == "nc4":
        per_var = ntime if p["time_chunk"] == "1" else len(ms)
        expect = {v: [ntime, p["nlat"], p["nlon"]] for v in p["vars"]}
        expect.update({"time": [ntime], "time_bnds": [ntime, 2], "lat": [p["nlat"]],
                       "lon": [p["nlon"]], "lat_bnds": [p["nlat"], 2],
                       "lon_bnds": [p["nlon"], 2]})
        identical = ["lat", "lon", "lat_bnds", "lon_bnds"]
    else:
        per_var = ntime
        expect = {v: [ntime, p["nlat"], p["nlon"]] for v in p["vars"]}
        expect.update({"time": [ntime], "lat": [p["nlat"]], "lon": [p["nlon"]]})
        identical = ["lat", "lon"]
    return {"name": name, "kind": p["kind"], "files": files, "concat_dim": "time",
            "identical": identical, "expect": expect, "data_vars": p["vars"],
            "data_chunks": per_var * nvars, "months": len(ms),
            "rectilinear": p.get("time_chunk") == "month"}


def fname(name: str, p: dict, y: int, m: int) -> str:
    if p["kind"] == "nc3":
        return "ncep_like_%04d%02d.nc" % (y, m)
    return "%s_day_%04d%02d.nc" % ("_".join(p["vars"]), y, m)


def job(args: tuple) -> str:
    kind, path, p, y, m, seed = args
    (write_nc4 if kind == "nc4" else write_nc3)(path, p, y, m, seed)
    return path


def generate(work: Path, quick: bool, jobs: int, names=None) -> dict:
    """Writes the archives named (default: DEFAULT) that are missing or out of date; returns
    the description of each (also written to WORK/archives.json, merged with the
    descriptions already there)."""
    work.mkdir(parents=True, exist_ok=True)
    names = set(DEFAULT if names is None else names)
    unknown = names - set(params(quick))
    if unknown:
        raise ValueError(f"unknown archive(s): {', '.join(sorted(unknown))}")
    out = {}
    for name, p in params(quick).items():
        if name not in names:
            continue
        adir = work / name
        want = {"gen_version": GEN_VERSION, "params": p}
        stamp = adir / STAMP
        desc = describe(name, p, adir)
        if stamp.exists() and json.loads(stamp.read_text()) == want and all(
                os.path.exists(f) for f in desc["files"]):
            print(f"gen: {name}: up to date", file=sys.stderr)
        else:
            print(f"gen: {name}: writing {len(desc['files'])} file(s) into {adir}",
                  file=sys.stderr, flush=True)
            shutil.rmtree(adir, ignore_errors=True)
            adir.mkdir(parents=True)
            if p["kind"] == "hdf5":
                write_hdf5(desc["files"][0], p)
            else:
                tasks = []
                for i, (y, m) in enumerate(months(p["start"], p["months"])):
                    # The seed depends on the month only: (a) and (d) hold the same values.
                    tasks.append((p["kind"], str(adir / fname(name, p, y, m)), p, y, m,
                                  1000 + 12 * y + m))
                with ProcessPoolExecutor(max_workers=jobs) as ex:
                    for _ in ex.map(job, tasks):
                        pass
            stamp.write_text(json.dumps(want))
        desc["bytes"] = sum(os.path.getsize(f) for f in desc["files"])
        out[name] = desc
    index = work / "archives.json"
    try:
        known = json.loads(index.read_text())
    except (OSError, ValueError):
        known = {}
    known = {k: v for k, v in known.items() if k in params(quick) and k not in out}
    index.write_text(json.dumps({**known, **out}, indent=1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--names", help="comma-separated archive names (default: the local "
                    "cases, " + ", ".join(DEFAULT) + ")")
    a = ap.parse_args()
    names = a.names.split(",") if a.names else None
    generate(Path(a.work).resolve(), a.quick, a.jobs, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
