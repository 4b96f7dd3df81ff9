"""kerchunk's own references of files, as its users make them: `SingleHdf5ToZarr` for HDF5
and NetCDF4, `NetCDF3ToZarr` for NetCDF3 (kerchunk's default `inline_threshold` of 100 bytes),
each file in a child forked from this process (kerchunk imported once), at most `--jobs` at a
time and `--timeout` seconds each: kerchunk 0.2.10 with zarr 3.4 rewrites its group's
consolidated metadata for every array it adds, so files with thousands of arrays (NWB,
PyTables test files) take minutes, and some never finish.

Results go into CACHE (a file's references are a pure function of its bytes and kerchunk's
version): `<sha256>.json` (the references) or `<sha256>.failed` (why none were made). Files
whose result is there already are not run again.

Usage: python kerchunk_corpus.py CACHE --timeout S --jobs N FILE...
"""

import argparse
import hashlib
import json
import multiprocessing
import os
import sys
import time
import warnings
from pathlib import Path


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def translate(src: str, out: str) -> None:
    """kerchunk's references of `src`, written to `out` (through a temporary name)."""
    warnings.filterwarnings("ignore")
    from kerchunk.hdf import SingleHdf5ToZarr
    from kerchunk.netCDF3 import NetCDF3ToZarr
    with open(src, "rb") as f:
        nc3 = f.read(3) == b"CDF"
    make = NetCDF3ToZarr if nc3 else SingleHdf5ToZarr
    try:
        refs = make(src, inline_threshold=100).translate()
    except Exception as e:  # noqa: BLE001  (kerchunk's own failure: recorded, not ours)
        Path(out).with_suffix(".failed").write_text(f"kerchunk failed: {type(e).__name__}: {e}")
        return
    with open(out + ".tmp", "w") as f:
        json.dump(refs, f)
    os.replace(out + ".tmp", out)


def failed(cache: Path, key: str, why: str) -> None:
    (cache / f"{key}.failed").write_text(why)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cache", type=Path)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--timeout", type=float, required=True)
    ap.add_argument("--jobs", type=int, required=True)
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    # kerchunk imported before any child is forked (no thread runs yet), so each child
    # starts translating at once.
    import kerchunk.hdf  # noqa: F401
    import kerchunk.netCDF3  # noqa: F401
    ctx = multiprocessing.get_context("fork")
    todo = [(p, sha256(p)) for p in args.files]
    running = []
    while todo or running:
        while todo and len(running) < args.jobs:
            src, key = todo.pop(0)
            out = args.cache / f"{key}.json"
            if out.exists() or (args.cache / f"{key}.failed").exists():
                continue
            child = ctx.Process(target=translate, args=(str(src), str(out)))
            child.start()
            running.append((child, key, out, time.monotonic()))
        time.sleep(0.01)
        for entry in list(running):
            child, key, out, started = entry
            if not child.is_alive():
                child.join()
                running.remove(entry)
                if not out.exists() and not out.with_suffix(".failed").exists():
                    failed(args.cache, key, f"kerchunk failed (exit status {child.exitcode})")
            elif time.monotonic() - started > args.timeout:
                child.kill()
                child.join()
                running.remove(entry)
                failed(args.cache, key, f"kerchunk took more than {args.timeout:g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
