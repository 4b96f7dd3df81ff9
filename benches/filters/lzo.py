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
import subprocess
import sys
from pathlib import Path

import h5py
import imagecodecs
import numpy as np
import zarr

sys.path.insert(0, str(Path(__file__).parent))
from blosc2 import PEERS, best  # noqa: E402  (the same peers and timing)

ARRAYS = {
    "field_shuffle": (lambda r: (r.random((8, 1024, 1024)) * 40 + 250).round(2).astype("f4"), (1, 512, 1024), True),
    "stack": (lambda r: r.poisson(30, (64, 512, 512)).astype("i2"), (8, 256, 256), False),
    "series_shuffle": (lambda r: np.cumsum(r.normal(size=4 << 20)).round(3), (256 << 10,), True),
}
LZO = json.dumps({"name": "vzarr.lzo", "configuration": {}})


def write(src, rng):
    from vzarr._vzarr import encode_chunk

    with h5py.File(src, "w") as f:
        for name, (make, chunks, shuffle) in ARRAYS.items():
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


def without_vzarr(src):
    """Every array: each stored chunk decoded by imagecodecs' LZO, unshuffled with numpy."""
    out = {}
    with h5py.File(src) as f:
        for name, (_, chunks, shuffle) in ARRAYS.items():
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


def main():
    vzarr, work = sys.argv[1], Path(sys.argv[2])
    peers = sys.argv[sys.argv.index("--peers") + 1] if "--peers" in sys.argv else None
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3
    work.mkdir(parents=True, exist_ok=True)
    src, refs = work / "lzo.h5", work / "lzo.json"
    write(src, np.random.default_rng(31))
    t_build, _ = best(runs, lambda: subprocess.run(
        [vzarr, "build", str(src), "-o", str(refs), "--small-chunks", "keep"], check=True, capture_output=True))

    def through_refs():
        g = zarr.open_group(zarr.storage.FsspecStore.from_url(
            "reference://", storage_options={"fo": str(refs), "remote_protocol": "file"}, read_only=True), mode="r")
        return {n: g[n][...] for n in ARRAYS}

    t_direct, want = best(runs, lambda: without_vzarr(src))
    t_zarr, got = best(runs, through_refs)
    equal = all(np.array_equal(got[n], want[n]) for n in ARRAYS)
    raw = sum(a.nbytes for a in want.values())
    print(f"file: {src.stat().st_size / 2**20:.1f} MiB on disk, {raw / 2**20:.0f} MiB of values, "
          f"{len(ARRAYS)} arrays")
    print(f"vzarr build: {t_build:.3f} s, references {refs.stat().st_size / 1024:.1f} KiB, "
          f"{len(json.loads(refs.read_text())['refs'])} keys")
    print(f"read every array: h5py chunks + imagecodecs' LZO {t_direct:.3f} s; zarr-python through "
          f"vzarr's references {t_zarr:.3f} s ({t_zarr / t_direct:.2f}x); values equal: {equal}")
    if peers:
        for which in ("kerchunk", "virtualizarr"):
            p = subprocess.run([peers, "-c", PEERS, str(src), which], capture_output=True, text=True)
            r = json.loads(p.stdout) if p.returncode == 0 else {"arrays": 0, "error": p.stderr[-300:]}
            print(f"{which}: {r['arrays']} of {len(ARRAYS)} arrays virtualised"
                  + (f" ({r['error']})" if r["error"] else ""))
    if not equal:
        sys.exit(1)


if __name__ == "__main__":
    main()
