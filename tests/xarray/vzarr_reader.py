"""pytest plugin for xarray's own backend tests (loaded with ``-p vzarr_reader``).

xarray's round-trip test classes (``xarray/tests/test_backends.py``) write a dataset with a
netCDF library (``self.save``) and read it back (``self.open``). With
``VZARR_XARRAY_READER`` set, ``DatasetIOBase.open`` (which every such class inherits) reads
the file through vzarr instead; the writer and every assertion stay xarray's:

- ``engine``: ``vzarr.build(path, output=path + ".vzarr.json")``, then
  ``xr.open_dataset(json, engine="vzarr", trust_references=True, **kwargs)``;
- ``open_dataset``: ``vzarr.open_dataset(path, **kwargs)`` (built in memory);
- ``icechunk``: ``vzarr.build(path, format="icechunk", output=...)``, then
  ``xr.open_dataset(repo, engine="vzarr", trust_references=True, **kwargs)``;
- ``netcdf``: nothing replaced (the baseline run with xarray's own readers).

``VZARR_XARRAY_OUT=path``: each test's outcome, whether it read through vzarr, and for a
failure its exception's first line, as JSON lines (read by ``tests/virtualizarr/compare.py``).
"""

from __future__ import annotations

import contextlib
import os
import shutil

import pytest

import outcomes  # tests/virtualizarr/outcomes.py (on PYTHONPATH: run)

_READER = os.environ.get("VZARR_XARRAY_READER", "engine")
_XDIST = False
# Whether the current test read a file through vzarr.
_USED = False


@contextlib.contextmanager
def _open_through_vzarr(self, path, **kwargs):
    """``DatasetIOBase.open`` with the file read through vzarr (see the module doc)."""
    global _USED
    import xarray as xr

    import vzarr

    _USED = True
    path = os.fspath(path)
    if _READER == "open_dataset":
        with vzarr.open_dataset(path, **kwargs) as ds:
            yield ds
        return
    if _READER == "icechunk":
        out = path + ".vzarr.icechunk"
        vzarr.build(path, output=out, format="icechunk")
    else:
        out = path + ".vzarr.json"
        vzarr.build(path, output=out)
    try:
        with xr.open_dataset(out, engine="vzarr", trust_references=True, **kwargs) as ds:
            yield ds
    finally:
        if os.path.isdir(out):
            shutil.rmtree(out, ignore_errors=True)
        elif os.path.exists(out):
            os.remove(out)


def pytest_configure(config: pytest.Config) -> None:
    global _XDIST
    _XDIST = bool(getattr(config.option, "numprocesses", None))
    if _READER == "netcdf":
        return
    from xarray.tests import test_backends

    test_backends.DatasetIOBase.open = _open_through_vzarr


def pytest_runtest_setup(item: pytest.Item) -> None:
    global _USED
    _USED = False


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    outcomes.record(report, os.environ.get("VZARR_XARRAY_OUT"), _XDIST, vzarr=_USED)
