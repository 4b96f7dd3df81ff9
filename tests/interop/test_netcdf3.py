"""NetCDF3 fixtures (CDF-1, CDF-2, CDF-5): every variable read through our references with
zarr-python equals the raw values netCDF4-python reads from the source (no masking, no
scaling, exact), and the attributes match."""

import netCDF4
import numpy as np
import pytest
import zarr

from conftest import FIXTURES, assert_values_equal, build_refs, good_fixtures, normalise_attr, open_store

FIXTURE_LIST = good_fixtures(formats=("netcdf3",))


def test_all_three_versions_are_covered():
    versions = set()
    for f in FIXTURE_LIST:
        with open(FIXTURES / f["name"], "rb") as fh:
            versions.add(fh.read(4))
    assert versions == {b"CDF\x01", b"CDF\x02", b"CDF\x05"}


@pytest.mark.parametrize("split", [None, "64"])
@pytest.mark.parametrize("name", [f["name"] for f in FIXTURE_LIST])
def test_raw_values_equal_netcdf4_python(name, split, tmp_path):
    extra = ("--split-contiguous", split) if split else ()
    group = zarr.open_group(open_store(build_refs(FIXTURES / name, tmp_path / "r.json", *extra)), mode="r")
    with netCDF4.Dataset(FIXTURES / name) as ds:
        ds.set_auto_maskandscale(False)
        ds.set_auto_chartostring(False)
        assert ds.variables, "no variables"
        for var in ds.variables.values():
            arr = group[var.name]
            assert_values_equal(var[...], arr[...], f"{name}:{var.name}")
            assert list(arr.metadata.dimension_names) == list(var.dimensions), f"{name}:{var.name} dims"
            want = {k: normalise_attr(var.getncattr(k)) for k in var.ncattrs() if k != "_FillValue"}
            got = {k: v for k, v in arr.attrs.asdict().items() if k != "_FillValue"}
            assert got == want, f"{name}:{var.name} attributes"
            if "_FillValue" in var.ncattrs():
                assert "_FillValue" in arr.attrs, f"{name}:{var.name} _FillValue"
        want = {k: normalise_attr(ds.getncattr(k)) for k in ds.ncattrs()}
        assert group.attrs.asdict() == want, f"{name}: global attributes"
