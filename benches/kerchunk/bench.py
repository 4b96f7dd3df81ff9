"""kerchunk references verified and upgraded (issue 45): `vzarr verify` and `vzarr upgrade`
(JSON and Icechunk) against VirtualiZarr 2.8's kerchunk parsers (KerchunkJSONParser,
KerchunkParquetParser) with its writers (to_kerchunk, to_icechunk), on

- (m) kerchunk's references of a generated monthly archive: SingleHdf5ToZarr per file,
  MultiZarrToZarr along time (JSON, and Parquet through kerchunk.df.refs_to_dataframe);
- (p) a 1M-reference Parquet set: one array of 1,000,000 chunks of 4 bytes (references into
  one small file; written by kerchunk.df.refs_to_dataframe, record size 100,000);
- (l) lazy open (`--lazy N,...`): Parquet sets of N references in a big array beside a small
  one (4 chunks), in fsspec's LazyReferenceMapper layout (record files written here with
  fastparquet, record size 100,000); open and read the small array: `vzarr cat` and
  `vzarr.open_dataset`, against xarray over fsspec's LazyReferenceMapper.

    python bench.py --vzarr PATH --work DIR [--runs N] [--months M]

Started by benches/kerchunk/run. Every tool runs as its own process; wall time from spawn to
exit and the peak RSS of that process (GNU time), medians of --runs runs. Prints
a Markdown table and writes DIR/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

PEER = r'''
import json, os, sys, time
t0 = time.perf_counter()
import icechunk
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import LocalStore
from virtualizarr import open_virtual_dataset
from virtualizarr.parsers import KerchunkJSONParser, KerchunkParquetParser
refs, root, out, fmt = sys.argv[1:5]
registry = ObjectStoreRegistry({f"file://{root}": LocalStore(prefix=root),
                                f"file://{os.path.dirname(refs)}": LocalStore(prefix=os.path.dirname(refs))})
parser = KerchunkParquetParser() if os.path.isdir(refs) else KerchunkJSONParser()
vds = open_virtual_dataset(f"file://{refs}", registry=registry, parser=parser,
                           loadable_variables=[])
t1 = time.perf_counter()
if fmt == "json":
    vds.vz.to_kerchunk(out, format="json")
else:
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(f"file://{root}/", icechunk.local_filesystem_store(root)))
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(out), config)
    s = repo.writable_session("main")
    vds.vz.to_icechunk(s.store)
    s.commit("VirtualiZarr to_icechunk")
print(json.dumps({"parse": t1 - t0, "write": time.perf_counter() - t1}))
'''


def run(argv: list[str]) -> dict:
    """Runs `argv` as its own process under GNU time: wall seconds and peak RSS (MiB) of that
    process alone (not of this one, which a forked child's high-water mark would include)."""
    import tempfile
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", t.name, *map(str, argv)],
                           capture_output=True, text=True)
        wall, kib = t.read().split()[-2:]
    return {"wall": float(wall), "rss": int(kib) / 1024, "out": p.stdout, "err": p.stderr,
            "code": p.returncode}


def median_of(runs: int, argv_for: callable, ok=lambda r: True) -> dict:
    results = []
    for i in range(runs):
        r = run(argv_for(i))
        if not ok(r):
            sys.exit(f"failed: {' '.join(map(str, argv_for(i)))}\n{r['out'][-2000:]}\n{r['err'][-2000:]}")
        results.append(r)
    return {"wall": statistics.median(r["wall"] for r in results),
            "rss": statistics.median(r["rss"] for r in results)}


def make_archive(work: Path, months: int) -> tuple[Path, Path, Path, int]:
    """Monthly files (time chunks of 1 day, 90 x 180 grid, zlib), kerchunk's combined JSON
    and Parquet references."""
    import netCDF4
    import numpy as np
    arch = work / "archive"
    refs_json, refs_parq = work / "archive.json", work / "archive.parq"
    stamp = work / f"archive.{months}.stamp"
    if stamp.exists():
        return arch, refs_json, refs_parq, int(stamp.read_text())
    shutil.rmtree(arch, ignore_errors=True)
    arch.mkdir(parents=True)
    rng = np.random.default_rng(0)
    files, day = [], 0
    for m in range(months):
        days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m % 12]
        f = arch / f"tas_{m:03d}.nc"
        with netCDF4.Dataset(f, "w") as d:
            d.createDimension("time", None)
            d.createDimension("lat", 90)
            d.createDimension("lon", 180)
            t = d.createVariable("time", "f8", ("time",))
            t.units = "days since 2000-01-01"
            d.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-89, 89, 90)
            d.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 358, 180)
            v = d.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(1, 90, 180),
                                 zlib=True, complevel=1)
            t[:] = np.arange(days) + day
            v[:] = rng.normal(280, 10, (days, 90, 180)).astype("f4")
            day += days
        files.append(f)
    from kerchunk.combine import MultiZarrToZarr
    from kerchunk.df import refs_to_dataframe
    from kerchunk.hdf import SingleHdf5ToZarr
    singles = [SingleHdf5ToZarr(str(f), inline_threshold=0).translate() for f in files]
    refs = MultiZarrToZarr(singles, concat_dims=["time"], identical_dims=["lat", "lon"],
                           inline_threshold=0).translate()
    refs_json.write_text(json.dumps(refs))
    shutil.rmtree(refs_parq, ignore_errors=True)
    refs_to_dataframe(refs, str(refs_parq), record_size=100_000)
    n = sum(1 for k in refs["refs"] if k.startswith("tas/") and ".z" not in k)
    stamp.write_text(str(n))
    return arch, refs_json, refs_parq, n


def make_million(work: Path) -> tuple[Path, Path]:
    """One array of 1M chunks of 4 bytes, references into one small file, as Parquet."""
    import numpy as np
    data = work / "million"
    parq = work / "million.parq"
    stamp = work / "million.stamp"
    if stamp.exists():
        return data, parq
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    src = data / "values.bin"
    src.write_bytes(np.arange(1 << 16, dtype="<f4").tobytes())
    n = 1_000_000
    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            "v/.zarray": json.dumps({"shape": [n], "chunks": [1], "dtype": "<f4",
                                     "fill_value": None, "order": "C", "filters": None,
                                     "compressor": None, "zarr_format": 2}),
            "v/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["x"]})}
    for i in range(n):
        refs[f"v/{i}"] = [str(src), (i % (1 << 16)) * 4, 4]
    from kerchunk.df import refs_to_dataframe
    shutil.rmtree(parq, ignore_errors=True)
    refs_to_dataframe({"version": 1, "refs": refs}, str(parq), record_size=100_000)
    stamp.write_text("ok")
    return data, parq


def make_lazy_set(work: Path, n: int) -> tuple[Path, Path]:
    """`big` (n chunks of 4 bytes) and `small` (16 float32 in 4 chunks), Zarr v2 metadata,
    as fsspec's LazyReferenceMapper lays them out (.zmetadata, <var>/refs.<k>.parq)."""
    import numpy as np
    import pandas as pd
    data, parq = work / "lazy-data", work / f"lazy-{n}.parq"
    src = data / "values.bin"
    if not src.exists():
        data.mkdir(parents=True, exist_ok=True)
        src.write_bytes(np.arange(1 << 16, dtype="<f4").tobytes())
    stamp = work / f"lazy-{n}.stamp"
    if stamp.exists():
        return data, parq
    shutil.rmtree(parq, ignore_errors=True)
    record = 100_000
    zarray = lambda m, c: {"shape": [m], "chunks": [c], "dtype": "<f4", "fill_value": None,  # noqa: E731
                           "order": "C", "filters": None, "compressor": None, "zarr_format": 2}
    meta = {".zgroup": {"zarr_format": 2},
            "big/.zarray": zarray(n, 1), "big/.zattrs": {"_ARRAY_DIMENSIONS": ["x"]},
            "small/.zarray": zarray(16, 4), "small/.zattrs": {"_ARRAY_DIMENSIONS": ["y"]}}
    parq.mkdir(parents=True)
    (parq / ".zmetadata").write_text(json.dumps({"metadata": meta, "record_size": record}))

    def write(var: str, offsets, sizes):
        (parq / var).mkdir(exist_ok=True)
        for k in range(0, len(offsets), record):
            m = len(offsets[k:k + record])
            df = pd.DataFrame({"path": pd.Categorical([str(src)] * m),
                               "offset": offsets[k:k + record], "size": sizes[k:k + record],
                               "raw": pd.Series([None] * m, dtype=object)})
            df.to_parquet(parq / var / f"refs.{k // record}.parq", engine="fastparquet",
                          index=False, object_encoding={"raw": "bytes"}, stats=False)
    idx = np.arange(n, dtype="i8")
    write("big", (idx % (1 << 16)) * 4, np.full(n, 4, dtype="i8"))
    write("small", np.arange(4, dtype="i8") * 16, np.full(4, 16, dtype="i8"))
    stamp.write_text("ok")
    return data, parq


LAZY_PEER = r'''
import sys, warnings
warnings.filterwarnings("ignore")
import xarray as xr
ds = xr.open_dataset(sys.argv[1], engine="kerchunk", storage_options={"remote_protocol": "file"})
v = ds["small"].values
assert v.tolist() == list(map(float, range(16))), v
'''

VZARR_OPEN = r'''
import sys, vzarr
ds = vzarr.open_dataset(sys.argv[1], allow_prefixes=sys.argv[2])
v = ds["small"].values
assert v.tolist() == list(map(float, range(16))), v
'''


def lazy_open(a, work: Path, sizes: list[int]) -> list[dict]:
    """Open a Parquet set and read its small array: vzarr's CLI and Python package against
    xarray over fsspec's LazyReferenceMapper (kerchunk's xarray engine)."""
    ok = lambda r: r["code"] == 0  # noqa: E731
    rows = []
    for n in sizes:
        data, parq = make_lazy_set(work, n)
        row = {"case": f"(l) open, read a 16-value array beside {n:,} references", "references": n}
        row["vzarr cat"] = median_of(a.runs, lambda i: [
            a.vzarr, "cat", str(parq), "small[0:16]", "--allow-prefix", str(data)], ok)
        row["vzarr.open_dataset"] = median_of(a.runs, lambda i: [
            sys.executable, "-c", VZARR_OPEN, str(parq), str(data)], ok)
        row["xarray engine=kerchunk (LazyReferenceMapper)"] = median_of(a.runs, lambda i: [
            sys.executable, "-c", LAZY_PEER, str(parq)], ok)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vzarr", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--months", type=int, default=24)
    ap.add_argument("--lazy", default="1000000",
                    help="reference counts of the lazy-open sets (comma-separated; empty: none)")
    ap.add_argument("--only-lazy", action="store_true", help="the lazy-open cases alone")
    a = ap.parse_args()
    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    lazy_sizes = [int(x) for x in a.lazy.split(",") if x]
    if a.only_lazy:
        rows = lazy_open(a, work, lazy_sizes)
        (work / "results-lazy.json").write_text(json.dumps(rows, indent=1))
        return 0
    arch, mjson, mparq, mrefs = make_archive(work, a.months)
    mdata, pparq = make_million(work)
    out = work / "out"
    out.mkdir(exist_ok=True)
    ok = lambda r: r["code"] == 0  # noqa: E731

    def clean(p: Path):
        shutil.rmtree(p, ignore_errors=True)
        p.unlink(missing_ok=True) if p.is_file() else None

    rows = []
    cases = [("(m) monthly archive, JSON", mjson, arch, mrefs),
             ("(m) monthly archive, Parquet", mparq, arch, mrefs),
             ("(p) 1M references, Parquet", pparq, mdata, 1_000_000)]
    for name, refs, root, n in cases:
        row = {"case": name, "references": n}
        for fmt in ("json", "icechunk"):
            target = out / f"vzarr.{fmt}"

            def vz(i, fmt=fmt, target=target):
                clean(target)
                return [a.vzarr, "upgrade", str(refs), "-o", str(target), "--format",
                        "kerchunk" if fmt == "json" else "icechunk", "--allow-prefix", str(root),
                        "--small-chunks", "keep"]
            row[f"vzarr upgrade {fmt}"] = median_of(a.runs, vz, ok)
            ptarget = out / f"vz.{fmt}"

            def peer(i, fmt=fmt, ptarget=ptarget):
                clean(ptarget)
                return [sys.executable, "-c", PEER, str(refs), str(root), str(ptarget), fmt]
            row[f"VirtualiZarr {fmt}"] = median_of(a.runs, peer, ok)
        if n != 1_000_000:
            # Every reference audited and every value compared with the source.
            row["vzarr verify"] = median_of(a.runs, lambda i: [
                a.vzarr, "verify", str(refs), "--allow-prefix", str(root), "--readers", "native"], ok)
        rows.append(row)
        print(json.dumps(row), flush=True)
    rows += lazy_open(a, work, lazy_sizes)
    (work / "results.json").write_text(json.dumps(rows, indent=1))
    lines = ["| case | references | tool | wall s | peak RSS MiB |", "|---|---:|---|---:|---:|"]
    for row in rows:
        for k, v in row.items():
            if isinstance(v, dict):
                lines.append(f"| {row['case']} | {row['references']:,} | {k} | {v['wall']:.2f} | "
                             f"{v['rss']:.0f} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
