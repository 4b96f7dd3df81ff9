"""Every dataset of every HDF5/NetCDF4 fixture, read through our references with zarr-python,
equals what h5py reads from the source (exactly, NaN-aware); refused datasets are reported and
absent; attributes match h5py's."""

import h5py
import hdf5plugin  # noqa: F401  (registers zstd/blosc/lz4 so h5py can read those fixtures)
import numpy as np
import pytest

from conftest import (
    FIXTURES,
    assert_values_equal,
    build_refs,
    good_fixtures,
    h5_values_as_read,
    inspect_json,
    normalise_attr,
    open_store,
)

import zarr

FIXTURE_LIST = good_fixtures()
DROPPED = {"DIMENSION_LIST", "_Netcdf4Dimid", "_Netcdf4Coordinates", "_nc3_strict", "_NCProperties"}
SCALE_ONLY = {"CLASS", "NAME", "REFERENCE_LIST"}


def h5_datasets(f: h5py.File) -> dict[str, h5py.Dataset]:
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            out[name] = obj

    f.visititems(visit)
    return out


def h5_attrs(obj) -> dict:
    is_scale = obj.attrs.get("CLASS", b"") in (b"DIMENSION_SCALE", "DIMENSION_SCALE")
    out = {}
    for name in obj.attrs:
        if name in DROPPED or (is_scale and name in SCALE_ONLY):
            continue
        try:
            v = obj.attrs[name]
        except (OSError, TypeError):
            continue  # types h5py cannot read either
        if isinstance(v, h5py.Empty):
            v = "" if v.dtype.kind in "SUO" else []
        elif isinstance(v, np.ndarray) and v.dtype.names is not None:
            continue  # compound attributes are left out
        elif hasattr(v, "dtype") and h5py.check_dtype(ref=v.dtype) is not None:
            continue
        else:
            tid = obj.attrs.get_id(name).get_type()
            if isinstance(tid, h5py.h5t.TypeStringID) and not tid.is_variable_str():
                if tid.get_strpad() == h5py.h5t.STR_SPACEPAD:
                    v = np.char.rstrip(np.asarray(v), b" ") if np.asarray(v).dtype.kind == "S" else v
        out[name] = normalise_attr(v)
    return out


def enum_flag_attrs(ds) -> dict:
    """The CF attributes vzarr adds to an enum dataset (not h5py's bool), from h5py's view of
    the enum: `flag_values` sorted, `flag_meanings` the names in that order."""
    mapping = h5py.check_enum_dtype(ds.dtype)
    if mapping is None or ds.dtype == bool or "flag_values" in ds.attrs or "flag_meanings" in ds.attrs:
        return {}
    items = sorted(mapping.items(), key=lambda kv: (kv[1], kv[0]))
    return {
        "flag_values": normalise_attr([int(v) for _, v in items]),
        "flag_meanings": " ".join("_".join(k.split()) for k, _ in items),
    }


@pytest.fixture(scope="module", params=[f["name"] for f in FIXTURE_LIST])
def fixture(request, tmp_path_factory):
    entry = next(f for f in FIXTURE_LIST if f["name"] == request.param)
    src = FIXTURES / entry["name"]
    out = tmp_path_factory.mktemp("refs") / (entry["name"] + ".json")
    refs = build_refs(src, out)
    return entry, src, zarr.open_group(open_store(refs), mode="r")


def test_every_dataset_matches_h5py(fixture):
    entry, src, group = fixture
    skipped = set(entry.get("expect_skipped", {}))
    not_arrays = set(entry.get("not_arrays", []))
    with h5py.File(src, "r") as f:
        datasets = h5_datasets(f)
        assert datasets, "fixture has no datasets"
        checked = 0
        for path, ds in datasets.items():
            present = path in group
            if path in skipped or path in not_arrays:
                assert not present, f"{path} should not be an array"
                continue
            assert present, f"{path} is missing from the virtual dataset"
            # Object references as the paths of their targets (h5py's names).
            expected = h5_values_as_read(ds)
            actual = group[path][...]
            assert_values_equal(expected, actual, f"{entry['name']}:{path}")
            checked += 1
        assert checked > 0


def test_skipped_are_reported_with_reasons(fixture):
    entry, src, _ = fixture
    report = inspect_json(src)
    got = {s["path"]: s["reason"] for s in report["skipped"] if "@" not in s["path"]}
    expected = entry.get("expect_skipped", {})
    assert set(got) == set(expected), f"skipped {sorted(got)} != expected {sorted(expected)}"
    for path, keyword in expected.items():
        assert keyword.lower() in got[path].lower(), f"{path}: reason {got[path]!r} lacks {keyword!r}"


def test_attributes_match_h5py(fixture):
    entry, src, group = fixture
    skipped = set(entry.get("expect_skipped", {})) | set(entry.get("not_arrays", []))
    with h5py.File(src, "r") as f:
        objects = {"": f}
        f.visititems(lambda name, obj: objects.__setitem__(name, obj))
        for path, obj in objects.items():
            if path in skipped:
                continue
            node = group if path == "" else group[path]
            want = h5_attrs(obj)
            if isinstance(obj, h5py.Dataset):
                want.update(enum_flag_attrs(obj))
                if h5py.check_ref_dtype(obj.dtype) is h5py.Reference:
                    # A dataset of object references is marked with the convention.
                    want["links_references"] = {"references": True}
                    want["zarr_conventions"] = [{
                        "uuid": "93624424-4c95-4eda-b86a-f1880206739f",
                        "spec_url": "https://github.com/catalystneuro/zarr-links-references"
                                    "/blob/main/README.md",
                        "name": "links_references",
                        "description": "Links and object references between nodes of Zarr "
                                       "hierarchies"}]
            got = dict(node.attrs)
            if "_FillValue" in want:
                # Encoded for xarray's Zarr v3 backend; checked by the xarray tests.
                assert "_FillValue" in got, f"{path}: _FillValue missing"
                want.pop("_FillValue")
                got.pop("_FillValue")
            assert got == want, f"{entry['name']}:{path or '/'} attributes differ"


def test_split_contiguous_reads_the_same(fixture, tmp_path):
    entry, src, _ = fixture
    refs = build_refs(src, tmp_path / "split.json", "--split-contiguous", "1KiB")
    group = zarr.open_group(open_store(refs), mode="r")
    skipped = set(entry.get("expect_skipped", {})) | set(entry.get("not_arrays", []))
    with h5py.File(src, "r") as f:
        for path, ds in h5_datasets(f).items():
            if path in skipped:
                continue
            assert_values_equal(h5_values_as_read(ds), group[path][...],
                                f"split {entry['name']}:{path}")
