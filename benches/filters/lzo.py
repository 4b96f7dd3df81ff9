#!/usr/bin/env python3
"""PyTables' LZO filter (HDF5 filter 305) through vzarr and its peers (issue 31).

Usage: benches/filters/lzo.py VZARR_BINARY WORKDIR [--peers BENCH_PYTHON] [--runs N]

Run with a Python that has h5py, imagecodecs, zarr-python and the `vzarr` package (the interop
venv, .venv-interop). No HDF5 reader here decodes LZO (h5py and hdf5plugin have no LZO filter,
PyTables' wheels are built without it), so WORKDIR/lzo.h5 is written chunk by chunk: the
pipeline declares filter 305 as PyTables does, each chunk is LZO1X from vzarr's encoder (shuffled
first where the pipeline shuffles), three arrays of 32 MiB. Then, the minimum of N runs each:
- `vzarr build` of the file (references as JSON), its size;
- every array read through the references with zarr-python (the `vzarr.lzo` codec), and the
  same values read without vzarr: each stored chunk (h5py's read_direct_chunk) decoded by
  imagecodecs' LZO decoder (C++ lzokay), unshuffled with numpy; the values compared.
With --peers, kerchunk's SingleHdf5ToZarr and VirtualiZarr's HDFParser (the pins of
benches/compare/requirements.txt, in BENCH_PYTHON's venv) are tried on the same file.
"""

import json
import sys
from pathlib import Path

import h5py
import imagecodecs
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from blosc2 import main  # noqa: E402  (the same timing, comparison and peers)

ARRAYS = {
    "field_shuffle": (lambda r: (r.random((8, 1024, 1024)) * 40 + 250).round(2).astype("f4"), (1, 512, 1024), True),
    "stack": (lambda r: r.poisson(30, (64, 512, 512)).astype("i2"), (8, 256, 256), False),
    "series_shuffle": (lambda r: np.cumsum(r.normal(size=4 << 20)).round(3), (256 << 10,), True),
}
LZO = json.dumps({"name": "vzarr.lzo", "configuration": {}})


def write(src, arrays, rng):
    from vzarr._vzarr import encode_chunk

    with h5py.File(src, "w") as f:
        for name, (make, chunks, shuffle) in arrays.items():
            data = make(rng)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk(chunks)
            if shuffle:
                dcpl.set_shuffle()
            dcpl.set_filter(305, h5py.h5z.FLAG_OPTIONAL, (1, 23, 0))
            h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(data.dtype),
                            h5py.h5s.create_simple(data.shape), dcpl=dcpl)
            d = f[name]
            for offset in np.ndindex(*(n // c for n, c in zip(data.shape, chunks))):
                start = tuple(o * c for o, c in zip(offset, chunks))
                raw = data[tuple(slice(s, s + c) for s, c in zip(start, chunks))].tobytes()
                if shuffle:
                    raw = np.frombuffer(raw, "u1").reshape(-1, data.dtype.itemsize).T.tobytes()
                d.id.write_direct_chunk(start, encode_chunk(LZO, raw))


def without_vzarr(src, arrays):
    """Every array: each stored chunk decoded by imagecodecs' LZO, unshuffled with numpy."""
    out = {}
    with h5py.File(src) as f:
        for name, (_, chunks, shuffle) in arrays.items():
            d = f[name]
            a = np.empty(d.shape, d.dtype)
            size = int(np.prod(chunks)) * d.dtype.itemsize
            for i in range(d.id.get_num_chunks()):
                info = d.id.get_chunk_info(i)
                _, stored = d.id.read_direct_chunk(info.chunk_offset)
                raw = imagecodecs.lzo_decode(stored, header=False, out=size)
                if shuffle:
                    raw = np.frombuffer(raw, "u1").reshape(d.dtype.itemsize, -1).T.tobytes()
                sel = tuple(slice(o, o + c) for o, c in zip(info.chunk_offset, chunks))
                a[sel] = np.frombuffer(raw, d.dtype).reshape(chunks)
            out[name] = a
    return out


if __name__ == "__main__":
    main(ARRAYS, "lzo", "h5py chunks + imagecodecs' LZO", write, without_vzarr)
