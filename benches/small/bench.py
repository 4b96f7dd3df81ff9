"""What outputs cost on files with small chunks (issue 29): vzarr before (every chunk
referenced: `--small-chunks keep`, the references of earlier releases) and after (the
defaults: merged and inlined), kerchunk with its defaults (SingleHdf5ToZarr /
NetCDF3ToZarr, inline_threshold=100) and VirtualiZarr with its defaults (open_virtual_dataset
with HDFParser / NetCDF3Parser, the dimension coordinates loaded, written with
.vz.to_kerchunk), on every file of the real-file corpus and on generated cases (a
radiosonde-like NetCDF3 file, a netCDF-4 file chunked 1 along time, a radar-like NetCDF3
file).

Per file and tool: output bytes against source bytes, references (and those under 1 KiB),
the time to build, and the time to read every array through the output (zarr-python 3.4
through fsspec's reference file system, in one process per tool, imports done) against
reading the file directly (h5py for HDF5, netCDF4-python for NetCDF3); `vzarr verify` time
before and after. Times are the minimum of --runs runs (a step that took more than 10 s is not repeated). Writes results.json and results.md
in the work directory.

    python bench.py --work DIR --vzarr BIN --real DIR [--runs N] [--quick] [--tools LIST]
    python bench.py read TOOL OUTPUT SOURCE     (internal: one read, prints seconds as JSON)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


# --- generated cases ------------------------------------------------------------------------

def gen_sonde(path: Path, records: int = 4176, nvars: int = 25):
    """ARM-sonde-like: `nvars` record variables of 4-8 bytes a record, NetCDF3 classic."""
    import netCDF4
    rng = np.random.default_rng(1)
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("time", None)
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "seconds since 2024-01-01 00:00:00"
        t[:] = np.arange(records, dtype="f8")
        for k in range(nvars - 1):
            kind = ("f4", "f8", "i4", "f4")[k % 4]
            v = nc.createVariable(f"v{k}", kind, ("time",), fill_value=-9999)
            v[:] = (np.cumsum(rng.normal(0, 1, records)) * 10).astype(kind)


def gen_logger(path: Path, steps: int = 48_820, nvars: int = 10):
    """A netCDF-4 file chunked 1 along its unlimited time axis, deflated, written a step at a
    time (as loggers write them): one tiny compressed chunk per step and variable."""
    import netCDF4
    rng = np.random.default_rng(2)
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", None)
        nc.createDimension("station", 4)
        t = nc.createVariable("time", "f8", ("time",), chunksizes=(1,), zlib=True)
        t.units = "minutes since 2024-01-01"
        vs = [nc.createVariable(f"v{k}", "f4", ("time", "station"), chunksizes=(1, 4),
                                zlib=True) for k in range(nvars - 1)]
        data = np.cumsum(rng.normal(0, 1, (nvars - 1, steps, 4)), axis=1).astype("f4")
        block = 1000
        for s in range(0, steps, block):
            e = min(steps, s + block)
            t[s:e] = np.arange(s, e)
            for k, v in enumerate(vs):
                v[s:e] = data[k, s:e]


def gen_radar(path: Path, rays: int = 2000, gates: int = 480):
    """CfRadial-like NetCDF3: per ray a time, azimuth and elevation, and six moments of
    `gates` int16 values: record variables interleaved ray by ray."""
    import netCDF4
    rng = np.random.default_rng(3)
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as nc:
        nc.createDimension("time", None)
        nc.createDimension("range", gates)
        nc.createVariable("range", "f4", ("range",))[:] = np.arange(gates) * 250.0
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "seconds since 2024-05-01T00:00:00Z"
        t[:] = np.arange(rays) * 0.1
        nc.createVariable("azimuth", "f4", ("time",))[:] = (np.arange(rays) * 0.72) % 360
        nc.createVariable("elevation", "f4", ("time",))[:] = 0.5 + (np.arange(rays) // 500)
        for name in ("DBZ", "VEL", "WIDTH", "ZDR", "PHIDP", "RHOHV"):
            v = nc.createVariable(name, "i2", ("time", "range"), fill_value=-32768)
            v.scale_factor, v.add_offset = 0.01, 0.0
            v[:] = rng.integers(-3000, 6000, (rays, gates)).astype("i2")


GENERATED = {
    "sonde.nc": gen_sonde,
    "logger.nc": gen_logger,
    "radar.nc": gen_radar,
}


# --- the tools --------------------------------------------------------------------------------

def is_hdf5(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    return any(head[o:o + 8] == HDF5_SIGNATURE for o in (0, 512, 1024, 2048, 4096, 8192,
                                                            16384, 32768))


def build(tool: str, src: Path, out: Path, vzarr: str) -> float:
    """Builds `out` from `src` with `tool` in its own process; the wall seconds. Raises on a
    failure."""
    if tool.startswith("vzarr"):
        args = [vzarr, "build", str(src), "-o", str(out)]
        if tool == "vzarr-before":
            args += ["--small-chunks", "keep"]
        if tool == "vzarr-icechunk":
            import shutil
            shutil.rmtree(out, ignore_errors=True)
            args += ["--format", "icechunk"]
    else:
        args = [sys.executable, __file__, "peer", tool, str(src), str(out)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"no result after {BUILD_TIMEOUT} s") from None
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError((p.stderr or p.stdout).strip().splitlines()[-1:] or ["failed"])
    return dt


def peer(tool: str, src: Path, out: Path):
    """kerchunk or VirtualiZarr with their defaults, one file, to kerchunk JSON."""
    hdf5 = is_hdf5(src)
    if tool == "kerchunk":
        if hdf5:
            from kerchunk.hdf import SingleHdf5ToZarr
            refs = SingleHdf5ToZarr(str(src)).translate()
        else:
            from kerchunk.netCDF3 import NetCDF3ToZarr
            refs = NetCDF3ToZarr(str(src)).translate()
        import ujson
        out.write_text(ujson.dumps(refs))
        return
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser, NetCDF3Parser
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vds = open_virtual_dataset(src.resolve().as_uri(), registry=registry,
                               parser=HDFParser() if hdf5 else NetCDF3Parser())
    vds.vz.to_kerchunk(str(out), format="json")


def output_bytes(out: Path) -> int:
    """Bytes of a reference file, or of every file of a repository."""
    if out.is_dir():
        return sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return out.stat().st_size


def count_refs(out: Path) -> tuple[int, int]:
    """(references, those under 1 KiB) of a kerchunk JSON file (v1 or v0)."""
    d = json.loads(out.read_text())
    refs = d.get("refs", d)
    rs = [v for k, v in refs.items() if isinstance(v, list) and len(v) == 3]
    return len(rs), sum(1 for r in rs if r[2] < 1024)


def read_all(tool: str, out: Path | None, src: Path) -> float:
    """Seconds to read every array: through the output (zarr-python via fsspec), or the
    source directly (`out` None: h5py or netCDF4-python)."""
    import warnings

    import fsspec
    import h5py
    import netCDF4
    import zarr
    warnings.simplefilter("ignore")
    if out is None:
        t0 = time.perf_counter()
        if is_hdf5(src):
            with h5py.File(src, "r") as f:
                def visit(_, obj):
                    if isinstance(obj, h5py.Dataset):
                        try:
                            obj[()]
                        except Exception:  # noqa: BLE001  (types h5py cannot read)
                            pass
                f.visititems(visit)
        else:
            with netCDF4.Dataset(src) as nc:
                nc.set_auto_maskandscale(False)
                for v in nc.variables.values():
                    v[...]
        return time.perf_counter() - t0
    zarr.config.set({"array.rectilinear_chunks": True})
    t0 = time.perf_counter()
    if out.is_dir():
        import icechunk
        storage = icechunk.local_filesystem_storage(str(out))
        conts = sorted((icechunk.Repository.open(storage).config.virtual_chunk_containers
                        or {}).keys())
        creds = icechunk.containers_credentials(
            {c: icechunk.credentials.LocalFileSystemAccess for c in conts})
        repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)
        store = repo.readonly_session("main").store
    else:
        refs = json.loads(out.read_text())
        fs = fsspec.filesystem("reference", fo=refs, remote_protocol="file",
                               asynchronous=True, remote_options={"asynchronous": True})
        store = zarr.storage.FsspecStore(fs, path="/", read_only=True)
    fmt = 3 if tool.startswith("vzarr") else 2
    group = zarr.open_group(store, mode="r", zarr_format=fmt)
    failed = 0
    for _, a in walk(group):
        try:
            a[...]
        except Exception:  # noqa: BLE001  (counted: arrays this reader cannot read)
            failed += 1
    return time.perf_counter() - t0 if not failed else -(time.perf_counter() - t0)


def walk(group, prefix=""):
    for name, a in group.arrays():
        yield f"{prefix}{name}", a
    for name, g in group.groups():
        yield from walk(g, f"{prefix}{name}/")


def timed_read(tool: str, out: Path | None, src: Path, runs: int) -> float:
    """The minimum over `runs` reads, each in a process of its own (imports not counted); a
    negative figure when some array could not be read."""
    best = None
    for _ in range(runs):
        try:
            p = subprocess.run([sys.executable, __file__, "read", tool, str(out or "-"),
                                str(src)], capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return float("nan")
        if p.returncode != 0:
            return float("nan")
        s = json.loads(p.stdout.strip().splitlines()[-1])["seconds"]
        best = s if best is None else (min(best, s) if s > 0 else s)
        if abs(s) > 10:
            break  # a read this slow is not repeated: its spread is well below the gaps
    return best


# --- the run --------------------------------------------------------------------------------

TOOLS = ["vzarr-before", "vzarr-after", "vzarr-icechunk", "kerchunk", "virtualizarr"]

# Seconds a build may take (kerchunk 0.2.10 hangs, idle, on a MATLAB file and several NWB
# files of the corpus; the slowest build that finishes takes 30 s), and a read.
BUILD_TIMEOUT = 120
TIMEOUT = 600


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--vzarr", required=True)
    ap.add_argument("--real", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="generated cases only")
    ap.add_argument("--tools", default=",".join(TOOLS),
                    help="tools to run; the others' figures are kept from WORK/results.json")
    a = ap.parse_args()
    tools = a.tools.split(",")
    unknown = set(tools) - set(TOOLS)
    if unknown:
        raise SystemExit(f"unknown tools {sorted(unknown)}: of {','.join(TOOLS)}")
    previous = {}
    if set(tools) != set(TOOLS) and (a.work / "results.json").exists():
        previous = {r["file"]: r for r in json.loads((a.work / "results.json").read_text())}
    gen = a.work / "generated"
    gen.mkdir(parents=True, exist_ok=True)
    for name, fn in GENERATED.items():
        if not (gen / name).exists():
            fn(gen / name)
    files = [gen / n for n in GENERATED]
    if not a.quick:
        files += sorted(p for p in a.real.rglob("*") if p.is_file() and not p.name.startswith("."))
    rows = []
    for k, src in enumerate(files):
        name = str(src.relative_to(a.real)) if src.is_relative_to(a.real) else f"generated/{src.name}"
        row = previous.get(name) or {"file": name, "source_bytes": src.stat().st_size,
                                     "generated": not src.is_relative_to(a.real),
                                     "read_source_s": timed_read("source", None, src, a.runs)}
        for tool in tools:
            suffix = ".icechunk" if tool == "vzarr-icechunk" else ".json"
            out = a.work / "out" / tool / (name.replace("/", "__") + suffix)
            out.parent.mkdir(parents=True, exist_ok=True)
            r = {}
            try:
                r["build_s"] = build(tool, src, out, a.vzarr)
                if r["build_s"] < 10:
                    r["build_s"] = min([r["build_s"]] + [build(tool, src, out, a.vzarr)
                                                         for _ in range(a.runs - 1)])
            except Exception as e:  # noqa: BLE001  (a peer refusing a file is a result)
                r["error"] = str(e)[:200]
                row[tool] = r
                continue
            r["output_bytes"] = output_bytes(out)
            if tool == "vzarr-icechunk":
                # The repository holds the references of the JSON output (the same dataset).
                after = row["vzarr-after"]
                r["refs"], r["refs_small"] = after.get("refs", 0), after.get("refs_small", 0)
            else:
                r["refs"], r["refs_small"] = count_refs(out)
            r["read_s"] = timed_read(tool, out, src, a.runs)
            if tool.startswith("vzarr"):
                ts = []
                for _ in range(a.runs):
                    t0 = time.perf_counter()
                    p = subprocess.run([a.vzarr, "verify", str(out), "--trust-references"],
                                       capture_output=True, text=True)
                    ts.append(time.perf_counter() - t0)
                    r["verify_ok"] = p.returncode == 0
                    if ts[-1] > 10:
                        break
                r["verify_s"] = min(ts)
            row[tool] = r
        rows.append(row)
        print(f"[{k + 1}/{len(files)}] {name}: " + ", ".join(
            f"{t} {row[t].get('output_bytes', 'x')}B/{row[t].get('refs', 'x')} refs"
            for t in tools), file=sys.stderr, flush=True)
    (a.work / "results.json").write_text(json.dumps(rows, indent=1))
    md = report(rows)
    (a.work / "results.md").write_text(md)
    print(md)


def report(rows: list[dict]) -> str:
    """The tables of BENCHMARKS.md: the generated cases one by one, the corpus in total."""
    out = []

    def cell_ratio(row, t):
        r = row[t]
        return "refused" if "error" in r else f"{r['output_bytes'] / row['source_bytes']:.2f}"

    out.append("| case | source | tool | output | output/source | refs | refs < 1 KiB | "
               "build s | read all s (source s) | verify s |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        if not row["generated"]:
            continue
        for t in TOOLS:
            r = row.get(t)
            if r is None:
                continue
            if "error" in r:
                out.append(f"| {row['file']} | {row['source_bytes']:,} | {t} | refused: "
                           f"{r['error'][:60]} | | | | | | |")
                continue
            out.append(
                f"| {row['file']} | {row['source_bytes']:,} | {t} | {r['output_bytes']:,} | "
                f"{cell_ratio(row, t)} | {r['refs']:,} | {r['refs_small']:,} | "
                f"{r['build_s']:.3f} | {fmt_read(r['read_s'])} ({row['read_source_s']:.4f}) | "
                f"{r.get('verify_s', float('nan')):.2f} |")
    real = [r for r in rows if not r["generated"]]
    if real:
        out.append("")
        out.append(f"Real-file corpus ({len(real)} files, "
                   f"{sum(r['source_bytes'] for r in real):,} bytes):")
        out.append("")
        out.append("| tool | files built | output/source (sum) | largest ratio | outputs > 1.5x "
                   "(source >= 64 KiB) | refs | refs < 1 KiB | read all s (sources s) | "
                   "unreadable | verify s |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for t in TOOLS:
            ok = [r for r in real if t in r and "error" not in r[t]]
            if not ok:
                continue
            src = sum(r["source_bytes"] for r in ok)
            outb = sum(r[t]["output_bytes"] for r in ok)
            largest = max(ok, key=lambda r: r[t]["output_bytes"] / r["source_bytes"])
            big = [r for r in ok if r["source_bytes"] >= 65536
                   and r[t]["output_bytes"] > 1.5 * r["source_bytes"]]
            refs = sum(r[t]["refs"] for r in ok)
            small = sum(r[t]["refs_small"] for r in ok)
            reads = [r[t]["read_s"] for r in ok]
            readable = [x for x in reads if x == x and x >= 0]
            unreadable = len(reads) - len(readable)
            read = sum(readable)
            source = sum(r["read_source_s"] for r, x in zip(ok, reads) if x == x and x >= 0)
            verify = sum(r[t].get("verify_s", 0) for r in ok)
            out.append(
                f"| {t} | {len(ok)} | {outb / src:.2f} | "
                f"{largest[t]['output_bytes'] / largest['source_bytes']:.1f} "
                f"({Path(largest['file']).name}) | {len(big)} | {refs:,} | {small:,} "
                f"({100 * small / max(refs, 1):.1f}%) | {read:.2f} ({source:.2f}, "
                f"{read / max(source, 1e-9):.1f}x) | {unreadable} | "
                f"{verify:.1f} |" if t.startswith("vzarr") else
                f"| {t} | {len(ok)} | {outb / src:.2f} | "
                f"{largest[t]['output_bytes'] / largest['source_bytes']:.1f} "
                f"({Path(largest['file']).name}) | {len(big)} | {refs:,} | {small:,} "
                f"({100 * small / max(refs, 1):.1f}%) | {read:.2f} ({source:.2f}, "
                f"{read / max(source, 1e-9):.1f}x) | {unreadable} | - |")
    return "\n".join(out) + "\n"


def fmt_read(s: float) -> str:
    if s != s:
        return "failed"
    return f"{s:.4f}" if s >= 0 else f"{-s:.4f} (some arrays unreadable)"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "read":
        tool, out, src = sys.argv[2], sys.argv[3], Path(sys.argv[4])
        print(json.dumps({"seconds": read_all(tool, None if out == "-" else Path(out), src)}))
    elif len(sys.argv) > 1 and sys.argv[1] == "peer":
        peer(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
    else:
        main()
