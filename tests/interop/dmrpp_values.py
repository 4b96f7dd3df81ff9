"""Reading the test data of DMR++ sidecars (`../shared/dmrpp`, or VZARR_DMRPP_DIR: OPeNDAP
bes's sidecars and their granules) and what independent readers read from the granules: h5py
for HDF5, pyhdf (HDF4's own library) for HDF4. Shared by tests/interop/test_dmrpp.py and the
DMR++ benchmark (benches/dmrpp)."""

import os
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DMRPP_DIR = Path(os.environ.get("VZARR_DMRPP_DIR", ROOT.parent / "shared" / "dmrpp"))
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
HDF4_MAGIC = b"\x0e\x03\x13\x01"

# Sidecars whose values cannot be those of their granule (`vzarr check-dmrpp` finds them:
# crates/vzarr-verify/tests/sidecars.rs).
NOT_THEIR_GRANULE = {
    "modules/dmrpp_module/data/dmrpp/FletcherShuffle.nc4.dmrpp",  # every offset 40 bytes off
    "modules/dmrpp_module/data/dmrpp/ntypes.h5.dmrpp",  # no byte order; big-endian data
    "modules/fileout_netcdf/data/swath_wrong_dim_rp.nc.dmrpp",  # dimension 8, data 4
    # A hand-written sidecar of another file (`t_int_scalar.h5`, a scalar "011") that bes
    # keeps under the name of string_arrays/t_string_compact.h5.
    "modules/dmrpp_module/data/dmrpp/t_string_compact.h5.dmrpp",
}


def pairs(beside_only=True, kind="hdf5"):
    """(sidecar's name in bes, sidecar, granule) of the bes pairs whose granule is of `kind`
    ("hdf5" or "hdf4") and sits beside the sidecar under the sidecar's name without `.dmrpp`
    (or, unless `beside_only`, anywhere in bes: 37 more pairs), in bes_pairs.tsv's order."""
    magic = {"hdf5": HDF5_MAGIC, "hdf4": HDF4_MAGIC}[kind]
    out = []
    for line in (DMRPP_DIR / "bes_pairs.tsv").read_text().splitlines():
        cols = line.split("\t")
        if len(cols) != 5 or cols[4] != "present":
            continue
        if beside_only and cols[0] != cols[2] + ".dmrpp":
            continue
        granule = DMRPP_DIR / "bes" / cols[2]
        with open(granule, "rb") as f:
            if f.read(len(magic)) == magic:
                out.append((cols[0], DMRPP_DIR / "bes" / cols[0], granule))
    return out


#: Hyrax's `_mvs.h5` files (values it computed, which some chunks of six bes sidecars are in),
#: kept in the repository: the shared corpus holds the sidecars and granules, not these.
COMPANIONS = ROOT / "fixtures" / "dmrpp-companions"


def with_companions(into: Path):
    """The bes sidecars with chunks in their granule's `_mvs.h5` file whose granule (the file
    their `dmrpp:href` names, in their directory) is present, each copied into a directory of
    its own under `into` with the granule and that file: [(sidecar's name in bes, sidecar,
    granule, companion)]."""
    import re
    import shutil

    out = []
    bes = DMRPP_DIR / "bes"
    for sidecar in sorted(bes.rglob("*.dmrpp")):
        xml = sidecar.read_text(errors="replace")
        href = re.search(r'dmrpp:href="([^"]*)"', xml)
        if not href or "_mvs.h5\"" not in xml:
            continue
        granule = sidecar.parent / href.group(1).rsplit("/", 1)[-1]
        found = sorted(COMPANIONS.rglob(f"{granule.name}_mvs.h5"))
        if not granule.is_file() or not found:
            continue
        d = into / str(len(out))
        d.mkdir(parents=True)
        for f in (sidecar, granule, found[0]):
            shutil.copy(f, d / f.name)
        name = str(sidecar.relative_to(bes))
        out.append((name, d / sidecar.name, d / granule.name, d / found[0].name))
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



def hdf4_values(granule, arr):
    """What pyhdf (HDF4's C library) reads from `granule` for the array `arr` built from its
    sidecar: the SDS or vdata the sidecar names by reference (`dmr_sds_ref`, `dmr_vdata_ref`;
    names repeat in HDF-EOS2 files), else the SDS of the array's name."""
    import pyhdf.VS  # noqa: F401 - HDF.vstart needs the module loaded
    from pyhdf.HDF import HDF
    from pyhdf.SD import SD, SDC

    attrs = dict(arr.attrs)
    if "dmr_vdata_ref" in attrs:
        h = HDF(str(granule))
        vs = h.vstart()
        vd = vs.attach(int(attrs["dmr_vdata_ref"]))
        try:
            records = vd.read(vd.inquire()[0])
        finally:
            vd.detach()
            vs.end()
            h.close()
        if records and isinstance(records[0][0], str):
            # A char field: pyhdf gives text (its trailing NULs dropped).
            raw = "".join(r[0] for r in records).encode("latin-1")
            return np.frombuffer(raw.ljust(arr.size, b"\0"), dtype=arr.dtype).reshape(arr.shape)
        return np.array(records).astype(arr.dtype).reshape(arr.shape)
    sd = SD(str(granule), SDC.READ)
    try:
        if "dmr_sds_ref" in attrs:
            index = sd.reftoindex(int(attrs["dmr_sds_ref"]))
        else:
            index = sd.nametoindex(arr.path.split("/")[-1])
        return sd.select(index).get()
    finally:
        sd.end()
