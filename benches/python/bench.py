"""The Python-package benchmark (issue 19): vzarr from Python against VirtualiZarr 2.8 and
xarray on archive (a) of the comparison benchmark (120 monthly NetCDF4 files), locally and on
a moto S3 server behind the latency proxy. Started by benches/python/run; every figure is the
median of --runs runs, the tools alternating, each run its own process under GNU time.

Cases:
  parser     the parser call, parser(url, registry) -> ManifestStore, per file: vzarr's
             Parser against VirtualiZarr's HDFParser (in-process timings of each call)
  mfdataset  VirtualiZarr's open_virtual_mfdataset with each parser
  build      vzarr.build(..., concat_dim="time", output=OUT) against VirtualiZarr's open +
             concat + to_kerchunk with HDFParser (benches/compare/tools.py, as in the
             comparison), end to end (process wall time, imports included) and in-process
  s3build    the same two on archive (a) in S3 behind the proxy (requests counted)
  open       vzarr.open_dataset against xarray.open_mfdataset(parallel=True): time to a lazy
             Dataset, then time to read `tas` in full
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compare"))

from bench import BenchError, brief_error, request_counts, run_process, warm  # noqa: E402
import remote  # noqa: E402

PY = sys.executable
PYTOOLS = str(HERE / "pytools.py")
TOOLS = str(HERE.parent / "compare" / "tools.py")


def log(msg: str) -> None:
    print(f"pybench: {msg}", file=sys.stderr, flush=True)


def one(argv: list[str], base: Path, env: dict | None = None) -> dict:
    r = run_process(argv, base, env)
    if r["rc"] != 0:
        raise BenchError(f"{' '.join(argv[:4])} ... failed ({r['rc']}): {brief_error(r['stderr'])}"
                         f" (see {base}.err)")
    lines = [l for l in r["stdout"].splitlines() if l.startswith("{")]
    r["inner"] = json.loads(lines[-1]) if lines else {}
    return r


def alternate(case: str, runs: int, tools: dict[str, list[str]], res: Path, env=None) -> dict:
    """Runs each tool `runs` times, alternating; returns tool -> list of run results (logs
    in res/CASE-TOOL.RUN.*)."""
    out: dict[str, list[dict]] = {t: [] for t in tools}
    for i in range(runs):
        for t, argv in tools.items():
            r = one(argv, res / f"{case}-{t}.{i}", env)
            out[t].append(r)
            log(f"  {t} run {i + 1}: {r['wall']:.2f} s, {r['rss'] / 2**20:.0f} MiB")
    return out


def check(out: Path, archive: str, base: Path, s3_endpoint: str | None = None) -> None:
    """vzarr's output opened with xarray (zarr engine over fsspec's reference filesystem) and
    compared with the files, as the comparison benchmark checks outputs (tools.py check)."""
    name = Path(archive).name
    index = Path(archive).parent / "archives.json"
    argv = [PY, TOOLS, "check", *(["--s3-endpoint", s3_endpoint] if s3_endpoint else []),
            str(out), str(index), name]
    one(argv, base)
    log(f"  {out.name}: values checked against the files")


def med(runs: list[dict], f) -> float:
    return statistics.median(f(r) for r in runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archive", required=True, help="directory of archive (a)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="parser,mfdataset,build,s3build,open")
    ap.add_argument("--delay-ms", type=float, default=20.0)
    ap.add_argument("--wheel", help="the wheel measured (its size is reported)")
    ap.add_argument("--wheel-build-seconds", type=float)
    a = ap.parse_args()
    cases = set(a.only.split(","))
    work = Path(a.work)
    res = work / "runs"
    res.mkdir(parents=True, exist_ok=True)
    files = sorted(str(p) for p in Path(a.archive).glob("*.nc"))
    if not files:
        raise BenchError(f"no .nc files in {a.archive}")
    warm(files)
    results: dict = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                     "archive": {"dir": a.archive, "files": len(files),
                                 "bytes": sum(os.path.getsize(f) for f in files)},
                     "runs": a.runs}
    if a.wheel:
        results["wheel"] = {"file": os.path.basename(a.wheel), "bytes": os.path.getsize(a.wheel),
                            "build_seconds": a.wheel_build_seconds}

    if "parser" in cases:
        log("parser call, per file")
        runs = alternate("parser", a.runs, {p: [PY, PYTOOLS, "parser", "--parser", p, *files]
                                  for p in ("vzarr", "hdf")}, res)
        results["parser"] = {
            p: {"median_per_file": med(rs, lambda r: statistics.median(r["inner"]["per_file"])),
                "total": med(rs, lambda r: r["inner"]["total"]),
                "first_call": med(rs, lambda r: r["inner"]["per_file"][0])}
            for p, rs in runs.items()}
    if "mfdataset" in cases:
        log("open_virtual_mfdataset with each parser")
        runs = alternate("mfdataset", a.runs, {p: [PY, PYTOOLS, "mfdataset", "--parser", p, *files]
                                  for p in ("vzarr", "hdf")}, res)
        results["mfdataset"] = {p: {"open": med(rs, lambda r: r["inner"]["open"]),
                                    "wall": med(rs, lambda r: r["wall"]),
                                    "rss": med(rs, lambda r: r["rss"])}
                                for p, rs in runs.items()}
    if "build" in cases:
        log("build end to end")
        tools = {"vzarr.build": [PY, PYTOOLS, "build", "-o", str(work / "vzarr.json"), a.archive],
                 "virtualizarr": [PY, TOOLS, "virtualizarr", "--format", "hdf5", "--concat-dim",
                                  "time", "-o", str(work / "virtualizarr.json"), *files]}
        runs = alternate("build", a.runs, tools, res)
        check(work / "vzarr.json", a.archive, res / "build-check")
        results["build"] = {t: summarize(rs) for t, rs in runs.items()}
    if "s3build" in cases:
        log(f"build on S3 behind a {a.delay_ms:.0f} ms proxy")
        with remote.S3Bench(work / "s3", delay_ms=a.delay_ms, python=PY) as s3:
            prefix = s3.upload("a", files)
            env = s3.env()
            tools = {"vzarr.build": [PY, PYTOOLS, "build", "-o", str(work / "s3-vzarr.json"),
                                     prefix],
                     "virtualizarr": [PY, TOOLS, "virtualizarr", "--format", "hdf5",
                                      "--concat-dim", "time", "--s3-endpoint", s3.endpoint,
                                      "-o", str(work / "s3-virtualizarr.json"), prefix]}
            runs: dict[str, list[dict]] = {t: [] for t in tools}
            for i in range(a.runs):
                for t, argv in tools.items():
                    s3.reset()
                    r = one(argv, res / f"s3-{t}.{i}", env)
                    r["requests"] = request_counts(s3.stats())
                    runs[t].append(r)
                    log(f"  {t} run {i + 1}: {r['wall']:.2f} s, {r['requests']['total']} requests")
            check(work / "s3-vzarr.json", a.archive, res / "s3build-check", s3.direct)
            results["s3build"] = {t: {**summarize(rs),
                                      "requests": med(rs, lambda r: r["requests"]["total"]),
                                      "bytes_fetched": med(rs, lambda r: r["requests"]["bytes_fetched"])}
                                  for t, rs in runs.items()}
            results["s3build"]["delay_ms"] = a.delay_ms
    if "open" in cases:
        log("open_dataset against open_mfdataset(parallel=True)")
        runs = alternate("open", a.runs, {t: [PY, PYTOOLS, "open", "--tool", t, *files]
                                  for t in ("vzarr", "xarray")}, res)
        sums = {t: rs[0]["inner"]["checksum"] for t, rs in runs.items()}
        if sums["vzarr"] != sums["xarray"]:
            raise BenchError(f"tas read through vzarr differs from xarray's: {sums}")
        results["open"] = {t: {"open": med(rs, lambda r: r["inner"]["open"]),
                               "read_tas": med(rs, lambda r: r["inner"]["read"]),
                               "imports": med(rs, lambda r: r["inner"]["imports"]),
                               "rss": med(rs, lambda r: r["rss"])}
                           for t, rs in runs.items()}
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    md = tables(results)
    (work / "results.md").write_text(md)
    print(md)
    return 0


def summarize(rs: list[dict]) -> dict:
    inner = lambda k: (lambda r: r["inner"].get(k, 0.0))  # noqa: E731
    return {"wall": med(rs, lambda r: r["wall"]), "rss": med(rs, lambda r: r["rss"]),
            "cpu": med(rs, lambda r: r["cpu"]), "imports": med(rs, inner("imports")),
            "in_process": med(rs, lambda r: sum(v for k, v in r["inner"].items()
                                                if k in ("build", "scan", "combine", "write")))}


def tables(res: dict) -> str:
    out = [f"Archive (a): {res['archive']['files']} files, "
           f"{res['archive']['bytes'] / 2**20:.0f} MiB; median of {res['runs']} runs.", ""]
    if "wheel" in res:
        w = res["wheel"]
        out += [f"Wheel: {w['file']}, {w['bytes'] / 2**20:.1f} MiB; this run's release build "
                f"of it took {w['build_seconds']:.0f} s (incremental when the target directory "
                f"was warm).", ""]
    if "parser" in res:
        p = res["parser"]
        ratio = p["hdf"]["median_per_file"] / p["vzarr"]["median_per_file"]
        out += ["| parser call | median per file (ms) | first call (ms) | all files (s) |",
                "|---|---:|---:|---:|"]
        for k, name in (("vzarr", "vzarr.virtualizarr.Parser"), ("hdf", "VirtualiZarr HDFParser")):
            out.append(f"| {name} | {p[k]['median_per_file'] * 1e3:.2f} | "
                       f"{p[k]['first_call'] * 1e3:.1f} | {p[k]['total']:.2f} |")
        out += ["", f"Parser call: vzarr {ratio:.1f}x faster per file (target >= 10x).", ""]
    if "mfdataset" in res:
        m = res["mfdataset"]
        out += ["| open_virtual_mfdataset with | in-process (s) | process wall (s) | peak RSS (MiB) |",
                "|---|---:|---:|---:|"]
        for k, name in (("vzarr", "vzarr's Parser"), ("hdf", "HDFParser")):
            out.append(f"| {name} | {m[k]['open']:.2f} | {m[k]['wall']:.2f} | "
                       f"{m[k]['rss'] / 2**20:.0f} |")
        out.append("")
    for case, title in (("build", "local"), ("s3build", "S3 behind the proxy")):
        if case not in res:
            continue
        b = res[case]
        req = case == "s3build"
        out += [f"| build, {title} | process wall (s) | in-process (s) | imports (s) | CPU (s) | "
                f"peak RSS (MiB) |" + (" requests | MB fetched |" if req else ""),
                "|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if req else "")]
        for k in ("vzarr.build", "virtualizarr"):
            r = b[k]
            row = (f"| {k} | {r['wall']:.2f} | {r['in_process']:.2f} | {r['imports']:.2f} | "
                   f"{r['cpu']:.2f} | {r['rss'] / 2**20:.0f} |")
            if req:
                row += f" {r['requests']:.0f} | {r['bytes_fetched'] / 1e6:.1f} |"
            out.append(row)
        v, z = b["vzarr.build"], b["virtualizarr"]
        out += ["", f"Build, {title}: vzarr.build {z['wall'] / v['wall']:.1f}x faster end to end "
                f"(process), {z['in_process'] / v['in_process']:.1f}x in-process; "
                f"{z['rss'] / v['rss']:.1f}x less peak memory (target >= 20x end to end).", ""]
    if "open" in res:
        o = res["open"]
        out += ["| lazy Dataset over archive (a) | imports (s) | to a lazy Dataset (s) | "
                "read tas in full (s) | peak RSS (MiB) |", "|---|---:|---:|---:|---:|"]
        for k, name in (("vzarr", "vzarr.open_dataset"),
                        ("xarray", "xarray.open_mfdataset(parallel=True, engine=\"h5netcdf\")")):
            out.append(f"| {name} | {o[k]['imports']:.2f} | {o[k]['open']:.2f} | "
                       f"{o[k]['read_tas']:.2f} | {o[k]['rss'] / 2**20:.0f} |")
        out.append("")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        log(f"error: {e}")
        sys.exit(1)
