"""The synthetic catalog of benches/icechunk: FILES HDF5 files of CHUNKS one-byte chunks each.

    python gen_catalog.py DIR [--files 100] [--chunks 100000]

Each file holds one int8 dataset `v` of CHUNKS values in chunks of one value (libver
"latest", so HDF5 indexes the chunks with a fixed array: about 8 bytes a chunk), no
filters, no timestamps; the values come from a generator seeded with the file's number, so
a second run writes the same files. 100 x 100,000 chunks: 10M chunks in about 90 MB of
files (9 bytes a chunk). Regenerated only when the parameters (or this generator's version) change: a stamp
file in DIR records them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import h5py
import numpy as np

VERSION = 1
STAMP = ".generated.json"


def write_file(path: str, k: int, chunks: int) -> None:
    rng = np.random.default_rng(k)
    data = rng.integers(-128, 128, size=chunks, dtype=np.int8)
    tmp = path + ".tmp"
    with h5py.File(tmp, "w", libver="latest", track_order=False) as f:
        f.create_dataset("v", data=data, chunks=(1,), track_times=False)
    os.replace(tmp, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    out = Path(a.dir).resolve()
    want = {"version": VERSION, "files": a.files, "chunks": a.chunks}
    stamp = out / STAMP
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return 0
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    paths = [str(out / f"member_{k:03d}.h5") for k in range(a.files)]
    with ProcessPoolExecutor(a.jobs) as ex:
        list(ex.map(write_file, paths, range(a.files), [a.chunks] * a.files))
    stamp.write_text(json.dumps(want))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
