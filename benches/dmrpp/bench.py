"""DMR++ sidecars read by vzarr's VirtualiZarr parser and by VirtualiZarr 2.8's own
`DMRPPParser` (issue 53), on OPeNDAP bes's sidecars that sit beside their granules
(`../shared/dmrpp`): each parser turns each sidecar into a ManifestStore, every array is read
through it with zarr-python and compared with what an independent reader reads from the
granule (h5py for HDF5, pyhdf for HDF4). Counted per parser:

- sidecars parsed, and refused (the parser raised);
- arrays read equal to the granule's (as the interop tests compare: exact, text as text, the
  same kind and size of type); equal values in another type; arrays read WRONG (no error,
  other values or shape);
  arrays whose read raised; arrays no reader of the granule names (not compared);
- time to parse every sidecar (the parse only; median of --runs), and the time to parse the
  NASA products' sidecars (ICESat-2 ATL08: 2.2 MB, AIRS, MERRA-2, TEMPO), whose granules are
  not in the test data (vzarr records a granule's size and time: an empty file stands in).

The three sidecars that do not describe their granule (tests/interop/dmrpp_values.py,
NOT_THEIR_GRANULE) are left out of the counts.

    python bench.py [--runs N] [--work DIR]

Started by benches/dmrpp/run. Prints a Markdown table and writes DIR/results.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "interop"))

from conftest import assert_values_equal  # noqa: E402
from dmrpp_values import (DMRPP_DIR, NOT_THEIR_GRANULE, h5_path, hdf4_values,  # noqa: E402
                          pairs, undefined)


def sidecars():
    """(name in bes, sidecar, granule, kind) of the bes sidecars beside their granules."""
    return [(name, sidecar, granule, kind)
            for kind in ("hdf5", "hdf4")
            for name, sidecar, granule in pairs(kind=kind)
            if name not in NOT_THEIR_GRANULE]


def parsers():
    from virtualizarr.parsers import DMRPPParser

    import vzarr.virtualizarr

    return {"vzarr": vzarr.virtualizarr.Parser(), "VirtualiZarr DMRPPParser": DMRPPParser()}


def registry():
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    return ObjectStoreRegistry({"file://": LocalStore()})


def arrays(store):
    import zarr

    group = zarr.open_group(store, mode="r", zarr_format=3)
    return [(name, a) for name, a in group.members(max_depth=None) if isinstance(a, zarr.Array)]


def reference(kind, granule, path, arr):
    """What the granule's own reader reads for `arr`, or None where it names no such array
    (or its values are undefined: unwritten chunks of a dataset whose fill time is never)."""
    if kind == "hdf4":
        try:
            return hdf4_values(granule, arr)
        except Exception:  # noqa: BLE001 - no SDS or vdata of that name or reference
            return None
    import h5py

    with h5py.File(granule, "r") as f:
        h5 = h5_path(f, path, dict(arr.attrs))
        if h5 is None or not isinstance(f[h5], h5py.Dataset) or undefined(f[h5]):
            return None
        if h5py.check_vlen_dtype(f[h5].dtype) not in (None, str, bytes):
            return None  # variable-length sequences: Hyrax flattens them (dmrpp:missingdata)
        return f[h5][()]


def verdict(want, got):
    """"equal" (as the interop tests compare: exact, NaN equal to NaN, text as text, the same
    kind and size of type), "type" (equal values in another type), or "wrong"."""
    try:
        assert_values_equal(want, got, "")
        return "equal"
    except AssertionError:
        pass
    want, got = np.asarray(want), np.asarray(got)
    try:
        if want.shape == got.shape and np.array_equal(want.astype(got.dtype), got,
                                                      equal_nan=got.dtype.kind in "fc"):
            return "type"
    except (TypeError, ValueError):
        pass
    return "wrong"


def check(name, parser, reg, pairs):
    counts = {"parsed": 0, "refused": 0, "equal": 0, "other type": 0, "wrong": 0, "raised": 0,
              "not compared": 0}
    wrong, refused = [], []
    for sidecar, path, granule, kind in pairs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                store = parser(path.as_uri(), reg)
                members = arrays(store)
            except Exception as e:  # noqa: BLE001 - a parser may fail any way
                counts["refused"] += 1
                refused.append(f"{sidecar}: {type(e).__name__}: {str(e)[:120]}")
                continue
        counts["parsed"] += 1
        for p, arr in members:
            want = reference(kind, granule, p, arr)
            if want is None:
                counts["not compared"] += 1
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = arr[...]
            except Exception:  # noqa: BLE001
                counts["raised"] += 1
                continue
            v = verdict(want, got)
            if v == "equal":
                counts["equal"] += 1
            elif v == "type":
                counts["other type"] += 1
                wrong.append(f"{sidecar}:{p} (values equal, type {got.dtype} not {want.dtype})")
            else:
                counts["wrong"] += 1
                wrong.append(f"{sidecar}:{p}")
    return counts, wrong, refused


def parse_time(parser, reg, paths, runs):
    """Median seconds to parse every one of `paths`, and how many the parser refused."""
    times, refused = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        refused = 0
        for p in paths:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    parser(p.as_uri(), reg)
                except Exception:  # noqa: BLE001 - refused sidecars count their time too
                    refused += 1
        times.append(time.perf_counter() - t0)
    return statistics.median(times), refused


def nasa_sidecars(work):
    """The NASA products' sidecars (one of each name) copied into `work`, each beside an
    empty stand-in granule."""
    out, seen = [], set()
    for s in sorted(DMRPP_DIR.rglob("*.dmrpp")):
        if not s.name.lower().startswith(("atl08", "airs", "merra2", "tempo")) or s.name in seen:
            continue
        seen.add(s.name)
        dst = work / s.name
        dst.write_bytes(s.read_bytes())
        (work / s.name.removesuffix(".dmrpp")).write_bytes(b"")
        out.append(dst)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", type=Path, default=ROOT / "out" / "bench" / "dmrpp")
    args = ap.parse_args()
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    pairs = sidecars()
    reg = registry()
    nasa = nasa_sidecars(args.work)
    results = {}
    for name, parser in parsers().items():
        counts, wrong, refused = check(name, parser, reg, pairs)
        results[name] = {
            **counts,
            "parse all (s)": parse_time(parser, reg, [p for _, p, _, _ in pairs], args.runs)[0],
            **dict(zip(["parse NASA (s)", "NASA refused"], parse_time(parser, reg, nasa,
                                                                      args.runs))),
            "wrong arrays": wrong,
            "refused sidecars": refused,
        }
    hdf4 = sum(1 for p in pairs if p[3] == "hdf4")
    print(f"{len(pairs)} bes sidecars beside their granules ({len(pairs) - hdf4} HDF5, {hdf4} "
          f"HDF4); {len(nasa)} NASA sidecars ({', '.join(p.name for p in nasa)}: "
          f"{sum(p.stat().st_size for p in nasa) / 1e6:.1f} MB)\n")
    cols = ["parsed", "refused", "equal", "other type", "wrong", "raised", "not compared",
            "parse all (s)", "parse NASA (s)", "NASA refused"]
    print("| parser | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for name, r in results.items():
        cells = [f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]) for c in cols]
        print(f"| {name} | " + " | ".join(cells) + " |")
    for name, r in results.items():
        print(f"\n{name}: {len(r['wrong arrays'])} arrays read wrong or in another type:")
        for w in r["wrong arrays"]:
            print(f"  {w}")
        print(f"{name}: {len(r['refused sidecars'])} sidecars refused:")
        for w in r["refused sidecars"]:
            print(f"  {w}")
    (args.work / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
