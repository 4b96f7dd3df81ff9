"""xarray 2026.9.0's own backend round-trip tests with the file read back through vzarr
(tests/xarray/run --ours): the classes that write with netCDF4, h5netcdf, NETCDF4_CLASSIC,
NetCDF3 (scipy and netCDF4) and netCDF4 with dask, every test that fails through vzarr listed
with its reason in tests/xarray/known-failures.txt. A test that fails unlisted, a listed one
that passes, a collection error, a crashed worker or a run that records nothing fails here.

Every class through ``xr.open_dataset(refs, engine="vzarr")`` on a built reference file;
``vzarr.open_dataset(path)`` (built in memory, read through fsspec's reference filesystem)
and an Icechunk repository, each on the netCDF4 class (``-k`` below; NetCDF3 files take
the same paths after the scan): what differs on those paths is the store and the repository's documents, not the
mapping, and the whole suite three times would take CI minutes it does not have."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT

RUN = ROOT / "tests" / "xarray" / "run"


@pytest.mark.parametrize("reader,extra", [
    ("engine", []),
    ("open_dataset", ["--", "-k", "TestNetCDF4Data"]),
    ("icechunk", ["--", "-k", "TestNetCDF4Data"]),
])
def test_xarrays_backend_tests_fail_only_where_known(reader, extra):
    env = dict(os.environ, VZARR_INTEROP_PYTHON=sys.executable,
               VZARR_YARDSTICK_DIR=os.environ.get(
                   "VZARR_XARRAY_YARDSTICK_DIR", str(ROOT / ".tools" / "xarray-yardstick")))
    p = subprocess.run([str(RUN), "--ours", "--reader", reader, *extra], env=env,
                       capture_output=True, text=True, timeout=1500)
    print(p.stdout)
    print(p.stderr, file=sys.stderr)
    assert p.returncode == 0, f"xarray's tests through vzarr ({reader}):\n{p.stdout[-6000:]}"
    assert f"run with vzarr ({reader})" in p.stdout
