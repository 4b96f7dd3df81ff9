"""The object-storage catalog bench: `vzarr build` over catalogs of thousands of objects on a
concurrent S3 server (s3s-fs) behind the latency proxy (benches/compare/s3proxy.py), and the
peers on a subset of the same objects in the same run.

Started by benches/s3catalog/run (which installs s3s-fs, makes the venv and builds vzarr).

Cases, each a prefix of one bucket on s3s-fs:
  nc4      N daily NetCDF4 files (gen.py), concatenated along time
  nc3      M hourly NetCDF3 files, concatenated along time
  nc4-sub  the first P files of nc4: vzarr, kerchunk + s3fs and VirtualiZarr + obstore
           (open_virtual_mfdataset with a thread pool), at the first delay above 0 only

Delayed ACKs are turned off on 127.0.0.1 while the server runs, where the bench may (root):
s3s-fs does not set TCP_NODELAY, so without that every response on a kept connection waits
40 ms for the ACK of its head (benches/compare/remote.py, loopback_quickack).

Settings: vzarr straight at s3s-fs (no proxy: what the proxy itself costs), then through the
proxy at each --delays value (ms added before every request). At the largest delay, a sweep
of --sweep-jobs scan threads shows how the wall time follows the scans in flight.

For each vzarr run: wall, CPU and peak RSS of the process (GNU time); requests by class and
bytes fetched (the proxy's counters); bytes the scans parsed (vzarr's --summary-json
`bytes_parsed`: how far into each object its scan read); the scans in flight (`jobs`); and
the latency floor for that concurrency: (object requests / scans in flight + listing pages)
x delay, i.e. the time the requests would take if nothing but their latency counted and the
scans in flight never waited for anything else. Every vzarr output is checked: equal, with
URLs mapped back to the local paths, to a local build of the same files. The peers' outputs
must exist; their figures are what they take.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMPARE = HERE.parent / "compare"
sys.path.insert(0, str(COMPARE))
import bench as cb  # noqa: E402  (run_process, machine, versions, request_counts, ...)
import remote  # noqa: E402

S3S_FS_VERSION = cb.S3S_FS_VERSION


def log(msg: str) -> None:
    print(f"s3catalog: {msg}", file=sys.stderr, flush=True)


class BenchError(SystemExit):
    def __init__(self, msg: str):
        super().__init__(f"s3catalog: error: {msg}")


def generate(a, data: Path) -> dict[str, list[str]]:
    t0 = time.perf_counter()
    r = subprocess.run([a.python, str(HERE / "gen.py"), str(data), str(a.files), str(a.nc3),
                        str(os.cpu_count() or 1)])
    if r.returncode != 0:
        raise BenchError("gen.py failed")
    cases = {"nc4": sorted(str(p) for p in (data / "nc4").glob("day*.nc"))[: a.files],
             "nc3": sorted(str(p) for p in (data / "nc3").glob("hours*.nc"))[: a.nc3]}
    cases["nc4-sub"] = cases["nc4"][: a.peers]
    log(f"catalogs ready in {time.perf_counter() - t0:.0f} s: {a.files} NetCDF4 "
        f"({sum(os.path.getsize(f) for f in cases['nc4']) / 1e6:.0f} MB), {a.nc3} NetCDF3 "
        f"({sum(os.path.getsize(f) for f in cases['nc3']) / 1e6:.0f} MB)")
    return cases


def local_build(a, name: str, files: list[str], out: Path) -> dict:
    """vzarr's build of the local files, the reference the remote outputs are checked with."""
    lst = out.with_suffix(".files")
    lst.write_text("".join(f + "\n" for f in files))
    r = subprocess.run([a.vzarr, "build", "--catalog", str(lst), "--concat-dim", "time",
                        "-o", str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError(f"local build of {name} failed: {r.stderr[-500:]}")
    return json.loads(out.read_text())


def same_as_local(out: Path, local: dict, prefix: str, folder: str) -> str | None:
    """None if the remote output's references equal the local one's once its URLs name the
    local files (the provenance differs: ETags there, fingerprints here)."""
    text = out.read_text().replace(prefix, "file://" + folder.rstrip("/") + "/")
    a, b = json.loads(text).get("refs", {}), local.get("refs", {})
    if a == b:
        return None
    diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return f"{len(diff)} keys differ from the local build, e.g. {diff[:3]}"


def vzarr_run(a, s3: remote.S3Bench, direct: bool, case: str, prefix: str, out_dir: Path,
              tag: str, jobs: int | None = None) -> dict:
    out = out_dir / f"vzarr-{tag}.json"
    summary = out_dir / f"vzarr-{tag}.summary.json"
    out.unlink(missing_ok=True)
    argv = [a.vzarr, "build", prefix, "--concat-dim", "time", "-o", str(out),
            "--summary-json", str(summary)]
    if jobs:
        argv += ["--jobs", str(jobs)]
    env = s3.env()
    if direct:
        env["AWS_ENDPOINT_URL"] = s3.direct
    runs = []
    for i in range(a.runs):
        s3.reset()
        r = cb.run_process(argv, out_dir / f"vzarr-{tag}.run{i}", env=env)
        if r["rc"] != 0:
            raise BenchError(f"vzarr failed on {case} ({tag}): {cb.brief_error(r['stderr'])}")
        r["requests"] = cb.request_counts(s3.stats())
        r["summary"] = json.loads(summary.read_text())
        del r["stdout"], r["stderr"]
        runs.append(r)
    return {"runs": runs, "output": out, "output_bytes": out.stat().st_size}


def figures(runs: list[dict], files: int, delay_ms: float) -> dict:
    """The medians of vzarr's runs and the figures derived from them."""
    med = lambda f: statistics.median(f(r) for r in runs)  # noqa: E731
    q = {k: med(lambda r, k=k: r["requests"][k]) for k in runs[0]["requests"]}
    s = runs[0]["summary"]
    jobs = s.get("jobs") or 0
    object_requests = q["GET"] + q["HEAD"]
    floor = (object_requests / max(jobs, 1) + q["LIST"]) * delay_ms / 1000
    wall = med(lambda r: r["wall"])
    parsed = med(lambda r: r["summary"].get("bytes_parsed", 0))
    return {
        "wall": wall, "cpu": med(lambda r: r["cpu"]), "rss": med(lambda r: r["rss"]),
        "requests": q, "requests_per_file": q["total"] / files,
        "round_trips_per_file": object_requests / files, "list_pages": q["LIST"],
        "bytes_per_file": q["bytes_fetched"] / files, "parsed_per_file": parsed / files,
        "fetched_over_parsed": q["bytes_fetched"] / parsed if parsed else None,
        "cpu_ms_per_file": 1000 * med(lambda r: r["cpu"]) / files, "jobs": jobs,
        "floor": floor, "wall_over_floor": wall / floor if floor else None,
        "server_ms_per_request": 1000 * q["server_seconds"] / max(q["total"], 1),
    }


def peer_run(a, s3: remote.S3Bench, tool: str, prefix: str, out_dir: Path) -> dict:
    out = out_dir / f"{tool}.json"
    out.unlink(missing_ok=True)
    argv = [a.python, str(COMPARE / "tools.py"), tool, "--format", "hdf5", "--concat-dim",
            "time", "--s3-endpoint", s3.endpoint, "-o", str(out)]
    if tool == "kerchunk":
        argv += ["--identical", "lat,lon"]
    else:
        argv += ["--threads", str(a.peer_threads)]
    s3.reset()
    r = cb.run_process(argv + [prefix], out_dir / f"{tool}.run0", env=s3.env())
    r["requests"] = cb.request_counts(s3.stats())
    if r["rc"] != 0 or not out.exists():
        return {"status": "failed", "error": cb.brief_error(r["stderr"]), "wall": r["wall"]}
    try:
        phases = json.loads(r["stdout"].strip().splitlines()[-1])
    except (ValueError, IndexError):
        phases = None
    return {"status": "ok", "wall": r["wall"], "cpu": r["cpu"], "rss": r["rss"],
            "requests": r["requests"], "output_bytes": out.stat().st_size, "phases": phases}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--vzarr", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--s3s-fs", required=True)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--nc3", type=int, default=1_000)
    ap.add_argument("--peers", type=int, default=500)
    ap.add_argument("--peer-threads", type=int, default=16)
    ap.add_argument("--delays", default="20,100")
    ap.add_argument("--sweep-jobs", default="")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--no-peers", action="store_true")
    a = ap.parse_args()
    delays = [float(d) for d in a.delays.split(",") if d.strip()]
    sweep = [int(j) for j in a.sweep_jobs.split(",") if j.strip()]
    work = Path(a.work).resolve()
    res_dir = work / "results"
    res_dir.mkdir(parents=True, exist_ok=True)
    cases = generate(a, work / "archives")
    res = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "machine": cb.machine(), "versions": cb.versions(a.vzarr), "runs": a.runs,
           "server": f"s3s-fs {S3S_FS_VERSION}",
           "catalogs": {k: {"files": len(v), "bytes": sum(os.path.getsize(f) for f in v)}
                        for k, v in cases.items()},
           "vzarr": [], "peers": {}}
    locals_ = {c: local_build(a, c, cases[c], res_dir / f"local-{c}.json")
               for c in ("nc4", "nc3", "nc4-sub")}

    def record(s3, direct, case, tag, delay, jobs=None):
        prefix = f"s3://{remote.BUCKET}/{case}/"
        out_dir = res_dir / case
        out_dir.mkdir(exist_ok=True)
        r = vzarr_run(a, s3, direct, case, prefix, out_dir, tag, jobs)
        bad = same_as_local(r["output"], locals_[case], prefix,
                            os.path.dirname(cases[case][0]))
        if bad:
            raise BenchError(f"vzarr's output of {case} ({tag}) differs: {bad}")
        f = figures(r["runs"], len(cases[case]), delay)
        f.update(case=case, setting=tag, delay_ms=delay, direct=direct,
                 output_bytes=r["output_bytes"], asked_jobs=jobs)
        res["vzarr"].append(f)
        log(f"  vzarr {case} {tag}: {f['wall']:.2f} s (floor {f['floor']:.2f} s), "
            f"{f['jobs']} scans in flight, {f['requests_per_file']:.2f} requests/file, "
            f"{f['bytes_per_file'] / 1e3:.1f} kB/file fetched for "
            f"{f['parsed_per_file'] / 1e3:.1f} kB parsed, CPU {f['cpu_ms_per_file']:.2f} ms/file, "
            f"peak {f['rss'] / 2**20:.0f} MiB")

    for delay in [0.0] + delays:
        with remote.S3Bench(work / "s3", delay_ms=delay, python=a.python,
                            s3s_fs=a.s3s_fs) as s3:
            for case in ("nc4", "nc3", "nc4-sub"):
                s3.upload(case, cases[case])
            log(f"s3s-fs at {s3.direct}, proxy +{delay:g} ms at {s3.endpoint}"
                + ("" if s3.quickack else "; delayed ACKs on 127.0.0.1 left on (not root): "
                   "responses on kept connections wait 40 ms (remote.loopback_quickack)"))
            res["quickack"] = s3.quickack
            if delay == 0:
                for case in ("nc4", "nc3"):
                    record(s3, True, case, "direct", 0.0)
            for case in ("nc4", "nc3"):
                record(s3, False, case, f"+{delay:g}ms", delay)
            if delay == max(delays, default=0) and sweep:
                for jobs in sweep:
                    record(s3, False, "nc4", f"+{delay:g}ms-jobs{jobs}", delay, jobs)
            if delay > 0 and delay == min(delays) and not a.no_peers:
                record(s3, False, "nc4-sub", f"+{delay:g}ms", delay)
                prefix = f"s3://{remote.BUCKET}/nc4-sub/"
                for tool in ("kerchunk", "virtualizarr"):
                    p = peer_run(a, s3, tool, prefix, res_dir / "nc4-sub")
                    p["delay_ms"] = delay
                    res["peers"][tool] = p
                    log(f"  {tool} nc4-sub +{delay:g}ms: {p['status']} {p['wall']:.1f} s"
                        + (f", {p['requests']['total']} requests" if p["status"] == "ok"
                           else f": {p.get('error', '')[:200]}"))
    res["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    out = work / "results.json"
    out.write_text(json.dumps(res, indent=1, default=str))
    report = tables(res)
    (work / "results.md").write_text(report)
    print(report)
    log(f"results: {out} and {work / 'results.md'}")
    return 0


def tables(res: dict) -> str:
    m = res["machine"]
    lines = [f"{res['date']}, {res['server']} on 127.0.0.1 behind s3proxy.py (delayed ACKs "
             f"on 127.0.0.1 {'off' if res.get('quickack') else 'ON: 40 ms a response'}); "
             f"{m['cpu']}, {m['cores']} cores; median of {res['runs']} run(s)", ""]
    for k, c in res["catalogs"].items():
        lines.append(f"- {k}: {c['files']:,} files, {c['bytes'] / 1e6:.0f} MB")
    lines += ["", "| case | setting | wall (s) | floor (s) | wall / floor | scans in flight "
              "| requests / file | round trips / file | LIST pages | fetched / file "
              "| parsed / file | fetched / parsed | CPU ms / file | peak RSS (MiB) "
              "| server ms / request |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for f in res["vzarr"]:
        wf = f"{f['wall_over_floor']:.2f}" if f["wall_over_floor"] else ""
        fp = f"{f['fetched_over_parsed']:.2f}" if f["fetched_over_parsed"] else ""
        lines.append(
            f"| {f['case']} | {f['setting']} | {f['wall']:.2f} | {f['floor']:.2f} | {wf} | "
            f"{f['jobs']} | {f['requests_per_file']:.2f} | {f['round_trips_per_file']:.2f} | "
            f"{f['list_pages']:.0f} | {f['bytes_per_file'] / 1e3:.1f} kB | "
            f"{f['parsed_per_file'] / 1e3:.1f} kB | {fp} | {f['cpu_ms_per_file']:.2f} | "
            f"{f['rss'] / 2**20:.0f} | {f['server_ms_per_request']:.2f} |")
    if res["peers"]:
        sub = [f for f in res["vzarr"] if f["case"] == "nc4-sub"]
        v = sub[0] if sub else None
        lines += ["", "| nc4-sub | delay | wall (s) | CPU (s) | peak RSS (MiB) | requests "
                  "| per file | bytes fetched | vzarr speed-up |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        if v:
            lines.append(f"| vzarr | +{v['delay_ms']:g} ms | {v['wall']:.2f} | "
                         f"{v['cpu']:.2f} | {v['rss'] / 2**20:.0f} | "
                         f"{v['requests']['total']:.0f} | {v['requests_per_file']:.2f} | "
                         f"{cb.fmt_bytes(v['requests']['bytes_fetched'])} | |")
        n = res["catalogs"]["nc4-sub"]["files"]
        for tool, p in res["peers"].items():
            if p["status"] != "ok":
                lines.append(f"| {tool} | +{p['delay_ms']:g} ms | {p['status']}: "
                             f"{p.get('error', '')[:120]} | | | | | | |")
                continue
            sp = f"{p['wall'] / v['wall']:.1f}x" if v else ""
            lines.append(f"| {tool} | +{p['delay_ms']:g} ms | {p['wall']:.2f} | {p['cpu']:.2f} | "
                         f"{p['rss'] / 2**20:.0f} | {p['requests']['total']:,} | "
                         f"{p['requests']['total'] / n:.2f} | "
                         f"{cb.fmt_bytes(p['requests']['bytes_fetched'])} | {sp} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
