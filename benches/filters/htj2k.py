#!/usr/bin/env python3
"""hdf5plugin's HTJ2K filter (HDF5 filter 32033, JPEG 2000 with HT code-blocks through
OpenJPH) through vzarr and its peers (issue 31).

Usage: benches/filters/htj2k.py VZARR_BINARY WORKDIR [--peers BENCH_PYTHON] [--runs N]

Run with the interop venv's Python, as benches/filters/blosc2.py (whose timing this reuses):
WORKDIR/htj2k.h5 written with h5py + hdf5plugin's Htj2k (lossless), three arrays shaped like
what the filter is for (a stack of 16-bit detector frames one chunk each, an RGB image in
tiles, a signed 16-bit field); every array read with h5py + hdf5plugin (OpenJPH) and through
vzarr's references with zarr-python (`vzarr.htj2k`, OpenJPH through imagecodecs), the values
compared; with --peers, kerchunk and VirtualiZarr tried. Then every stored chunk decoded by
vzarr's reader's decoder (OpenJPEG's, the openjp2 port) and by OpenJPH (imagecodecs), one
thread each.
"""

import json
import sys
from pathlib import Path

import h5py
import hdf5plugin
import imagecodecs
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from blosc2 import best, main  # noqa: E402


def frames(r):
    """Detector frames: a smooth background, Poisson noise and a few bright spots."""
    y, x = np.meshgrid(np.linspace(0, 4, 1024), np.linspace(0, 4, 1024), indexing="ij")
    base = 300 + 200 * np.exp(-((y - 2) ** 2 + (x - 2) ** 2))
    stack = r.poisson(base, (8, 1024, 1024))
    stack[:, r.integers(0, 1024, 40), r.integers(0, 1024, 40)] = 60000
    return stack.clip(0, 65535).astype("u2")


def rgb(r):
    y, x = np.meshgrid(np.linspace(0, 8, 2048), np.linspace(0, 8, 2048), indexing="ij")
    return np.stack([128 + 100 * np.sin(y + k) * np.cos(x) + r.normal(0, 3, y.shape) for k in range(3)],
                    axis=-1).clip(0, 255).astype("u1")


def field(r):
    y, x = np.meshgrid(np.linspace(0, 6, 2048), np.linspace(0, 9, 2048), indexing="ij")
    return (3000 * np.sin(y) * np.cos(x) + r.normal(0, 20, y.shape)).astype("i2")


HTJ2K = hdf5plugin.Htj2k()
ARRAYS = {
    "frames": (frames, dict(chunks=(1, 1024, 1024), compression=HTJ2K)),
    "rgb": (rgb, dict(chunks=(512, 512, 3), compression=HTJ2K)),
    "field": (field, dict(chunks=(512, 2048), compression=HTJ2K)),
}


def decoders(src, runs):
    """Every stored chunk decoded by vzarr's Rust decoder and by OpenJPH, one thread each."""
    from vzarr._vzarr import decode_chunk

    codec = json.dumps({"name": "vzarr.htj2k", "configuration": {"endian": "little"}})
    chunks = []
    with h5py.File(src) as f:
        for n in ARRAYS:
            d = f[n]
            size = int(np.prod(d.chunks)) * d.dtype.itemsize
            for i in range(d.id.get_num_chunks()):
                chunks.append((d.id.read_direct_chunk(d.id.get_chunk_info(i).chunk_offset)[1], size))
    t_rust, ours = best(runs, lambda: [decode_chunk(codec, c, s) for c, s in chunks])
    t_ojph, theirs = best(runs, lambda: [imagecodecs.htj2k_decode(c, planar=False).tobytes() for c, _ in chunks])
    assert ours == theirs
    print(f"{len(chunks)} chunks decoded: vzarr's reader (openjp2) {t_rust:.3f} s, OpenJPH "
          f"(imagecodecs) {t_ojph:.3f} s ({t_rust / t_ojph:.2f}x); bytes equal")


if __name__ == "__main__":
    main(ARRAYS, "htj2k")
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    decoders(Path(sys.argv[2]) / "htj2k.h5", runs)
