"""NetCDF4 and NetCDF3 fixtures opened with xarray through our references equal xarray.open_dataset of the
source: decoded values (CF time included), attributes and dimension names, in every group."""

import netCDF4
import numpy as np
import pytest
import xarray as xr

from conftest import FIXTURES, as_text, build_refs, good_fixtures, is_text, normalise_attr, open_store

FIXTURE_LIST = good_fixtures(formats=("netcdf4", "netcdf3"))


def groups_of(path) -> list[str]:
    out = []

    def walk(g, prefix):
        out.append(prefix)
        for name, sub in g.groups.items():
            walk(sub, f"{prefix}/{name}" if prefix else name)

    with netCDF4.Dataset(path) as ds:
        walk(ds, "")
    return out


def norm_attrs(attrs: dict) -> dict:
    return {k: normalise_attr(v) for k, v in attrs.items() if k != "_FillValue"}


def assert_decoded_equal(src: xr.Variable, virt: xr.Variable, where: str):
    assert src.dims == virt.dims, f"{where}: dims {virt.dims} != {src.dims}"
    s, v = src.values, virt.values
    assert s.shape == v.shape, f"{where}: shape"
    if s.dtype.kind == "f" and v.dtype.kind == "f":
        if s.dtype == v.dtype:
            np.testing.assert_array_equal(v, s, err_msg=where)
        else:
            # Packed data: JSON attributes carry scale_factor/add_offset as float64, so xarray
            # decodes to float64 where the netCDF float32 attributes give float32.
            np.testing.assert_allclose(v, s, rtol=1e-6, atol=0, equal_nan=True, err_msg=where)
    elif is_text(s) and is_text(v):
        # Variable-length strings: xarray gives numpy str from netCDF4, StringDType from Zarr.
        assert np.array_equal(as_text(s), as_text(v)), f"{where}: strings differ"
    else:
        assert s.dtype == v.dtype, f"{where}: dtype {v.dtype} != {s.dtype}"
        assert np.array_equal(s, v), f"{where}: values differ"


@pytest.mark.parametrize("name", [f["name"] for f in FIXTURE_LIST])
def test_xarray_equals_source(name, tmp_path):
    entry = next(f for f in FIXTURE_LIST if f["name"] == name)
    src_path = FIXTURES / name
    store = open_store(build_refs(src_path, tmp_path / "refs.json"))
    skipped = set(entry.get("expect_skipped", {}))
    compared = 0
    for group in groups_of(src_path):
        kw = {"group": group} if group else {}
        with xr.open_dataset(src_path, engine="netcdf4", **kw) as src:
            virt = xr.open_zarr(store, consolidated=False, **kw)
            assert norm_attrs(virt.attrs) == norm_attrs(src.attrs), f"{name}:{group or '/'} global attrs"
            for var in src.variables:
                path = f"{group}/{var}" if group else var
                if path in skipped:
                    assert var not in virt.variables, f"{path} should be left out"
                    continue
                assert var in virt.variables, f"{path} missing"
                assert_decoded_equal(src[var].variable, virt[var].variable, f"{name}:{path}")
                assert norm_attrs(virt[var].attrs) == norm_attrs(src[var].attrs), f"{name}:{path} attrs"
                compared += 1
            # Nothing extra appears (dimension-only scales are not variables).
            extra = set(virt.variables) - set(src.variables)
            assert not extra, f"{name}:{group or '/'} extra variables {extra}"
    assert compared > 0
