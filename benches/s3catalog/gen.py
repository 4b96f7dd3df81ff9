"""Writes the catalogs of the object-storage catalog bench (benches/s3catalog): N daily
NetCDF4 files (a day of a 64 x 128 global field, deflate, with time bounds: about 30 KB each,
the shape of a model's daily output split one file per day) and M hourly NetCDF3 files (24
records of two 32 x 64 record variables and the time: about 400 KB each, the shape of a
station or reanalysis extract). Deterministic; files already there with their final name
are kept; written with netCDF4-python, several processes at once.

    python gen.py DIR NC4_FILES NC3_FILES [PROCESSES]
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import netCDF4
import numpy as np


def daily(path: Path, day: int) -> None:
    tmp = path.with_suffix(".tmp")
    ds = netCDF4.Dataset(tmp, "w", format="NETCDF4")
    ds.createDimension("time", None)
    ds.createDimension("lat", 64)
    ds.createDimension("lon", 128)
    ds.createDimension("bnds", 2)
    t = ds.createVariable("time", "f8", ("time",))
    t.units, t.calendar, t.bounds = "days since 2000-01-01", "noleap", "time_bnds"
    tb = ds.createVariable("time_bnds", "f8", ("time", "bnds"))
    lat = ds.createVariable("lat", "f8", ("lat",))
    lat.units = "degrees_north"
    lon = ds.createVariable("lon", "f8", ("lon",))
    lon.units = "degrees_east"
    tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(1, 64, 128),
                            zlib=True, complevel=4, fill_value=np.float32(1e20))
    tas.units, tas.standard_name = "K", "air_temperature"
    ds.title = "vzarr catalog bench: one day of a daily field"
    lat[:] = np.linspace(-88.6, 88.6, 64)
    lon[:] = np.arange(128) * 2.8125
    rng = np.random.default_rng(day)
    base = 250 + 40 * np.cos(np.deg2rad(lat[:]))[:, None] * np.ones((1, 128))
    # The coordinates first, as most writers do (their chunks then lie before the data's).
    t[:] = [day + 0.5]
    tb[:] = [[day, day + 1]]
    tas[0] = (base + rng.normal(0, 2, (64, 128))).round(1).astype("f4")
    ds.close()
    tmp.rename(path)


def hourly(path: Path, k: int) -> None:
    tmp = path.with_suffix(".tmp")
    ds = netCDF4.Dataset(tmp, "w", format="NETCDF3_64BIT_OFFSET")
    ds.createDimension("time", None)
    ds.createDimension("y", 32)
    ds.createDimension("x", 64)
    t = ds.createVariable("time", "f8", ("time",))
    t.units, t.calendar = "hours since 2000-01-01", "standard"
    rng = np.random.default_rng(100_000 + k)
    for name in ("u", "v"):
        v = ds.createVariable(name, "f4", ("time", "y", "x"))
        v.units = "m s-1"
        v[:] = rng.normal(0, 5, (24, 32, 64)).astype("f4")
    t[:] = np.arange(24) + 24 * k
    ds.close()
    tmp.rename(path)


def one(job: tuple[str, str, int]) -> None:
    kind, path, k = job
    p = Path(path)
    if not p.exists():
        (daily if kind == "nc4" else hourly)(p, k)


def main() -> None:
    out = Path(sys.argv[1])
    n4, n3 = int(sys.argv[2]), int(sys.argv[3])
    procs = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    (out / "nc4").mkdir(parents=True, exist_ok=True)
    (out / "nc3").mkdir(parents=True, exist_ok=True)
    jobs = [("nc4", str(out / "nc4" / f"day{k:05d}.nc"), k) for k in range(n4)]
    jobs += [("nc3", str(out / "nc3" / f"hours{k:04d}.nc"), k) for k in range(n3)]
    with ProcessPoolExecutor(procs) as ex:
        list(ex.map(one, jobs, chunksize=64))


if __name__ == "__main__":
    main()
