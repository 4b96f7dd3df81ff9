"""The catalog of benches/scale: DAYS daily NetCDF4 files of one variable `tas`.

    python gen.py DIR [--days 3650] [--jobs 2] [--chunk 32]

Each file `tas_YYYYMMDD.nc` holds `tas(time=1, lat=384, lon=768)` float32 in chunks of
(1, 32, 32) (288 chunks of 4 KiB, zlib level 4 with shuffle: 1.5-2.5 KiB each, so nothing is
merged or inlined by `vzarr build`), plus `time` (days since 2000-01-01), `lat` and `lon`.
3,650 files: 1,051,200 `tas` references. The values come from a generator seeded with the
day, so a second run writes the same files; a stamp file in DIR records the parameters and
the catalog is regenerated only when they change. `--chunk N` writes chunks of (1, N, N)
instead (8: 4,608 chunks a day of ~200 bytes, for catalogs of 10M references in 2,170 days).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from datetime import date, timedelta
from pathlib import Path

import netCDF4
import numpy as np

VERSION = 1
STAMP = ".generated.json"
NLAT, NLON, CH = 384, 768, 32


def write_day(args: tuple[str, int, int]) -> None:
    """Writes day `k` (days since 2000-01-01) to `path`, in chunks of (1, ch, ch)."""
    path, k, ch = args
    rng = np.random.default_rng(k)
    lat = np.linspace(-89.75, 89.75, NLAT)
    lon = np.linspace(0, 359.5, NLON)
    base = 288.0 - 30 * np.abs(np.sin(np.deg2rad(lat)))[:, None] + 5 * np.cos(np.deg2rad(lon))[None, :]
    season = 10 * np.sin(2 * np.pi * (k % 365) / 365)
    noise = rng.normal(0, 1.5, size=(NLAT, NLON))
    tas = np.round(base + season + noise, 2).astype("f4")[None]
    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF4") as f:
        f.createDimension("time", None)
        f.createDimension("lat", NLAT)
        f.createDimension("lon", NLON)
        t = f.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t.calendar = "standard"
        t[:] = [k]
        la = f.createVariable("lat", "f8", ("lat",))
        la.units = "degrees_north"
        la[:] = lat
        lo = f.createVariable("lon", "f8", ("lon",))
        lo.units = "degrees_east"
        lo[:] = lon
        v = f.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=4,
                             shuffle=True, chunksizes=(1, ch, ch))
        v.units = "K"
        v[:] = tas
    os.replace(tmp, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--days", type=int, default=3650)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--chunk", type=int, default=CH)
    a = ap.parse_args()
    if NLAT % a.chunk or NLON % a.chunk:
        ap.error(f"--chunk must divide {NLAT} and {NLON}")
    out = Path(a.dir).resolve()
    want = {"version": VERSION, "days": a.days}
    if a.chunk != CH:
        want["chunk"] = a.chunk
    stamp = out / STAMP
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return 0
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    start = date(2000, 1, 1)
    jobs = [(str(out / f"tas_{(start + timedelta(days=k)):%Y%m%d}.nc"), k, a.chunk)
            for k in range(a.days)]
    with ProcessPoolExecutor(a.jobs) as ex:
        list(ex.map(write_day, jobs, chunksize=16))
    stamp.write_text(json.dumps(want))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
