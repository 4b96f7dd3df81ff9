"""The concatenation planner: monthly archives generated here, combined with
`vzarr build --concat-dim time`, read back through zarr-python and xarray and compared with
`xarray.concat` of the sources (values, decoded time, attributes). Also the error cases: two
files that disagree, a static variable that differs, a gap, and new-dimension stacking."""

import calendar as pycal
import json
import random

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

from conftest import open_store, real_files_dir, run_vzarr, verify_refs

NLAT, NLON = 6, 8


def month_days(year, month, cal="standard"):
    if cal in ("noleap", "365_day"):
        return [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    if cal == "360_day":
        return 30
    return pycal.monthrange(year, month)[1]


def write_month(
    path,
    year,
    month,
    *,
    chunk_t=1,
    zlib=False,
    fmt="NETCDF4",
    units=None,
    cal="standard",
    day0=0,
    orog_offset=0.0,
    tas_dtype="f4",
    time_in_hours=False,
):
    """One month of daily data; `day0` is the day index of the month's first day, so values
    continue across files."""
    nd = month_days(year, month, cal)
    ds = netCDF4.Dataset(path, "w", format=fmt)
    ds.title = f"test month {year}-{month:02d}"
    ds.Conventions = "CF-1.8"
    ds.createDimension("time", None)
    ds.createDimension("lat", NLAT)
    ds.createDimension("lon", NLON)
    ds.createDimension("nv", 2)
    nc4 = fmt == "NETCDF4"
    t = ds.createVariable("time", "f8", ("time",))
    if units is None:
        units = f"{'hours' if time_in_hours else 'days'} since {year}-{month:02d}-01"
    t.units = units
    t.calendar = cal
    t.bounds = "time_bnds"
    t.standard_name = "time"
    tb = ds.createVariable("time_bnds", "f8", ("time", "nv"))
    lat = ds.createVariable("lat", "f4", ("lat",))
    lat.units = "degrees_north"
    lon = ds.createVariable("lon", "f4", ("lon",))
    lon.units = "degrees_east"
    kw = {}
    if nc4:
        kw = dict(chunksizes=(chunk_t, NLAT, NLON), zlib=zlib, shuffle=zlib, complevel=4 if zlib else 0)
    tas = ds.createVariable("tas", tas_dtype, ("time", "lat", "lon"), fill_value=np.array(1e20, tas_dtype), **kw)
    tas.units = "K"
    tas.long_name = "air temperature"
    if nc4:
        # The concatenation axis not outermost: chunks (lat, time).
        pr = ds.createVariable(
            "pr_t", "f4", ("lat", "time"), chunksizes=(NLAT, chunk_t), zlib=zlib, shuffle=zlib
        )
        pr.units = "mm"
    orog = ds.createVariable("orog", "f4", ("lat", "lon"))
    orog.units = "m"
    count = ds.createVariable("count", "i4", ("time",))
    lat[:] = np.linspace(-75, 75, NLAT)
    lon[:] = np.arange(NLON) * 45.0
    orog[:] = np.arange(NLAT * NLON, dtype="f4").reshape(NLAT, NLON) * 10 + orog_offset
    # Time values in the file's own units: days (or hours) since the month start, from
    # the file's reference date.
    unit = units.split()[0].lower()
    scale = {"days": 1.0, "hours": 24.0, "minutes": 1440.0, "seconds": 86400.0}[unit]
    ref_offset = 0.0
    if units != f"{'hours' if time_in_hours else 'days'} since {year}-{month:02d}-01":
        # Explicit units: values are offsets from that reference.
        ref = netCDF4.date2num(
            netCDF4.num2date(0, f"days since {year}-{month:02d}-01", calendar=cal), units, calendar=cal
        )
        ref_offset = float(ref)  # the month start in the file's units
    days = np.arange(nd, dtype="f8")
    t[:] = (days + 0.5) * scale + ref_offset
    tb[:] = np.stack([days * scale + ref_offset, (days + 1) * scale + ref_offset], axis=1)
    g = day0 + np.arange(nd)
    vals = (g[:, None, None] * 0.5 + np.arange(NLAT)[None, :, None] + np.arange(NLON)[None, None, :] * 0.1).astype(
        tas_dtype
    )
    vals = np.ma.masked_array(vals)
    vals[::7, 1, 2] = np.ma.masked
    tas[:] = vals
    if nc4:
        ds["pr_t"][:] = (np.arange(NLAT)[:, None] + g[None, :] * 0.25).astype("f4")
    count[:] = g.astype("i4")
    ds.close()
    return nd


def write_archive(tmp_path, months, **kw):
    """Files for (year, month) pairs; returns their paths in time order."""
    paths = []
    day0 = 0
    cal = kw.get("cal", "standard")
    for year, month in months:
        p = tmp_path / f"tas_{year}{month:02d}.nc"
        day0 += write_month(p, year, month, day0=day0, **kw)
        paths.append(p)
    return paths


def build(tmp_path, inputs, *extra, name="out.json", check=True):
    out = tmp_path / name
    p = run_vzarr("build", *inputs, "-o", out, *extra, check=check)
    return p, out


def open_virtual(out):
    with open(out) as f:
        refs = json.load(f)
    store = open_store(refs)
    return refs, store, xr.open_zarr(store, consolidated=False)


def expected_concat(paths, dim="time"):
    dss = [xr.open_dataset(p) for p in paths]
    # Static variables must be equal in every file; global attributes come from the first.
    return xr.concat(
        dss, dim=dim, data_vars="minimal", coords="minimal", compat="equals", join="exact", combine_attrs="override"
    )


def assert_matches_concat(virt, want):
    assert set(virt.variables) == set(want.variables), (set(virt.variables), set(want.variables))
    assert dict(virt.attrs) == dict(want.attrs), "global attributes"
    for name, var in want.variables.items():
        v = virt[name].variable
        assert v.dims == var.dims, f"{name}: dims {v.dims} != {var.dims}"
        a, b = v.values, var.values
        assert a.shape == b.shape, name
        if b.dtype.kind == "f":
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            assert a.dtype == b.dtype, f"{name}: {a.dtype} != {b.dtype}"
            assert np.array_equal(a, b), name
        attrs_w = {k: v for k, v in var.attrs.items() if k != "_FillValue"}
        attrs_v = {k: v for k, v in virt[name].attrs.items() if k != "_FillValue"}
        assert set(attrs_v) == set(attrs_w), f"{name}: attrs {attrs_v} != {attrs_w}"


def grid_of(refs, var):
    return json.loads(refs["refs"][f"{var}/zarr.json"])["chunk_grid"]


MONTHS_2023 = [(2023, m) for m in range(1, 13)]
MONTHS_24 = [(2023, m) for m in range(1, 13)] + [(2024, m) for m in range(1, 13)]


def test_time_chunk_one_gives_a_regular_grid(tmp_path):
    paths = write_archive(tmp_path, MONTHS_2023, chunk_t=1)
    # The planner's grid, chunks as stored (these are small: by default they are kept inline,
    # in a regular grid too, below).
    p, out = build(tmp_path, paths, "--concat-dim", "time", "--small-chunks", "keep")
    refs, store, virt = open_virtual(out)
    assert grid_of(refs, "tas") == {"name": "regular", "configuration": {"chunk_shape": [1, NLAT, NLON]}}
    assert virt.sizes["time"] == 365
    assert_matches_concat(virt, expected_concat(paths))
    assert "0 re-encoded inline" in p.stdout
    p, out = build(tmp_path, paths, "--concat-dim", "time", name="small.json")
    refs, store, virt = open_virtual(out)
    assert grid_of(refs, "tas") == {"name": "regular", "configuration": {"chunk_shape": [365, NLAT, NLON]}}
    assert_matches_concat(virt, expected_concat(paths))
    assert "references -> 0" in p.stdout, p.stdout


def test_whole_month_chunks_over_two_years_with_a_leap_year(tmp_path):
    paths = write_archive(tmp_path, MONTHS_24, chunk_t=31)
    p, out = build(tmp_path, paths, "--concat-dim", "time")
    refs, store, virt = open_virtual(out)
    grid = grid_of(refs, "tas")
    assert grid["name"] == "rectilinear"
    # 31 days chunks: a 31-day month is one chunk; shorter months give a shorter (trimmed) edge.
    edges = grid["configuration"]["chunk_shapes"][0]
    assert [28, 1] not in edges
    assert virt.sizes["time"] == 365 + 366
    assert "2024-02-29" in str(virt.time.values.astype("datetime64[D]"))
    assert_matches_concat(virt, expected_concat(paths))
    # zarr-python reads the raw array too.
    g = zarr.open_group(store, mode="r")
    assert g["tas"].shape == (731, NLAT, NLON)


def test_ten_day_chunks_compressed_are_reencoded(tmp_path):
    paths = write_archive(tmp_path, MONTHS_2023, chunk_t=10, zlib=True)
    # Chunks as stored (these few-hundred-byte chunks would be kept inline by default).
    p, out = build(tmp_path, paths, "--concat-dim", "time", "--small-chunks", "keep")
    refs, store, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(paths))
    # 11 of 12 months end in a padded chunk (not 30-day months... all but the last file):
    # months with a length that is not a multiple of 10, except the last file.
    padded = sum(1 for (y, m) in MONTHS_2023[:-1] if month_days(y, m) % 10)
    # tas and pr_t each have one padded chunk per such month; time/time_bnds are inline.
    assert f"{2 * padded} re-encoded inline" in p.stdout, p.stdout
    assert grid_of(refs, "tas")["name"] == "rectilinear"


def test_ten_day_chunks_uncompressed_are_trimmed(tmp_path):
    paths = write_archive(tmp_path, MONTHS_2023, chunk_t=10, zlib=False)
    p, out = build(tmp_path, paths, "--concat-dim", "time")
    refs, store, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(paths))
    padded = sum(1 for (y, m) in MONTHS_2023[:-1] if month_days(y, m) % 10)
    # tas (time outermost) is trimmed; pr_t (time inner) has to be re-encoded. count(time),
    # in netCDF's default 1-D chunk (longer than a month, uncompressed), is cut to each
    # month's length by the scanner already: nothing left to trim.
    assert f"{padded} trimmed to a shorter byte range, {padded} re-encoded inline" in p.stdout, p.stdout


@pytest.mark.parametrize("fmt", ["NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA"])
def test_netcdf3_record_archives(tmp_path, fmt):
    paths = write_archive(tmp_path, [(2020, m) for m in (1, 2, 3, 4)], fmt=fmt)
    p, out = build(tmp_path, paths, "--concat-dim", "time")
    refs, store, virt = open_virtual(out)
    assert virt.sizes["time"] == 31 + 29 + 31 + 30
    assert_matches_concat(virt, expected_concat(paths))


def test_noleap_calendar(tmp_path):
    paths = write_archive(tmp_path, [(2001, 1), (2001, 2), (2001, 3)], cal="noleap", fmt="NETCDF3_64BIT_OFFSET")
    p, out = build(tmp_path, paths, "--concat-dim", "time")
    refs, store, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(paths))


def test_time_units_differ_per_file(tmp_path):
    paths = []
    day0 = 0
    for i, (y, m) in enumerate([(2023, 1), (2023, 2), (2023, 3), (2023, 4)]):
        p = tmp_path / f"f{m}.nc"
        units = ["days since 2023-01-01", "hours since 2023-02-01 00:00:00", "days since 1970-01-01", "seconds since 2023-04-01T00:00:00Z"][i]
        day0 += write_month(p, y, m, day0=day0, units=units, chunk_t=5)
        paths.append(p)
    p, out = build(tmp_path, paths, "--concat-dim", "time")
    refs, store, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(paths))
    meta = json.loads(refs["refs"]["time/zarr.json"])
    assert meta["attributes"]["units"] == "days since 2023-01-01"
    # An explicit target.
    p, out2 = build(tmp_path, paths, "--concat-dim", "time", "--time-units", "hours since 2000-01-01", name="h.json")
    refs2, _, virt2 = open_virtual(out2)
    assert json.loads(refs2["refs"]["time/zarr.json"])["attributes"]["units"] == "hours since 2000-01-01"
    assert_matches_concat(virt2, expected_concat(paths))


def test_files_given_in_shuffled_order(tmp_path):
    paths = write_archive(tmp_path, MONTHS_2023, chunk_t=7, zlib=True)
    shuffled = paths[:]
    random.Random(7).shuffle(shuffled)
    assert shuffled != paths
    p, out = build(tmp_path, shuffled, "--concat-dim", "time")
    refs, store, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(paths))
    order = [piece["url"].rsplit("/", 1)[1] for piece in refs["vzarr"]["concat"]["pieces"]]
    assert order == [p.name for p in paths]


def test_directory_input(tmp_path):
    d = tmp_path / "archive"
    d.mkdir()
    paths = write_archive(d, [(2023, 1), (2023, 2)], chunk_t=31)
    p, out = build(tmp_path, [d], "--concat-dim", "time")
    _, _, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(paths))


def test_gap_is_an_error_unless_allowed(tmp_path):
    paths = write_archive(tmp_path, [(2023, 1), (2023, 2), (2023, 4)], chunk_t=1)
    p, out = build(tmp_path, paths, "--concat-dim", "time", check=False)
    assert p.returncode != 0
    assert "gap" in p.stderr and "tas_202302.nc" in p.stderr and "tas_202304.nc" in p.stderr, p.stderr
    assert "hint: pass --allow-gaps" in p.stderr, p.stderr
    assert not out.exists()
    p, out = build(tmp_path, paths, "--concat-dim", "time", "--allow-gaps")
    assert "gap" in p.stderr
    _, _, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(paths))


def test_overlap_is_an_error(tmp_path):
    a = tmp_path / "a.nc"
    b = tmp_path / "b.nc"
    write_month(a, 2023, 1)
    write_month(b, 2023, 1, day0=0)
    p, out = build(tmp_path, [a, b], "--concat-dim", "time", "--allow-gaps", check=False)
    assert p.returncode != 0 and "overlap" in p.stderr, p.stderr
    assert "hint:" in p.stderr and "--order-by" in p.stderr, p.stderr
    assert not out.exists()


def test_files_that_disagree_are_refused(tmp_path):
    a = tmp_path / "a.nc"
    b = tmp_path / "b.nc"
    write_month(a, 2023, 1)
    write_month(b, 2023, 2, day0=31, tas_dtype="f8")
    p, out = build(tmp_path, [a, b], "--concat-dim", "time", check=False)
    assert p.returncode != 0
    assert "tas" in p.stderr and "data type" in p.stderr and "a.nc" in p.stderr and "b.nc" in p.stderr, p.stderr
    assert not out.exists()


def test_static_variable_that_differs_is_refused(tmp_path):
    a = tmp_path / "a.nc"
    b = tmp_path / "b.nc"
    write_month(a, 2023, 1)
    write_month(b, 2023, 2, day0=31, orog_offset=1.0)
    p, out = build(tmp_path, [a, b], "--concat-dim", "time", check=False)
    assert p.returncode != 0
    assert "orog" in p.stderr and "identical" in p.stderr, p.stderr
    assert not out.exists()


def test_several_inputs_without_concat_dim_suggest_it(tmp_path):
    paths = write_archive(tmp_path, [(2023, 1), (2023, 2)])
    p, out = build(tmp_path, paths, check=False)
    assert p.returncode != 0
    assert "--concat-dim time" in p.stderr, p.stderr
    assert not out.exists()


def test_new_dimension_stacks_members(tmp_path):
    paths = []
    for k in range(3):
        pth = tmp_path / f"member{k}.nc"
        write_month(pth, 2023, 1, day0=100 * k, chunk_t=10, zlib=True)
        paths.append(pth)
    p, out = build(tmp_path, paths, "--new-dim", "member", "--new-dim-values", "1,2,3")
    refs, store, virt = open_virtual(out)
    dss = [xr.open_dataset(pth) for pth in paths]
    want = xr.concat(dss, dim="member", data_vars="all", coords="minimal", compat="override")
    want = want.assign_coords(member=[1, 2, 3])
    # Dimension coordinates (time, lat, lon) and their bounds are kept once.
    want["time_bnds"] = dss[0]["time_bnds"]
    assert_matches_concat(virt, want)
    # Default labels are the file names.
    p, out = build(tmp_path, paths, "--new-dim", "member", name="names.json")
    _, _, virt = open_virtual(out)
    assert [str(v) for v in virt.member.values] == [pth.name for pth in paths]


def test_bundled_sample_archive(tmp_path):
    from conftest import FIXTURES

    paths = sorted((FIXTURES / "archive").glob("*.nc"))
    assert len(paths) == 12
    p, out = build(tmp_path, [FIXTURES / "archive"], "--concat-dim", "time")
    refs, store, virt = open_virtual(out)
    assert_matches_concat(virt, expected_concat(paths))
    assert grid_of(refs, "tas")["name"] == "rectilinear"
    assert grid_of(refs, "pr")["name"] == "rectilinear"


@pytest.mark.parametrize(
    "selection,var,index",
    [
        # tas: 10-day chunks, materialised month ends; rows 25..65 cross Jan/Feb and Feb/Mar.
        ("tas[25:65, 3, 2:9]", "tas", np.s_[25:65, 3, 2:9]),
        # pr: whole-month chunks (rectilinear 31, 28, 31, ...), trimmed byte ranges.
        ("pr[-40:-20, :, 5]", "pr", np.s_[-40:-20, :, 5]),
    ],
)
def test_cat_across_rectilinear_chunk_boundaries(tmp_path, selection, var, index):
    """`vzarr cat` on the bundled archive equals netCDF4-python's reads of the monthly files,
    stacked, for slices that cross the rectilinear chunk edges between months."""
    from conftest import FIXTURES

    paths = sorted((FIXTURES / "archive").glob("*.nc"))
    _, out = build(tmp_path, [FIXTURES / "archive"], "--concat-dim", "time")
    refs = json.loads(out.read_text())
    assert grid_of(refs, var)["name"] == "rectilinear"
    parts = []
    for pth in paths:
        with netCDF4.Dataset(pth) as ds:
            v = ds[var]
            v.set_auto_maskandscale(False)
            parts.append(np.asarray(v[:]))
    want = np.concatenate(parts)[index]
    p = run_vzarr("cat", out, selection, "--json", "--trust-references")
    got = np.array(json.loads(p.stdout), dtype=want.dtype)
    assert got.shape == want.shape
    assert np.array_equal(got.view("u4"), want.view("u4"))


# Ordering by a variable other than the dimension's coordinate (--order-by).

NEMO = "iris_sample_data-2.5.2/iris_sample_data-2.5.2/iris_sample_data/sample_data/NEMO"


def test_real_nemo_months_are_ordered_by_time_centered(tmp_path):
    """Three monthly NEMO ocean files (Iris sample data, written by XIOS) whose dimension
    coordinate time_counter is 0 in every file: refused as overlapping, with a hint; ordered
    by time_centered they equal xarray's concatenation of the sources (values, decoded
    360-day time and its bounds, attributes), whatever order they are given in."""
    paths = sorted((real_files_dir() / NEMO).glob("nemo_1m_*.nc"))
    assert len(paths) == 3, paths
    p, out = build(tmp_path, paths, "--concat-dim", "time_counter", check=False)
    assert p.returncode != 0 and "overlap" in p.stderr, p.stderr
    assert "--order-by" in p.stderr, p.stderr
    assert not out.exists()

    p, out = build(tmp_path, paths[::-1], "--concat-dim", "time_counter", "--order-by", "time_centered")
    assert "files ordered by time_centered" in p.stdout, p.stdout
    refs, _, virt = open_virtual(out)
    want = expected_concat(paths, dim="time_counter")
    assert_matches_concat(virt, want)
    assert [str(t)[:10] for t in virt.time_centered.values] == ["2015-01-16", "2015-02-16", "2015-03-16"]
    assert list(virt.time_counter.values) == [0.0, 0.0, 0.0]
    assert refs["vzarr"]["concat"]["order_by"] == "time_centered"
    verify_refs(out)

    # Append: the first two months, then the third, equal the whole build byte for byte; the
    # ordering variable is taken from the output, and another one is refused.
    _, part = build(tmp_path, paths[:2], "--concat-dim", "time_counter", "--order-by", "time_centered",
                    name="part.json")
    run_vzarr("build", paths[2], "--append", "-o", part)
    assert part.read_bytes() == out.read_bytes()
    e = run_vzarr("build", paths[2], "--append", "-o", part, "--concat-dim", "time_counter",
                  "--order-by", "time_counter", check=False)
    assert e.returncode != 0 and "ordered by variable \"time_centered\"" in e.stderr, e.stderr


def write_wrf_like(path, day, *, minutes_since):
    """A file as WRF writes one: dimension Time without a coordinate variable, XTIME (minutes
    since `minutes_since`) and a field along it; 4 six-hourly steps from `day`."""
    ds = netCDF4.Dataset(path, "w", format="NETCDF4")
    ds.createDimension("Time", None)
    ds.createDimension("south_north", 3)
    ds.createDimension("west_east", 4)
    x = ds.createVariable("XTIME", "f4", ("Time",))
    x.units = f"minutes since {minutes_since}"
    x.calendar = "standard"
    x.description = "minutes since simulation start"
    start = (np.datetime64(f"2020-01-{day:02d}") - np.datetime64(minutes_since[:10])).astype(int) * 1440
    x[:] = start + np.arange(4) * 360.0
    t2 = ds.createVariable("T2", "f4", ("Time", "south_north", "west_east"), chunksizes=(1, 3, 4))
    t2.units = "K"
    t2[:] = 273.0 + day + np.arange(48, dtype="f4").reshape(4, 3, 4) / 10
    ds.close()


def test_files_without_a_coordinate_are_ordered_by_a_time_variable(tmp_path):
    """WRF-like files (no Time coordinate; XTIME in units that differ per file) given in
    reverse order: without --order-by they are concatenated in the order given; with
    --order-by XTIME in time order, XTIME re-encoded into one units string; values equal
    xarray's concatenation of the sources in time order."""
    paths = []
    for day in (1, 2, 3):
        pth = tmp_path / f"wrfout_d01_2020-01-{day:02d}.nc"
        write_wrf_like(pth, day, minutes_since=f"2020-01-{day:02d} 00:00:00")
        paths.append(pth)
    _, out = build(tmp_path, paths[::-1], "--concat-dim", "Time", "--order-by", "XTIME")
    refs, _, virt = open_virtual(out)
    assert refs["vzarr"]["concat"]["order_by"] == "XTIME"
    want = expected_concat(paths, dim="Time")
    assert_matches_concat(virt, want)
    steps = virt.XTIME.values
    assert (np.diff(steps) == np.timedelta64(6, "h")).all(), steps
    verify_refs(out)
    # Without it XTIME is a variable like any other, and its units must agree.
    p, _ = build(tmp_path, paths[::-1], "--concat-dim", "Time", name="refused.json", check=False)
    assert p.returncode != 0 and "variable XTIME: attribute units differs" in p.stderr, p.stderr
    # With one simulation start (as WRF writes it) the order given is kept: days run backwards.
    for day, pth in zip((1, 2, 3), paths):
        write_wrf_like(pth, day, minutes_since="2020-01-01 00:00:00")
    _, out2 = build(tmp_path, paths[::-1], "--concat-dim", "Time", name="given.json")
    _, _, given = open_virtual(out2)
    assert [float(given.T2[k, 0, 0]) for k in (0, 4, 8)] == [276.0, 275.0, 274.0]
    _, out3 = build(tmp_path, paths[::-1], "--concat-dim", "Time", "--order-by", "XTIME", name="ordered.json")
    _, _, ordered = open_virtual(out3)
    assert_matches_concat(ordered, expected_concat(paths, dim="Time"))
