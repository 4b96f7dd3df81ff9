"""pytest plugin for VirtualiZarr's own test suite (loaded with ``-p vzarr_substitute``).

With ``VZARR_YARDSTICK_PARSER=vzarr`` (the default) every module attribute that *is*
VirtualiZarr's ``HDFParser`` or ``NetCDF3Parser`` (``virtualizarr.parsers``, the modules that
define them, the test modules and helpers that imported them) is replaced by vzarr's class of
the same name, before collection and again before each test, so the test files run unmodified
against vzarr's parser. With ``VZARR_YARDSTICK_PARSER=virtualizarr`` nothing is replaced: the
baseline run.

Also:
- xarray's tutorial file ``air_temperature`` (which the suite downloads) is written locally
  with the same structure into pooch's cache under ``VZARR_YARDSTICK_CACHE``, so the suite
  runs offline.
- ``VZARR_YARDSTICK_OUT=path``: each test's outcome and, for a failure, its exception type
  and message's first line are written there as JSON lines (read by ``compare.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import outcomes

_PARSER = os.environ.get("VZARR_YARDSTICK_PARSER", "vzarr")
# VirtualiZarr's classes, kept referenced so that their ids stay theirs.
_THEIRS: dict[int, object] = {}
_OURS: dict[int, object] = {}
# Whether pytest-xdist runs the tests in workers (set in pytest_configure).
_XDIST = False


def _substitute() -> None:
    """Replaces every module attribute that is one of VirtualiZarr's two parsers by vzarr's."""
    if _PARSER != "vzarr":
        return
    if not _THEIRS:
        from virtualizarr.parsers.hdf.hdf import HDFParser
        from virtualizarr.parsers.netcdf3 import NetCDF3Parser

        import vzarr.virtualizarr as ours

        for theirs, mine in ((HDFParser, ours.HDFParser), (NetCDF3Parser, ours.NetCDF3Parser)):
            _THEIRS[id(theirs)] = theirs
            _OURS[id(theirs)] = mine
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict) or module.__name__.startswith("vzarr"):
            continue
        for name, value in list(namespace.items()):
            if id(value) in _OURS and _THEIRS[id(value)] is value:
                setattr(module, name, _OURS[id(value)])


def _tutorial_files(cache: Path) -> None:
    """Writes xarray's tutorial files ``air_temperature`` and ``ROMS_example`` where its
    tutorial looks for them (pooch's cache), with the dimensions, types and attributes the
    tests rely on (values made up)."""
    import pooch
    from xarray import tutorial

    os.environ["XDG_CACHE_HOME"] = str(cache)
    folder = Path(pooch.os_cache(tutorial._default_cache_dir_name))
    folder.mkdir(parents=True, exist_ok=True)
    for name, write in (("air_temperature", _air_temperature), ("ROMS_example", _roms)):
        url = f"{tutorial.base_url}/raw/{tutorial.version}/{name}.nc"
        target = folder / pooch.utils.unique_file_name(url)
        if not target.exists():
            partial = target.with_suffix(".partial")
            write(partial)
            partial.rename(target)


def _roms(path: Path) -> None:
    """A small ROMS-like file: 2-D coordinates, and coordinates named in attributes."""
    import numpy as np
    from netCDF4 import Dataset

    with Dataset(path, "w", format="NETCDF4") as nc:
        nc.coordinates = "hc h Vtransform Cs_r"
        for dim, n in (("ocean_time", 2), ("s_rho", 3), ("eta_rho", 4), ("xi_rho", 5)):
            nc.createDimension(dim, n)
        t = nc.createVariable("ocean_time", "f8", ("ocean_time",))
        t.units = "seconds since 2001-01-01"
        t[:] = [0.0, 3600.0]
        nc.createVariable("s_rho", "f8", ("s_rho",))[:] = [-0.8, -0.5, -0.2]
        nc.createVariable("Cs_r", "f8", ("s_rho",))[:] = [-0.6, -0.3, -0.1]
        nc.createVariable("hc", "f8", ())[...] = 20.0
        nc.createVariable("Vtransform", "i4", ())[...] = 2
        for name, base in (("lon_rho", -90.0), ("lat_rho", 27.0), ("h", 10.0)):
            nc.createVariable(name, "f8", ("eta_rho", "xi_rho"))[:] = (
                base + np.arange(20.0).reshape(4, 5))
        zeta = nc.createVariable("zeta", "f4", ("ocean_time", "eta_rho", "xi_rho"))
        zeta.coordinates = "lon_rho lat_rho ocean_time"
        zeta[:] = np.arange(40.0).reshape(2, 4, 5)
        salt = nc.createVariable("salt", "f4", ("ocean_time", "s_rho", "eta_rho", "xi_rho"))
        salt.coordinates = "lon_rho lat_rho s_rho ocean_time"
        salt[:] = 30 + np.arange(120.0).reshape(2, 3, 4, 5) / 100


def _air_temperature(path: Path) -> None:
    """``air_temperature``: the NetCDF3 file of 2920 x 25 x 53 packed int16 values."""
    import numpy as np
    from netCDF4 import Dataset

    with Dataset(path, "w", format="NETCDF3_CLASSIC") as nc:
        nc.setncatts({
            "Conventions": "COARDS",
            "title": "4x daily NMC reanalysis (1948)",
            "description": "Data is from NMC initialized reanalysis\n(4x/day).  These are the 0.9950 "
                           "sigma level values.",
            "platform": "Model",
            "references": "http://www.esrl.noaa.gov/psd/data/gridded/data.ncep.reanalysis.html",
        })
        nc.createDimension("lat", 25)
        nc.createDimension("time", 2920)
        nc.createDimension("lon", 53)
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat.setncatts({"standard_name": "latitude", "long_name": "Latitude",
                       "units": "degrees_north", "axis": "Y"})
        lat[:] = np.arange(75.0, 14.9, -2.5, dtype="f4")
        lon = nc.createVariable("lon", "f4", ("lon",))
        lon.setncatts({"standard_name": "longitude", "long_name": "Longitude",
                       "units": "degrees_east", "axis": "X"})
        lon[:] = np.arange(200.0, 330.1, 2.5, dtype="f4")
        time = nc.createVariable("time", "f4", ("time",))
        time.setncatts({"standard_name": "time", "long_name": "Time",
                        "units": "hours since 1800-01-01", "calendar": "standard"})
        time[:] = (1849416.0 + 6.0 * np.arange(2920)).astype("f4")
        air = nc.createVariable("air", "i2", ("time", "lat", "lon"))
        air.set_auto_maskandscale(False)
        air.setncatts({"long_name": "4xDaily Air temperature at sigma level 995",
                       "units": "degK", "precision": np.int16(2), "GRIB_id": np.int16(11),
                       "GRIB_name": "TMP", "var_desc": "Air temperature",
                       "dataset": "NMC Reanalysis", "level_desc": "Surface",
                       "statistic": "Individual Obs", "parent_stat": "Other",
                       "actual_range": np.array([185.16, 322.1], dtype="f4"),
                       "scale_factor": 0.01})
        rng = np.random.default_rng(0)
        air[:] = (27000 + rng.integers(-3000, 3000, (2920, 25, 53))).astype("i2")


def pytest_configure(config: pytest.Config) -> None:
    # h5py and hdf5plugin before netCDF4 (which the tutorial files need): netCDF4's netCDF-C
    # registers its own Blosc filter with HDF5 when imported first, and h5py then fails to
    # create Blosc datasets ("error during user callback"), as VirtualiZarr's conftest,
    # importing h5py first, avoids.
    import h5py  # noqa: F401
    import hdf5plugin  # noqa: F401

    global _XDIST
    _XDIST = bool(getattr(config.option, "numprocesses", None))
    cache = os.environ.get("VZARR_YARDSTICK_CACHE")
    if cache:
        _tutorial_files(Path(cache))
    _substitute()


def pytest_collection_finish(session: pytest.Session) -> None:
    _substitute()


def pytest_runtest_setup(item: pytest.Item) -> None:
    _substitute()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    outcomes.record(report, os.environ.get("VZARR_YARDSTICK_OUT"), _XDIST)
