"""DMR++ sidecars as vzarr's input (GitHub issue 53): each DMR++ file of OPeNDAP's bes repository
whose HDF5 granule is present (`../shared/dmrpp`, or VZARR_DMRPP_DIR) is built with
``vzarr build <granule>.dmrpp`` (``--data-url`` naming granules not beside their sidecars),
never reading the granule's data, and every array read back
through zarr-python equals what h5py reads from the granule. The sidecars that do not describe
their granule (one stale, one without byte orders for big-endian data, one of a granule that
contradicts itself) must read differently or fail, and nothing else."""

import json
import os
from pathlib import Path

import h5py
import numpy as np
import zarr

from conftest import ROOT, assert_values_equal, open_store, run_vzarr

DMRPP_DIR = Path(os.environ.get("VZARR_DMRPP_DIR", ROOT.parent / "shared" / "dmrpp"))

# Sidecars whose values cannot be those of their granule (see crates/vzarr-dmrpp/tests/bes.rs).
NOT_THEIR_GRANULE = {
    "modules/dmrpp_module/data/dmrpp/FletcherShuffle.nc4.dmrpp",  # every offset 40 bytes off
    "modules/dmrpp_module/data/dmrpp/ntypes.h5.dmrpp",  # no byte order; big-endian data
    "modules/fileout_netcdf/data/swath_wrong_dim_rp.nc.dmrpp",  # dimension 8, data 4
}


def pairs(beside_only=True):
    """(sidecar's name in bes, sidecar, granule) of the bes pairs whose granule is HDF5 and
    sits beside the sidecar under the sidecar's name without `.dmrpp` (or, unless
    `beside_only`, anywhere in bes: 37 pairs)."""
    out = []
    for line in (DMRPP_DIR / "bes_pairs.tsv").read_text().splitlines():
        cols = line.split("\t")
        if len(cols) != 5 or cols[4] != "present":
            continue
        if beside_only and cols[0] != cols[2] + ".dmrpp":
            continue
        granule = DMRPP_DIR / "bes" / cols[2]
        with open(granule, "rb") as f:
            if f.read(8) == b"\x89HDF\r\n\x1a\n":
                out.append((cols[0], DMRPP_DIR / "bes" / cols[0], granule))
    return out


def h5_path(f, path, attrs):
    """The h5py path of an array of the output: its source name where it was renamed, the
    hidden name netCDF-4 gives a variable named as a dimension it does not hold, or the path
    its `fullnamepath` attribute gives (Hyrax's flattened CF names: `g1_x` for `/g1/x`)."""
    parts = path.split("/")
    name = attrs.get("vzarr:original_name", parts[-1])
    full = attrs.get("fullnamepath")
    full = full[0] if isinstance(full, list) and full else full
    for cand in ("/".join(parts[:-1] + ["_nc4_non_coord_" + name]), "/".join(parts[:-1] + [name]),
                 full if isinstance(full, str) else None):
        if cand and cand in f:
            return cand
    return None


def undefined(ds):
    """Whether some of a dataset's values are undefined: chunks never written of a dataset whose
    fill time is "never" (libhdf5 then leaves the reader's buffer as it is: h5py reads zeros,
    the sidecar and vzarr the declared fill value)."""
    dcpl = ds.id.get_create_plist()
    if dcpl.get_fill_time() != h5py.h5d.FILL_TIME_NEVER or ds.chunks is None:
        return False
    total = int(np.prod([-(-n // c) for n, c in zip(ds.shape, ds.chunks)]))
    return ds.id.get_num_chunks() < total


def test_bes_sidecars_read_as_their_granules(tmp_path):
    found = pairs(beside_only=False)
    assert len(found) > 190, f"{len(found)} pairs under {DMRPP_DIR}"
    arrays, equal, differ, undefined_arrays = 0, 0, {}, 0
    for k, (sidecar, path, granule) in enumerate(found):
        out = tmp_path / f"{k}.json"
        # A granule elsewhere than beside its sidecar is named with --data-url.
        elsewhere = [] if path == Path(f"{granule}.dmrpp") else ["--data-url", granule]
        p = run_vzarr("build", path, "-o", out, *elsewhere, check=False)
        if p.returncode != 0:
            # bes's request files kept under a .dmrpp name: XML, not DMR++.
            assert "not a DMR++ document" in p.stderr or "no HDF5 signature" in p.stderr, (
                sidecar, p.stderr)
            continue
        refs = json.loads(out.read_text())
        group = zarr.open_group(open_store(refs), mode="r")
        with h5py.File(granule, "r") as f:
            for path in [k for k, v in refs["refs"].items() if k.endswith("zarr.json")
                         and json.loads(v)["node_type"] == "array"]:
                path = path[: -len("/zarr.json")]
                arr = group[path]
                h5 = h5_path(f, path, dict(arr.attrs))
                if h5 is None or not isinstance(f[h5], h5py.Dataset):
                    continue
                if undefined(f[h5]):
                    undefined_arrays += 1
                    continue
                arrays += 1
                try:
                    assert_values_equal(f[h5][()], arr[...], f"{sidecar}:{path}")
                    equal += 1
                except Exception as e:  # noqa: BLE001 - a wrong sidecar may fail any way
                    differ.setdefault(sidecar, []).append(f"{path}: {str(e)[:200]}")
    print(f"{len(found)} bes sidecars of HDF5 granules: {arrays} arrays read, "
          f"{equal} equal to h5py's; {undefined_arrays} with chunks of undefined values")
    for s, d in differ.items():
        print(f"{s}:\n    " + "\n    ".join(d))
    assert set(differ) <= NOT_THEIR_GRANULE, sorted(set(differ) - NOT_THEIR_GRANULE)
    assert "modules/dmrpp_module/data/dmrpp/FletcherShuffle.nc4.dmrpp" in differ
    assert equal > 200, equal


def test_a_sidecar_never_sends_the_reader_elsewhere(tmp_path):
    """A sidecar whose dmrpp:href names a file elsewhere on the machine is read as describing
    the granule beside it: the references point there, never at the named file."""
    src = DMRPP_DIR / "bes/modules/dmrpp_module/data/dmrpp/chunked_shufzip_twoD.h5"
    (tmp_path / "g.h5").write_bytes(src.read_bytes())
    xml = (src.parent / (src.name + ".dmrpp")).read_text()
    xml = xml.replace('dmrpp:href="data/dmrpp/chunked_shufzip_twoD.h5"', 'dmrpp:href="file:///etc/passwd"')
    assert "/etc/passwd" in xml
    (tmp_path / "g.h5.dmrpp").write_text(xml)
    out = tmp_path / "g.json"
    run_vzarr("build", tmp_path / "g.h5.dmrpp", "-o", out, "--small-chunks", "keep")
    text = out.read_text()
    assert "/etc/passwd" not in text and "g.h5" in text
    refs = json.loads(text)
    with h5py.File(src, "r") as f:
        got = zarr.open_group(open_store(refs), mode="r")["d_4_shufzip_chunks"][...]
        assert np.array_equal(f["d_4_shufzip_chunks"][()], got)


def test_virtualizarr_opens_sidecars_through_vzarrs_parser():
    """`open_virtual_dataset(<granule>.dmrpp, parser=vzarr.virtualizarr.Parser())` needs no
    option: the sidecar is recognised by its content. Its manifests equal those VirtualiZarr's
    own HDF parser (h5py) finds in the granule, entry by entry."""
    import warnings

    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    import vzarr.virtualizarr

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    compared = 0
    for sidecar, _, granule in pairs()[::4]:
        if sidecar in NOT_THEIR_GRANULE:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                theirs = open_virtual_dataset(granule.as_uri(), registry=registry, parser=HDFParser())
            except Exception:  # noqa: BLE001 - VirtualiZarr's parser refuses some files
                continue
            ours = open_virtual_dataset(f"{granule.as_uri()}.dmrpp", registry=registry,
                                        parser=vzarr.virtualizarr.Parser())
        for name, var in ours.variables.items():
            if name not in theirs.variables or not hasattr(var.data, "manifest"):
                continue
            other = theirs[name].data
            if not hasattr(other, "manifest"):
                continue
            assert var.shape == other.shape and var.dtype == other.dtype, (sidecar, name)
            mine = var.data.manifest.dict()
            if all(e["path"] == "__inlined__" for e in mine.values()):
                continue  # compact data: VirtualiZarr's HDF parser gives no entries for it
            assert mine == other.manifest.dict(), (sidecar, name)
            compared += 1
    assert compared > 20, compared
