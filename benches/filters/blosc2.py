#!/usr/bin/env python3
"""HDF5-Blosc2 (filter 32026) through vzarr and its peers (issue 31).

Usage: benches/filters/blosc2.py VZARR_BINARY WORKDIR [--peers BENCH_PYTHON] [--runs N]

Run with a Python that has h5py, hdf5plugin, zarr-python and the `vzarr` package (the interop
venv, .venv-interop). Writes WORKDIR/blosc2.h5 with h5py + hdf5plugin: three arrays of 32 MiB,
each compressed differently (LZ4 with byte shuffle in 2-D B2ND chunks, zstd with bit shuffle
in 3-D B2ND chunks, BloscLZ in 1-D plain frames). Then, the minimum of N runs each:
- `vzarr build` of the file (references as JSON), its size;
- every array read with h5py + hdf5plugin (c-blosc2) and through the references with
  zarr-python (the `vzarr.blosc2` codec), the values compared.
With --peers, kerchunk's SingleHdf5ToZarr and VirtualiZarr's HDFParser (the pins of
benches/compare/requirements.txt, in BENCH_PYTHON's venv) are tried on the same file: how many
of its arrays each virtualises, and whether zarr-python reads them back equal.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import h5py
import hdf5plugin
import numpy as np
import zarr

B = hdf5plugin.Blosc2
ARRAYS = {
    "field_lz4_shuffle": (lambda r: (r.random((8, 1024, 1024)) * 40 + 250).astype("f4"),
                          dict(chunks=(1, 512, 1024), compression=B(cname="lz4", filters=B.SHUFFLE))),
    "stack_zstd_bitshuffle": (lambda r: r.poisson(30, (64, 512, 512)).astype("i2"),
                              dict(chunks=(8, 256, 256), compression=B(cname="zstd", clevel=5, filters=B.BITSHUFFLE))),
    "series_blosclz": (lambda r: np.cumsum(r.normal(size=4 << 20)),
                       dict(chunks=(256 << 10,), compression=B())),
}

PEERS = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
path, which = sys.argv[1], sys.argv[2]
out = {"arrays": 0, "error": None}
try:
    if which == "kerchunk":
        from kerchunk.hdf import SingleHdf5ToZarr
        refs = SingleHdf5ToZarr(path, inline_threshold=0).translate()
        out["arrays"] = sum(1 for k in refs["refs"] if k.endswith("/.zarray"))
    else:
        import os
        from obspec_utils.registry import ObjectStoreRegistry
        from obstore.store import LocalStore
        from virtualizarr import open_virtual_dataset
        from virtualizarr.parsers import HDFParser
        root = os.path.dirname(path)
        reg = ObjectStoreRegistry({f"file://{root}": LocalStore(prefix=root)})
        ds = open_virtual_dataset(url="file://" + path, registry=reg, parser=HDFParser())
        out["arrays"] = len(ds.data_vars)
        out["codecs"] = {n: [str(c) for c in v.data.metadata.codecs] for n, v in ds.data_vars.items()}
except Exception as e:  # noqa: BLE001  (what the peer says is the figure)
    out["error"] = f"{type(e).__name__}: {str(e)[:200]}"
print(json.dumps(out))
"""


def best(runs, f):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        value = f()
        times.append(time.perf_counter() - t)
    return min(times), value


def write_with_h5py(src, arrays, rng):
    """Each of `arrays` ((make, create_dataset keywords)) written by h5py + hdf5plugin."""
    with h5py.File(src, "w") as f:
        for name, (make, kw) in arrays.items():
            f.create_dataset(name, data=make(rng), **kw)


def read_with_h5py(src, arrays):
    with h5py.File(src) as f:
        return {n: f[n][...] for n in arrays}


def main(arrays=ARRAYS, stem="blosc2", reader="h5py + hdf5plugin", write=write_with_h5py,
         read=read_with_h5py):
    """Writes `arrays` into WORKDIR/`stem`.h5 (`write`) and times vzarr, the reference reader
    (`read`) and the peers on it (benches/filters/jpegls.py and lzo.py reuse it)."""
    vzarr, work = sys.argv[1], Path(sys.argv[2])
    peers = sys.argv[sys.argv.index("--peers") + 1] if "--peers" in sys.argv else None
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    work.mkdir(parents=True, exist_ok=True)
    src, refs = work / f"{stem}.h5", work / f"{stem}.json"
    write(src, arrays, np.random.default_rng(31))
    raw = sum(np.prod(s) * np.dtype(d).itemsize
              for s, d in ((f[n].shape, f[n].dtype) for f in [h5py.File(src)] for n in arrays))
    t_build, _ = best(runs, lambda: subprocess.run(
        [vzarr, "build", str(src), "-o", str(refs), "--small-chunks", "keep"], check=True, capture_output=True))

    def through_refs():
        g = zarr.open_group(zarr.storage.FsspecStore.from_url(
            "reference://", storage_options={"fo": str(refs), "remote_protocol": "file"}, read_only=True), mode="r")
        return {n: g[n][...] for n in arrays}

    t_h5, want = best(runs, lambda: read(src, arrays))
    t_zarr, got = best(runs, through_refs)
    equal = all(np.array_equal(got[n], want[n]) for n in arrays)
    print(f"file: {src.stat().st_size / 2**20:.1f} MiB on disk, {raw / 2**20:.0f} MiB of values, "
          f"{len(arrays)} arrays")
    print(f"vzarr build: {t_build:.3f} s, references {refs.stat().st_size / 1024:.1f} KiB, "
          f"{len(json.loads(refs.read_text())['refs'])} keys")
    print(f"read every array: {reader} {t_h5:.3f} s; zarr-python through vzarr's references "
          f"{t_zarr:.3f} s ({t_zarr / t_h5:.2f}x); values equal: {equal}")
    if peers:
        for which in ("kerchunk", "virtualizarr"):
            p = subprocess.run([peers, "-c", PEERS, str(src), which], capture_output=True, text=True)
            r = json.loads(p.stdout) if p.returncode == 0 else {"arrays": 0, "error": p.stderr[-300:]}
            print(f"{which}: {r['arrays']} of {len(arrays)} arrays virtualised"
                  + (f" ({r['error']})" if r["error"] else ""))
    if not equal:
        sys.exit(1)


if __name__ == "__main__":
    main()
