"""Runs vzarr, kerchunk and VirtualiZarr on the generated archives and compares them.

Started by benches/compare/run (which builds vzarr and the venv); see BENCHMARKS.md.

Every tool run is a separate process. Its wall time is measured from spawn to exit, its
peak memory is the process's maximum resident set size and its CPU time user + system time,
both from GNU time (getrusage of its child). Each figure is the median of --runs runs;
the runs of the tools alternate (vzarr, kerchunk, VirtualiZarr, vzarr, ...) so that a
change of machine load hits all of them alike. The archives sit in the page cache (they
are read once before the first run), so the figures measure the tools, not the disk.

The object-storage cases (--only s3a,s3m,s3c; off by default) upload archives to an S3
server on 127.0.0.1 (s3s-fs, concurrent; moto when --s3s-fs is not given) and run every
tool against a proxy in front of it (s3proxy.py, through
remote.py) that adds a fixed delay to every request and counts requests and bytes; the
counters are reset before each tool run and read after it. A vzarr that refuses a remote
format ("not yet supported") is recorded as refused and the peers are still measured.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen  # noqa: E402
import remote  # noqa: E402

TOOLS = ("vzarr", "kerchunk", "virtualizarr")
ARCHIVES = {  # name -> (short label, what is asked)
    "a_nc4_daily_t1": ("a", "NetCDF4, time chunk 1"),
    "b_hdf5_chunks": ("b", "one HDF5 file, many chunks"),
    "c_nc3_records": ("c", "NetCDF3, record variables"),
    "d_nc4_daily_month": ("d", "NetCDF4, month chunks (rectilinear)"),
    "m_nc4_monthly24": ("m", "NetCDF4, 24 monthly files, time chunk 1"),
}
# The object-storage cases: key -> the archive uploaded. Not run unless named in --only.
REMOTE = {"s3a": "a_nc4_daily_t1", "s3m": "m_nc4_monthly24", "s3c": "c_nc3_records"}
REMOTE_TARGETS = {"speedup": 20.0, "requests_per_file": 2.0}  # issue 13, for s3a and s3m
NOT_YET = "not yet supported"  # vzarr's refusal of a format on object storage
TARGETS = {"kerchunk": {"time": 20.0, "rss": 5.0}, "virtualizarr": {"time": 10.0, "rss": 5.0}}
FLOOR_TARGET = 1.5
# vzarr inspect / the C H5Dchunk_iter floor (issue 13: the native scanner within 1.0x).
C_FLOOR_TARGET = 1.0
# Peak RSS above the process baseline per chunk reference at 1M references (issue 13).
BYTES_PER_REFERENCE = 24
GNU_TIME = "/usr/bin/time"
S3S_FS_VERSION = "0.14.1"  # benches/s3s-fs


class BenchError(SystemExit):
    def __init__(self, msg: str):
        super().__init__(f"bench: error: {msg}")


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


# --- running one process -------------------------------------------------------------------


def run_process(argv: list[str], log_base: Path, env: dict | None = None) -> dict:
    """Runs argv as its own process under GNU time; returns wall seconds (spawn to exit),
    peak RSS in bytes and CPU seconds of that process, its exit code, stdout and stderr.

    Peak RSS comes from GNU time (getrusage of its child): a child forked straight from
    this Python process would report this process's own RSS as its peak (Linux counts the
    pre-exec image), so a tiny parent is needed."""
    out_p, err_p, time_p = (log_base.parent / (log_base.name + ext)
                            for ext in (".out", ".err", ".time"))
    with open(out_p, "wb") as out, open(err_p, "wb") as err:
        t0 = time.perf_counter()
        rc = subprocess.call([GNU_TIME, "-f", "%M %U %S", "-o", str(time_p), *argv],
                             stdout=out, stderr=err, env=env)
        wall = time.perf_counter() - t0
    last = time_p.read_text().strip().splitlines()[-1].split()
    if len(last) != 3:
        raise BenchError(f"could not read GNU time's output {time_p}")
    return {"wall": wall, "rss": int(last[0]) * 1024, "cpu": float(last[1]) + float(last[2]),
            "rc": rc, "stdout": out_p.read_text(errors="replace"),
            "stderr": err_p.read_text(errors="replace")}


def brief_error(stderr: str) -> str:
    """The exception (or error line) a failed tool ended with, on one line."""
    lines = [l.rstrip() for l in stderr.splitlines() if l.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", lines[i]) or lines[i].startswith("error"):
            text = " ".join(l.strip() for l in lines[i:])
            return re.sub(r"\s+", " ", text)[:300]
    return re.sub(r"\s+", " ", " ".join(lines[-3:]))[:300] or "(nothing on stderr)"


# --- the command line of each tool ------------------------------------------------------------


def tool_argv(tool: str, arch: dict, out: Path, vzarr: str, python: str,
              s3: "remote.S3Bench | None" = None, prefix: str | None = None) -> list[str]:
    """The command line of one tool run. Local: vzarr gets the archive's directory, the peers
    its files. On object storage (s3 given): every tool gets the s3:// prefix, the peers
    list it themselves, and they are pointed at the proxy (vzarr through its environment)."""
    files = [prefix] if s3 else arch["files"]
    fmt = "nc3" if arch["kind"] == "nc3" else "hdf5"
    if tool == "vzarr":
        argv = [vzarr, "build"]
        if arch["concat_dim"]:
            argv += [prefix if s3 else os.path.dirname(files[0]), "--concat-dim",
                     arch["concat_dim"]]
        else:
            argv += files
        return argv + ["-o", str(out)]
    argv = [python, str(HERE / "tools.py"), tool, "--format", fmt, "-o", str(out)]
    if s3:
        argv += ["--s3-endpoint", s3.endpoint]
    if arch["concat_dim"]:
        argv += ["--concat-dim", arch["concat_dim"]]
        if tool == "kerchunk":
            argv += ["--identical", ",".join(arch["identical"])]
    return argv + files


def check_output(out: Path, archives_json: Path, name: str, python: str, logp: Path,
                 s3_endpoint: str | None = None) -> dict:
    extra = ["--s3-endpoint", s3_endpoint] if s3_endpoint else []
    r = run_process([python, str(HERE / "tools.py"), "check", *extra, str(out),
                     str(archives_json), name], logp)
    if r["rc"] != 0:
        return {"ok": False, "error": brief_error(r["stderr"])}
    return json.loads(r["stdout"].strip().splitlines()[-1])


def warm(files: list[str]) -> None:
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 22):
                pass


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


# --- the benchmark ----------------------------------------------------------------------------


def request_counts(stats: dict) -> dict:
    """The proxy's counters of one tool run, as the results keep them."""
    objects = stats["objects"]
    return {"total": stats["requests"], **stats["by_class"],
            "ranged_gets": stats["ranged_gets"], "bytes_fetched": stats["get_bytes"],
            "body_bytes": stats["body_bytes"], "objects": len(objects),
            "max_per_object": max(objects.values(), default=0),
            "errors": sum(n for k, n in stats["status"].items() if k[0] in "45"),
            "server_seconds": stats["upstream_seconds"]}


def bench_archive(name: str, arch: dict, a, res_dir: Path, archives_json: Path,
                  s3: "remote.S3Bench | None" = None, key: str | None = None,
                  prefix: str | None = None) -> dict:
    """Runs every tool a.runs times on one archive, local or (s3 given) on object storage
    under prefix, checks the first output of each, and returns the medians."""
    label, what = ARCHIVES[name]
    if s3:
        label, what = key, f"{what}, on S3 (+{s3.delay_ms:g} ms a request)"
    expect_fail = bool(arch.get("rectilinear"))
    log(f"({label}) {name}: {len(arch['files'])} file(s), {arch['bytes'] / 1e9:.2f} GB, "
        f"{arch['data_chunks']:,} data chunks" + (f", at {prefix}" if s3 else ""))
    if not s3:
        warm(arch["files"])
    out_dir = res_dir / (key or name)
    out_dir.mkdir(parents=True, exist_ok=True)
    result = {"label": label, "what": what, "files": len(arch["files"]),
              "bytes": arch["bytes"], "data_chunks": arch["data_chunks"], "tools": {}}
    if s3:
        result.update(archive=name, url=prefix, delay_ms=s3.delay_ms)
    tools = [t for t in TOOLS if t in a.tools]
    runs: dict[str, list[dict]] = {t: [] for t in tools}
    failed: dict[str, dict] = {}
    for i in range(a.runs):
        for tool in tools:
            if tool in failed:
                continue
            out = out_dir / f"{tool}.json"
            if out.exists():
                out.unlink()
            argv = tool_argv(tool, arch, out, a.vzarr, a.python, s3, prefix)
            if s3:
                s3.reset()
            r = run_process(argv, out_dir / f"{tool}.run{i}", env=s3.env() if s3 else None)
            if s3:
                r["requests"] = request_counts(s3.stats())
            if r["rc"] != 0 or not out.exists():
                err = brief_error(r["stderr"]) if r["rc"] != 0 else "no output written"
                if s3 and tool == "vzarr" and r["rc"] != 0 and NOT_YET in r["stderr"]:
                    failed[tool] = {"status": "refused", "error": err, "rc": r["rc"],
                                    "wall": r["wall"], "rss": r["rss"],
                                    "requests": r["requests"]}
                    log(f"  vzarr: refused after {r['requests']['total']} request(s): "
                        f"{err[:160]}")
                    continue
                if expect_fail and tool != "vzarr":
                    failed[tool] = {"status": "unable", "error": err, "rc": r["rc"],
                                    "wall": r["wall"], "rss": r["rss"]}
                    log(f"  {tool}: unable, as expected: {err[:160]}")
                    continue
                raise BenchError(f"{tool} failed on {name} (exit {r['rc']}): {err}\n"
                                 f"  command: {' '.join(argv[:8])} ...\n"
                                 f"  full log: {out_dir / f'{tool}.run{i}.err'}")
            r["output_bytes"] = out.stat().st_size
            if tool != "vzarr":
                try:
                    r["phases"] = json.loads(r["stdout"].strip().splitlines()[-1])
                except (ValueError, IndexError):
                    r["phases"] = None
            del r["stdout"], r["stderr"]
            runs[tool].append(r)
            log(f"  run {i + 1}/{a.runs} {tool}: {r['wall']:.2f} s, "
                f"{r['rss'] / 2**20:.0f} MiB" + (
                    f", {r['requests']['total']} requests, "
                    f"{fmt_bytes(r['requests']['bytes_fetched'])} fetched" if s3 else ""))
            if s3 and r["requests"]["errors"]:
                log(f"  note: {tool} got {r['requests']['errors']} error response(s) from S3")
            if i == 0:
                chk = check_output(out, archives_json, name, a.python,
                                   out_dir / f"{tool}.check", s3.direct if s3 else None)
                if not chk.get("ok"):
                    if tool == "vzarr":
                        raise BenchError(f"vzarr's output for {name} does not open or is "
                                         f"wrong: {chk['error']} ({out})")
                    if expect_fail:  # a peer that "succeeds" on (d) but writes wrong data
                        failed[tool] = {"status": "wrong output", "error": chk["error"]}
                        runs[tool].clear()
                        continue
                    raise BenchError(f"{tool}'s output for {name} is wrong: {chk['error']}")
                runs[tool][-1]["check"] = chk
    for tool in tools:
        if tool in failed:
            result["tools"][tool] = failed[tool]
            continue
        rs = runs[tool]
        t = {"status": "ok", "runs": rs, "wall": median_of(rs, "wall"),
             "rss": median_of(rs, "rss"), "cpu": median_of(rs, "cpu"),
             "output_bytes": rs[-1]["output_bytes"], "zarr_format": rs[0]["check"]["zarr_format"]}
        t["chunks_per_s"] = arch["data_chunks"] / t["wall"]
        if s3:
            t["requests"] = {k: statistics.median(r["requests"][k] for r in rs)
                             for k in rs[0]["requests"]}
            t["requests_per_file"] = t["requests"]["total"] / len(arch["files"])
        if rs[0].get("phases"):
            t["phases"] = {k: statistics.median(r["phases"][k] for r in rs)
                           for k in rs[0]["phases"]}
        result["tools"][tool] = t
    v = result["tools"].get("vzarr")
    for tool in tools:
        t = result["tools"][tool]
        if tool != "vzarr" and t["status"] == "ok" and v and v["status"] == "ok":
            t["speedup"] = t["wall"] / v["wall"]
            t["memory_ratio"] = t["rss"] / v["rss"]
            if t.get("phases"):
                t["speedup_excl_imports"] = (t["wall"] - t["phases"]["imports"]) / v["wall"]
    return result


def bench_floor(name: str, arch: dict, a, res_dir: Path) -> dict:
    """vzarr inspect (whole process) against the HDF5 library's own cost of walking the chunk
    index: h5py's Dataset.id.chunk_iter with a trivial Python callback (the floor the issue
    names), and, when it could be built, H5Dchunk_iter from C against the very HDF5 build
    vzarr links (floor.c). Floors are measured in-process (open + iterate; interpreter start
    and imports excluded) and as whole processes."""
    out_dir = res_dir / name
    f = arch["files"][0]
    floors = {"h5py": [a.python, str(HERE / "tools.py"), "floor", f, arch["dataset"]]}
    if a.h5floor:
        floors["c"] = [a.h5floor, f, "/" + arch["dataset"]]
    inspect, base, runs = [], [], {k: [] for k in floors}
    tiny = str(HERE.parent.parent / "fixtures" / "layouts_v1.h5")
    for i in range(a.runs):
        # The process baseline for memory per reference: the same command on a tiny file.
        r = run_process([a.vzarr, "inspect", tiny], out_dir / f"inspect-tiny.run{i}")
        if r["rc"] != 0:
            raise BenchError(f"vzarr inspect failed on {tiny}: {brief_error(r['stderr'])}")
        base.append(r)
        r = run_process([a.vzarr, "inspect", f], out_dir / f"inspect.run{i}")
        if r["rc"] != 0:
            raise BenchError(f"vzarr inspect failed on {f}: {brief_error(r['stderr'])}")
        inspect.append(r)
        msg = [f"vzarr inspect {r['wall']:.3f} s"]
        for k, argv in floors.items():
            r = run_process(argv, out_dir / f"floor-{k}.run{i}")
            if r["rc"] != 0:
                raise BenchError(f"floor {k} failed on {f}: {brief_error(r['stderr'])}")
            ph = json.loads(r["stdout"].strip().splitlines()[-1])
            if ph["chunks"] != arch["data_chunks"]:
                raise BenchError(f"floor {k} saw {ph['chunks']} chunks, expected "
                                 f"{arch['data_chunks']}")
            r["phases"] = ph
            runs[k].append(r)
            msg.append(f"{k} floor {ph['open'] + ph['iterate']:.3f} s")
        log(f"  floor run {i + 1}/{a.runs}: " + ", ".join(msg))
    vi = median_of(inspect, "wall")
    rss, rss0 = median_of(inspect, "rss"), median_of(base, "rss")
    res = {"chunks": arch["data_chunks"], "vzarr_inspect_wall": vi,
           "vzarr_inspect_rss": rss, "vzarr_baseline_rss": rss0,
           "bytes_per_reference": (rss - rss0) / arch["data_chunks"], "floors": {}}
    for k, rs in runs.items():
        fl = statistics.median(r["phases"]["open"] + r["phases"]["iterate"] for r in rs)
        fw = median_of(rs, "wall")
        res["floors"][k] = {"open_iterate": fl, "process_wall": fw,
                            "hdf5": rs[0]["phases"]["hdf5"], "ratio": vi / fl,
                            "ratio_process": vi / fw}
    res["ratio"] = res["floors"]["h5py"]["ratio"]
    return res


# --- report ------------------------------------------------------------------------------------


def fmt_bytes(n: float) -> str:
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n:.0f} B"


def fmt_chunks(n: float) -> str:
    return f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n / 1e3:.1f} k" if n >= 1e3 else f"{n:.0f}"


def tables(res: dict) -> str:
    lines = ["| archive | tool | wall (s) | CPU (s) | peak RSS (MiB) | output | chunks/s "
             "| vzarr speed-up | vzarr memory ratio |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in res["archives"].items():
        head = (f"({r['label']}) {r['what']}: {r['files']} file(s), {fmt_bytes(r['bytes'])}, "
                f"{r['data_chunks']:,} chunks")
        first = True
        for tool, t in r["tools"].items():
            cell = head if first else ""
            first = False
            if t["status"] != "ok":
                lines.append(f"| {cell} | {tool} | {t['status']}: {t['error'][:140]} "
                             "| | | | | | |")
                continue
            sp = f"{t['speedup']:.1f}x" if "speedup" in t else ""
            if "speedup_excl_imports" in t:
                sp += f" ({t['speedup_excl_imports']:.1f}x)"
            mr = f"{t['memory_ratio']:.1f}x" if "memory_ratio" in t else ""
            lines.append(f"| {cell} | {tool} | {t['wall']:.3f} | {t['cpu']:.2f} | "
                         f"{t['rss'] / 2**20:.0f} | {fmt_bytes(t['output_bytes'])} | "
                         f"{fmt_chunks(t['chunks_per_s'])} | {sp} | {mr} |")
    out = "\n".join(lines)
    ph = ["| archive | peer | imports | scan | combine | write | (seconds, in-process, "
          "median) |", "|---|---|---:|---:|---:|---:|---|"]
    for name, r in res["archives"].items():
        for tool, t in r["tools"].items():
            if t.get("phases"):
                p = t["phases"]
                ph.append(f"| ({r['label']}) | {tool} | {p['imports']:.2f} | {p['scan']:.2f} | "
                          f"{p['combine']:.2f} | {p['write']:.2f} | |")
    if len(ph) > 2:
        out += "\n\n" + "\n".join(ph)
    if res.get("floor"):
        f = res["floor"]
        names = {"h5py": "h5py `Dataset.id.chunk_iter`, trivial Python callback",
                 "c": "C `H5Dchunk_iter`, counting callback (floor.c)"}
        out += (f"\n\n| (b) listing {f['chunks']:,} chunks | HDF5 | open + iterate (s) "
                "| whole process (s) | vzarr inspect / floor (in-process) "
                "| vzarr inspect / floor (whole process) |\n|---|---|---:|---:|---:|---:|\n"
                f"| vzarr inspect | | | {f['vzarr_inspect_wall']:.3f} | | |\n")
        mem = (f"\n\nMemory per reference: `vzarr inspect` peaks at "
               f"{f['vzarr_inspect_rss'] / 2**20:.1f} MiB on the {f['chunks']:,}-chunk file and "
               f"{f['vzarr_baseline_rss'] / 2**20:.1f} MiB on a small fixture: "
               f"{f['bytes_per_reference']:.1f} bytes per reference.")
        for k, fl in f["floors"].items():
            out += (f"| floor: {names[k]} | {fl['hdf5']} | {fl['open_iterate']:.3f} | "
                    f"{fl['process_wall']:.3f} | {fl['ratio']:.2f} | "
                    f"{fl['ratio_process']:.2f} |\n")
        out = out.rstrip("\n") + mem
    return out


def fmt_count(n: float) -> str:
    return f"{n:,.0f}" if n == int(n) else f"{n:,.1f}"


def remote_tables(res: dict) -> str:
    """The object-storage cases: times, requests and bytes through the proxy, and the peers'
    phases."""
    lines = ["| case | tool | wall (s) | CPU (s) | peak RSS (MiB) | output | requests "
             "| per file | GET / HEAD / LIST / other | bytes fetched | server ms/request "
             "| vzarr speed-up |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for key, r in res["remote"].items():
        head = (f"({key}) {r['what']}: {r['files']} file(s), {fmt_bytes(r['bytes'])}, "
                f"{r['data_chunks']:,} chunks")
        first = True
        for tool, t in r["tools"].items():
            cell = head if first else ""
            first = False
            if t["status"] != "ok":
                q = t.get("requests")
                after = f" (after {q['total']} requests)" if q else ""
                lines.append(f"| {cell} | {tool} | {t['status']}{after}: {t['error'][:140]} "
                             "| | | | | | | | | |")
                continue
            q = t["requests"]
            sp = f"{t['speedup']:.1f}x" if "speedup" in t else ""
            if "speedup_excl_imports" in t:
                sp += f" ({t['speedup_excl_imports']:.1f}x)"
            lines.append(
                f"| {cell} | {tool} | {t['wall']:.3f} | {t['cpu']:.2f} | "
                f"{t['rss'] / 2**20:.0f} | {fmt_bytes(t['output_bytes'])} | "
                f"{fmt_count(q['total'])} | {t['requests_per_file']:.2f} | "
                f"{fmt_count(q['GET'])} / {fmt_count(q['HEAD'])} / {fmt_count(q['LIST'])} / "
                f"{fmt_count(q['OTHER'])} | {fmt_bytes(q['bytes_fetched'])} | "
                f"{1000 * q['server_seconds'] / max(q['total'], 1):.1f} | {sp} |")
    out = "\n".join(lines)
    ph = ["| case | peer | imports | list + scan | combine | write | (seconds, in-process, "
          "median) |", "|---|---|---:|---:|---:|---:|---|"]
    for key, r in res["remote"].items():
        for tool, t in r["tools"].items():
            if t.get("phases"):
                p = t["phases"]
                ph.append(f"| ({key}) | {tool} | {p['imports']:.2f} | {p['scan']:.2f} | "
                          f"{p['combine']:.2f} | {p['write']:.2f} | |")
    if len(ph) > 2:
        out += "\n\n" + "\n".join(ph)
    return out


def remote_targets(res: dict) -> str:
    """Issue 13's object-storage targets on the NetCDF4 cases: vzarr >= 20x faster than each
    peer end to end and <= 2 requests per file."""
    tg = REMOTE_TARGETS
    lines = ["| case | target | measured | met |", "|---|---|---:|---|"]
    if not any(k in res["remote"] for k in ("s3a", "s3m")):
        return ""
    for key in ("s3a", "s3m"):
        r = res["remote"].get(key)
        if not r:
            continue
        v = r["tools"].get("vzarr", {})
        if v.get("status") != "ok":
            lines.append(f"| ({key}) | vzarr >= {tg['speedup']:.0f}x faster than each peer, "
                         f"<= {tg['requests_per_file']:.0f} requests per file | "
                         f"not measured: vzarr {v.get('status', 'not run')} | no |")
            continue
        for tool, t in r["tools"].items():
            if tool == "vzarr" or t["status"] != "ok":
                continue
            ok = t["speedup"] >= tg["speedup"]
            lines.append(f"| ({key}) | speed-up over {tool} >= {tg['speedup']:.0f}x | "
                         f"{t['speedup']:.1f}x | {'yes' if ok else '**no**'} |")
        ok = v["requests_per_file"] <= tg["requests_per_file"]
        lines.append(f"| ({key}) | vzarr requests per file <= {tg['requests_per_file']:.0f} | "
                     f"{v['requests_per_file']:.2f} | {'yes' if ok else '**no**'} |")
    return "\n".join(lines)


def targets(res: dict) -> str:
    lines = ["| archive | peer | speed-up (target) | memory ratio (target) | met |",
             "|---|---|---:|---:|---|"]
    for name in ("a_nc4_daily_t1", "c_nc3_records"):
        r = res["archives"].get(name)
        if not r:
            continue
        for tool, tg in TARGETS.items():
            t = r["tools"].get(tool)
            if not t or t["status"] != "ok":
                continue
            ok = t["speedup"] >= tg["time"] and t["memory_ratio"] >= tg["rss"]
            lines.append(f"| ({r['label']}) | {tool} | {t['speedup']:.1f}x (>= {tg['time']:.0f}x) "
                         f"| {t['memory_ratio']:.1f}x (>= {tg['rss']:.0f}x) | "
                         f"{'yes' if ok else '**no**'} |")
    if res.get("floor"):
        f = res["floor"]
        for k, fl in f["floors"].items():
            target = FLOOR_TARGET if k == "h5py" else C_FLOOR_TARGET
            ok = fl["ratio"] <= target
            what = "h5py chunk_iter floor" if k == "h5py" else "C H5Dchunk_iter (stricter)"
            lines.append(f"| (b) | {what} | vzarr/floor {fl['ratio']:.2f} (<= {target}) "
                         f"| | {'yes' if ok else '**no**'} |")
        if "bytes_per_reference" in f:
            ok = f["bytes_per_reference"] <= BYTES_PER_REFERENCE
            lines.append(f"| (b) | memory per reference | | {f['bytes_per_reference']:.1f} B "
                         f"(<= {BYTES_PER_REFERENCE} B) | {'yes' if ok else '**no**'} |")
    return "\n".join(lines)


def machine() -> dict:
    cpu = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = 0
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal"):
            mem = int(line.split()[1]) * 1024
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_bytes": mem,
            "kernel": platform.release(), "os": platform.platform(),
            "loadavg_start": open("/proc/loadavg").read().split()[:3]}


def versions(vzarr: str) -> dict:
    v = {}
    r = subprocess.run([vzarr, "--version"], capture_output=True, text=True)
    v["vzarr"] = r.stdout.strip() or "unknown"
    try:
        rev = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(HERE), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True).stdout
        v["vzarr_git"] = rev + ("+dirty" if dirty.strip() else "")
    except OSError:
        pass
    for p in ("kerchunk", "virtualizarr", "zarr", "xarray", "h5py", "netCDF4", "numcodecs",
              "fsspec", "numpy", "obstore", "obspec-utils", "scipy", "ujson", "s3fs",
              "aiobotocore", "botocore", "boto3", "moto"):
        try:
            v[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            v[p] = None
    import h5py
    v["hdf5 (h5py)"] = h5py.version.hdf5_version
    v["python"] = platform.python_version()
    return v


def bench_remote(keys: list[str], archives: dict, a, work: Path, res_dir: Path,
                 archives_json: Path) -> dict:
    """The object-storage cases: one S3 server and proxy for all of them (stopped at the
    end, also on errors), each archive uploaded once, then bench_archive against it."""
    out = {}
    with remote.S3Bench(work / "s3", delay_ms=a.delay_ms, python=a.python,
                        s3s_fs=a.s3s_fs) as s3:
        log(f"S3: {s3.server_name} at {s3.direct}, proxy at {s3.endpoint} "
            f"(+{a.delay_ms:g} ms a request)")
        prefixes, t0, nbytes = {}, time.perf_counter(), 0
        for name in dict.fromkeys(REMOTE[k] for k in keys):
            prefixes[name] = s3.upload(name, archives[name]["files"])
            nbytes += archives[name]["bytes"]
        up = time.perf_counter() - t0
        log(f"S3: uploaded {fmt_bytes(nbytes)} in {up:.0f} s")
        for key in keys:
            name = REMOTE[key]
            out[key] = bench_archive(name, archives[name], a, res_dir, archives_json, s3=s3,
                                     key=key, prefix=prefixes[name])
        out["_setup"] = {"delay_ms": a.delay_ms, "bucket": remote.BUCKET,
                         "uploaded_bytes": nbytes, "upload_seconds": up,
                         "server": (f"s3s-fs {S3S_FS_VERSION}" if a.s3s_fs
                                    else f"moto {metadata.version('moto')}")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--vzarr", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="a,b,c,d",
                    help="archives to run, e.g. a,c; the object-storage cases are "
                    + ",".join(REMOTE) + " (not run unless named)")
    ap.add_argument("--delay-ms", type=float, default=20.0,
                    help="latency the S3 proxy adds to every request (default 20)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--json", help="where to write the results (default WORK/results.json)")
    ap.add_argument("--h5floor", help="floor.c built against vzarr's HDF5 (optional)")
    ap.add_argument("--s3s-fs", help="the s3s-fs binary (benches/s3s-fs) to serve the "
                    "object-storage cases; moto when not given")
    a = ap.parse_args()
    a.tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    for t in a.tools:
        if t not in TOOLS:
            raise BenchError(f"unknown tool {t!r}; choose from {', '.join(TOOLS)}")
    if "vzarr" not in a.tools:
        raise BenchError("vzarr must be among --tools (the ratios are relative to it)")
    if not os.access(GNU_TIME, os.X_OK):
        raise BenchError(f"{GNU_TIME} (GNU time) is needed to measure peak memory: "
                         "apt-get install time")
    only = {s.strip() for s in a.only.split(",") if s.strip()}
    labels = {v[0]: k for k, v in ARCHIVES.items()}
    for s in only:
        if s not in labels and s not in REMOTE:
            raise BenchError(f"unknown case {s!r} in --only; choose from "
                             f"{', '.join(list(labels) + list(REMOTE))}")
    local = [labels[s] for s in labels if s in only]
    remote_keys = [k for k in REMOTE if k in only]
    if a.runs < 1:
        raise BenchError("--runs must be >= 1")
    work = Path(a.work).resolve()
    data_dir, res_dir = work / "archives", work / "results"

    log(f"generating archives in {data_dir} ({'quick' if a.quick else 'full'} size)")
    t0 = time.perf_counter()
    archives = gen.generate(data_dir, a.quick, os.cpu_count() or 1,
                            set(local) | {REMOTE[k] for k in remote_keys})
    log(f"archives ready ({time.perf_counter() - t0:.0f} s)")
    archives_json = data_dir / "archives.json"
    shutil.rmtree(res_dir, ignore_errors=True)
    res_dir.mkdir(parents=True)

    res = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "mode": "quick" if a.quick else "full", "runs": a.runs, "machine": machine(),
           "versions": versions(a.vzarr), "archives": {}}
    for name, arch in archives.items():
        if name not in local:
            continue
        res["archives"][name] = bench_archive(name, arch, a, res_dir, archives_json)
        if name == "b_hdf5_chunks":
            res["floor"] = bench_floor(name, arch, a, res_dir)
    if remote_keys:
        res["remote"] = bench_remote(remote_keys, archives, a, work, res_dir, archives_json)
        res["s3"] = res["remote"].pop("_setup")
    res["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]

    out_json = Path(a.json) if a.json else work / "results.json"
    out_json.write_text(json.dumps(res, indent=1))
    report = (f"{res['date']}, {res['mode']} archives, median of {a.runs} run(s); "
              f"{res['machine']['cpu']}, {res['machine']['cores']} cores, "
              f"{res['machine']['memory_bytes'] / 2**30:.0f} GiB\n")
    if res["archives"]:
        report += ("\n" + tables(res) + "\n\nSpeed-up = peer wall time / vzarr wall time (in "
                   "brackets: with the peer's Python imports taken out); memory ratio = peer "
                   "peak RSS / vzarr peak RSS.\n\n" + targets(res) + "\n")
    if res.get("remote"):
        s3 = res["s3"]
        report += (f"\nObject storage: {s3['server']} on 127.0.0.1 behind s3proxy.py, "
                   f"+{s3['delay_ms']:g} ms before every request; requests and bytes counted by "
                   "the proxy (bytes fetched = bodies of object GETs; server ms/request = "
                   "the server's own time to answer, on top of the added delay); the peers list the "
                   "prefix themselves.\n\n" + remote_tables(res) + "\n")
        tg = remote_targets(res)
        if tg:
            report += "\n" + tg + "\n"
    (work / "results.md").write_text(report)
    print(report)
    log(f"results: {out_json} and {work / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
