"""Writes a catalog of N small NetCDF files (3 variables of 100 chunks each) for the catalog
bench: NetCDF4 (HDF5, chunked, deflate) or NetCDF3 (record variables, one chunk per record).
Deterministic; skips files that already exist with the right size."""

import sys
from pathlib import Path

import netCDF4
import numpy as np


def write(path: Path, k: int, fmt: str) -> None:
    tmp = path.with_suffix(".tmp")
    ds = netCDF4.Dataset(tmp, "w", format=fmt)
    ds.createDimension("time", None)
    ds.createDimension("y", 8)
    ds.createDimension("x", 8)
    t = ds.createVariable("time", "f8", ("time",))
    t.units = "days since 2000-01-01"
    t.calendar = "noleap"
    kw = dict(chunksizes=(1, 8, 8), zlib=True, complevel=1) if fmt == "NETCDF4" else {}
    rng = np.random.default_rng(k)
    for name in ("a", "b", "c"):
        v = ds.createVariable(name, "f4", ("time", "y", "x"), **kw)
        v[:] = rng.standard_normal((100, 8, 8)).astype("f4")
    t[:] = np.arange(100) + 100 * k
    ds.close()
    tmp.rename(path)


def main() -> None:
    out = Path(sys.argv[1])
    n = int(sys.argv[2])
    fmt = sys.argv[3] if len(sys.argv) > 3 else "NETCDF4"
    out.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        p = out / f"f{k:05d}.nc"
        if not p.exists():
            write(p, k, fmt)


if __name__ == "__main__":
    main()
