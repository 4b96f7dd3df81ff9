#!/usr/bin/env python3
"""EUMETSAT's FCIDECOMP filter (HDF5 filter 32018, JPEG-LS through CharLS) through vzarr and
its peers (issue 31).

Usage: benches/filters/jpegls.py VZARR_BINARY WORKDIR [--peers BENCH_PYTHON] [--runs N]

Run with the interop venv's Python, as benches/filters/blosc2.py (whose timing this reuses):
WORKDIR/fcidecomp.h5 written with h5py + hdf5plugin's FciDecomp, three arrays shaped like
Meteosat Third Generation FCI products (12-bit radiances as uint16 in 2-D chunks, 8-bit
quality flags, a three-component stack of 3-D chunks); every array read with h5py +
hdf5plugin (CharLS) and through vzarr's references with zarr-python (`vzarr.jpegls`, the
pure-Rust pure_jpegls), the values compared; with --peers, kerchunk and VirtualiZarr tried.
"""

import sys
from pathlib import Path

import hdf5plugin
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from blosc2 import main  # noqa: E402


def radiance(r, shape):
    """A smooth 12-bit field with noise, as FCI's effective radiances."""
    y, x = np.meshgrid(np.linspace(0, 6, shape[-2]), np.linspace(0, 9, shape[-1]), indexing="ij")
    return (2000 + 1200 * np.sin(y) * np.cos(x) + r.normal(0, 12, shape)).clip(0, 4095).astype("u2")


FCI = hdf5plugin.FciDecomp()
ARRAYS = {
    "effective_radiance": (lambda r: radiance(r, (4096, 4096)), dict(chunks=(512, 4096), compression=FCI)),
    "pixel_quality": (lambda r: (r.random((4096, 4096)) < 0.02).astype("u1") * 3, dict(chunks=(512, 4096), compression=FCI)),
    "channels": (lambda r: np.stack([radiance(r, (1024, 1024)) for _ in range(3)]), dict(chunks=(3, 256, 1024), compression=FCI)),
}

if __name__ == "__main__":
    main(ARRAYS, "fcidecomp")
