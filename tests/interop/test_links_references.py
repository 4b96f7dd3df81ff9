"""HDF5 object references and links (issue 43 item 2), through `vzarr build` and the parser,
read with zarr-python and compared with h5py (the paths of the targets h5py names, the links
h5py's `getlink` gives) and with VirtualiZarr 2.8's HDFParser(links_and_references=True).

vzarr build reads object references by default (datasets, compound members, attributes) and
records links with --record-links; the parser does both with links_and_references=True, as
VirtualiZarr's does, and raises NotImplementedError for references without it."""

import json
from pathlib import Path, PurePosixPath

import h5py
import numpy as np
import pytest
import zarr

from conftest import (
    assert_values_equal,
    build_refs,
    h5_values_as_read,
    open_store,
    real_files_dir,
    reference_path,
)

LINKS_REFERENCES = "93624424-4c95-4eda-b86a-f1880206739f"
REF = "d89b30cf-ed8c-43d5-9a16-b492f0cd8786"


def references_file(d: Path) -> Path:
    p = d / "refs.h5"
    with h5py.File(p, "w") as f:
        f["values"] = np.arange(3.0)
        table = f.create_group("general/extracellular_ephys/electrodes")
        probe = f.create_group("devices/probe")
        table.create_dataset(
            "group", data=[probe.ref] * 5 + [h5py.Reference(), f["values"].ref],
            dtype=h5py.ref_dtype, chunks=(3,), compression="gzip")
        f.create_dataset("scalar", data=f["values"].ref, dtype=h5py.ref_dtype)
        f.create_dataset("grid", data=np.array([[f["values"].ref, probe.ref]] * 2),
                         dtype=h5py.ref_dtype)
        f["values"].attrs["table"] = table.ref
        f["values"].attrs["many"] = np.array([table.ref, f["values"].ref, h5py.Reference()],
                                             dtype=h5py.ref_dtype)
        f["values"].attrs["units"] = "volts"
        probe.attrs["source"] = f["values"].ref
        rows = np.dtype([("idx_start", "<i4"), ("label", h5py.string_dtype()),
                         ("timeseries", h5py.ref_dtype)])
        f.create_dataset("rows", chunks=(2,), data=np.array(
            [(0, "é one", f["values"].ref), (3, "two", h5py.Reference()),
             (5, "", probe.ref)], dtype=rows))
    return p


def links_file(d: Path) -> Path:
    with h5py.File(d / "other.h5", "w") as other:
        other["acquisition/raw"] = np.arange(4)
    p = d / "links.h5"
    with h5py.File(p, "w") as f:
        f["values"] = np.arange(3.0)
        f.create_group("general/devices/probe")
        g = f.create_group("general/extracellular_ephys/g")
        g["device"] = h5py.SoftLink("/general/devices/probe")
        g["data"] = h5py.SoftLink("/values")
        g.create_group("child")["inner"] = np.arange(2)
        g["inner_alias"] = h5py.SoftLink("child/inner")
        g["dangling"] = h5py.SoftLink("/nowhere")
        f["raw"] = h5py.ExternalLink("other.h5", "/acquisition/raw")
        f["values_again"] = f["values"]
        f["probe_again"] = f["general/devices/probe"]
    return p


def h5_attribute(obj, value):
    """An attribute as vzarr writes it where it holds object references: ref objects."""
    path = reference_path(obj)
    if isinstance(value, h5py.Reference):
        return {"ref": {"node": path(value)}} if value else None
    return np.vectorize(lambda r: {"ref": {"node": path(r)}} if r else None,
                        otypes=[object])(value).tolist()


def h5_links(f) -> dict:
    """Each group's links as the convention records them, from h5py: soft links (absolute
    ones relative to the group), external links, and hard links to an object already met
    (h5py's iteration order, depth first) as a link to its first name."""
    first, out = {}, {}

    def walk(g):
        first.setdefault(h5py.h5o.get_info(g.id).addr, g.name)
        links = {}
        for key in g.keys():
            link = g.get(key, getlink=True)
            if isinstance(link, h5py.SoftLink):
                node = (str(PurePosixPath(link.path).relative_to(g.name, walk_up=True))
                        if link.path.startswith("/") else link.path)
                links[key] = {"ref": {"node": node}}
                continue
            if isinstance(link, h5py.ExternalLink):
                uri = Path(f.filename).parent.joinpath(link.filename).resolve().as_uri()
                links[key] = {"ref": {"uri": uri, "node": link.path}}
                continue
            item = g[key]
            addr = h5py.h5o.get_info(item.id).addr
            if addr in first:
                node = str(PurePosixPath(first[addr]).relative_to(g.name, walk_up=True))
                links[key] = {"ref": {"node": node}}
                continue
            first[addr] = item.name
            if isinstance(item, h5py.Group):
                walk(item)
        if links:
            out[g.name.strip("/")] = links

    walk(f)
    return out


def conventions(attrs) -> set:
    return {c["uuid"] for c in attrs.get("zarr_conventions", [])}


def test_object_references_read_as_the_paths_h5py_names(tmp_path):
    src = references_file(tmp_path)
    refs = build_refs(src, tmp_path / "refs.json")
    root = zarr.open_group(open_store(refs), mode="r")
    with h5py.File(src, "r") as f:
        arrays = {}
        f.visititems(lambda n, o: arrays.__setitem__(n, o)
                     if isinstance(o, h5py.Dataset) else None)
        for name, ds in arrays.items():
            assert_values_equal(h5_values_as_read(ds), root[name][...], name)
        # Datasets of references: strings, "" for a null one, marked with the convention.
        for name in ("general/extracellular_ephys/electrodes/group", "scalar", "grid"):
            a = root[name]
            assert a.attrs["links_references"] == {"references": True}, name
            assert conventions(a.attrs) == {LINKS_REFERENCES}, name
            assert a.metadata.fill_value == ""
        assert root["general/extracellular_ephys/electrodes/group"][...].tolist()[:6] == [
            "../../../../devices/probe"] * 5 + [""]
        # A compound's reference member: a string field; the array names it.
        assert root["rows"].attrs["links_references"] == {"references": ["timeseries"]}
        # Attributes: ref objects, null for a null reference, nested as stored.
        for obj, key in ((f["values"], "values"), (f["devices/probe"], "devices/probe")):
            node = root[key]
            for k, v in obj.attrs.items():
                if isinstance(v, h5py.Reference) or (isinstance(v, np.ndarray)
                                                     and v.dtype.kind == "O"):
                    assert node.attrs[k] == h5_attribute(obj, v), (key, k)
            assert REF in conventions(node.attrs), key
        assert root["values"].attrs["many"][1] == {"ref": {"node": "."}}
        assert root["values"].attrs["units"] == "volts"
    # Left out, each named, with --no-object-references.
    out = tmp_path / "without.json"
    from conftest import run_vzarr
    r = run_vzarr("build", src, "-o", out, "--no-object-references")
    got = json.loads(out.read_text())["refs"]
    assert "grid/zarr.json" not in got and "rows/zarr.json" not in got
    assert "grid: object references: read as the paths" in r.stderr
    assert "values@table: attribute left out" in r.stderr


def test_links_are_recorded_as_h5py_sees_them(tmp_path):
    src = links_file(tmp_path)
    # By default, as h5py's item access shows the file: a soft link's target read again.
    refs = build_refs(src, tmp_path / "follow.json")
    root = zarr.open_group(open_store(refs), mode="r")
    np.testing.assert_array_equal(root["general/extracellular_ephys/g/data"][...], np.arange(3.0))
    assert "links_references" not in root.attrs
    # Recorded: no copies, each group's links in its attributes.
    refs = build_refs(src, tmp_path / "record.json", "--record-links")
    root = zarr.open_group(open_store(refs), mode="r")
    with h5py.File(src, "r") as f:
        expected = h5_links(f)
    assert expected[""].keys() == {"raw", "values_again", "probe_again"}
    for path, links in expected.items():
        node = root if path == "" else root[path]
        assert node.attrs["links_references"] == {"links": links}, path
        assert conventions(node.attrs) == {LINKS_REFERENCES, REF}, path
        for name in links:
            assert name not in node, (path, name)
    assert sorted(k for k, _ in root.arrays()) == ["values"]
    np.testing.assert_array_equal(root["general/extracellular_ephys/g/child/inner"][...],
                                  np.arange(2))


def _registry():
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    return ObjectStoreRegistry({"file://": LocalStore()})


def _tree(group, prefix=""):
    out = {prefix or "/": dict(group.metadata.attributes)}
    for k, a in group.arrays.items():
        m = a.metadata
        out[f"{prefix}/{k}"] = (m.chunks, str(m.data_type), m.fill_value, dict(m.attributes))
    for k, g in group.groups.items():
        out.update(_tree(g, f"{prefix}/{k}"))
    return out


def _members(g, prefix=""):
    for k, v in g.members():
        if isinstance(v, zarr.Array):
            yield f"{prefix}{k}", v
        else:
            yield from _members(v, f"{prefix}{k}/")


@pytest.mark.parametrize("make", [references_file, links_file])
def test_the_parser_gives_what_virtualizarrs_gives(tmp_path, make):
    from virtualizarr.parsers import HDFParser
    import vzarr.virtualizarr

    url = make(tmp_path).as_uri()
    theirs = HDFParser(links_and_references=True)(url, _registry())
    ours = vzarr.virtualizarr.HDFParser(links_and_references=True)(url, _registry())
    # The same groups, arrays, chunk shapes, data types, fill values and attributes.
    assert _tree(ours._group) == _tree(theirs._group)
    a = zarr.open_group(theirs, mode="r", zarr_format=3)
    b = zarr.open_group(ours, mode="r", zarr_format=3)
    names = [k for k, _ in _members(a)]
    assert names and names == [k for k, _ in _members(b)]
    for k in names:
        x, y = np.asarray(a[k][...]), np.asarray(b[k][...])
        assert x.dtype == y.dtype and x.tolist() == y.tolist(), k
    # drop_variables applies to the recorded links as well.
    if make is links_file:
        group = vzarr.virtualizarr.HDFParser(links_and_references=True,
                                            drop_variables=["raw"])(url, _registry())._group
        assert "raw" not in group.metadata.attributes["links_references"]["links"]


def test_without_the_flag_references_raise_as_virtualizarrs_do(tmp_path):
    from virtualizarr.parsers import HDFParser
    import vzarr.virtualizarr

    url = references_file(tmp_path).as_uri()
    for parser in (HDFParser(), vzarr.virtualizarr.HDFParser()):
        with pytest.raises(NotImplementedError, match="links_and_references=True"):
            parser(url, _registry())
    # Region references raise either way, without suggesting the flag.
    p = tmp_path / "region.h5"
    with h5py.File(p, "w") as f:
        f["values"] = np.arange(3.0)
        f.create_dataset("regions", data=[f["values"].regionref[0:2]],
                         dtype=h5py.regionref_dtype)
    for flag in (False, True):
        with pytest.raises(NotImplementedError) as e:
            vzarr.virtualizarr.HDFParser(links_and_references=flag)(p.as_uri(), _registry())
        assert "links_and_references" not in str(e.value)


# The corpus files (scripts/real-files) with object references: MATLAB 7.3 cell arrays, NWB
# tables, pyfive's and PyTables' test files.
REAL_WITH_REFERENCES = [
    "pyfive-1.3.0/pyfive-1.3.0/tests/data/Data_20230106_01_014.mat",
    "pyfive-1.3.0/pyfive-1.3.0/tests/data/references.hdf5",
    "pynwb-4.2.0/pynwb-4.2.0/tests/back_compat/3.0.0_electrodes_dynamic_table.nwb",
    "pynwb-4.2.0/pynwb-4.2.0/tests/back_compat/3.0.0_fiber_photometry_extension.nwb",
    "pynwb-4.2.0/pynwb-4.2.0/tests/back_compat/3.0.0_optogenetics_extension.nwb",
    "tables-3.11.1/tables-3.11.1/tables/tests/test_ref_array1.mat",
    "tables-3.11.1/tables-3.11.1/tables/tests/test_ref_array2.mat",
]


def test_real_files_references_and_links_read_as_h5py_names_them(tmp_path):
    root_dir = real_files_dir()
    datasets = attributes = 0
    for i, rel in enumerate(REAL_WITH_REFERENCES):
        src = root_dir / rel
        refs = build_refs(src, tmp_path / f"{i}.json", "--record-links")
        root = zarr.open_group(open_store(refs), mode="r")
        with h5py.File(src, "r") as f:
            def visit(name, obj):
                nonlocal datasets, attributes
                if isinstance(obj, h5py.Dataset) and \
                        h5py.check_ref_dtype(obj.dtype) is h5py.Reference:
                    assert_values_equal(h5_values_as_read(obj), root[name][...], f"{rel}:{name}")
                    datasets += 1
                for k in obj.attrs:
                    t = obj.attrs.get_id(k).dtype
                    if k in ("DIMENSION_LIST", "REFERENCE_LIST") or \
                            h5py.check_ref_dtype(t) is not h5py.Reference or name not in root:
                        continue
                    assert root[name].attrs[k] == h5_attribute(obj, obj.attrs[k]), (rel, name, k)
                    attributes += 1

            f.visititems(visit)
            for path, links in h5_links(f).items():
                node = root if path == "" else root[path]
                assert node.attrs["links_references"] == {"links": links}, (rel, path)
    # Every reference dataset of these files (h5py finds 280) and attribute (5), read.
    assert datasets == 280 and attributes >= 4, (datasets, attributes)



def test_vzarr_verify_checks_the_paths_with_libhdf5(tmp_path):
    """`vzarr verify --readers c` compares each path with the name libhdf5 gives the target
    (H5Rget_name); a reference that names another target is a mismatch."""
    from conftest import run_vzarr
    import base64

    src = references_file(tmp_path)
    out = tmp_path / "refs.json"
    refs = build_refs(src, out, "--small-chunks", "keep")
    p = run_vzarr("verify", out, "--trust-references", "--readers", "c")
    # (The compound with a string member is named as skipped, as every such compound is.)
    skipped = [l for l in p.stdout.splitlines() if l.startswith("skipped ")]
    assert "all values match" in p.stdout and skipped == [
        l for l in skipped if l.startswith("skipped rows: a compound")], p.stdout
    # vzarr's own readers name the arrays they cannot check.
    p = run_vzarr("verify", out, "--trust-references", "--readers", "native")
    assert "skipped grid: object references" in p.stdout, p.stdout
    # One path changed: libhdf5 tells.
    key = "general/extracellular_ephys/electrodes/group/c/0"
    raw = base64.b64decode(refs["refs"][key].removeprefix("base64:"))
    wrong = raw.replace(b"devices/probe", b"devices/prob_")
    refs["refs"][key] = "base64:" + base64.b64encode(wrong).decode()
    out.write_text(json.dumps(refs))
    p = run_vzarr("verify", out, "--trust-references", "--readers", "c", check=False)
    assert p.returncode != 0 and "general/extracellular_ephys/electrodes/group" in p.stdout, (
        p.stdout + p.stderr)
