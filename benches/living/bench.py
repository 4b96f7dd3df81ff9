"""Living archives (issue 51): one-day appends onto the daily catalog of benches/scale,
against a full build, as reference JSON and as an Icechunk repository, and against
icechunk-python's own `set_virtual_refs` + commit and VirtualiZarr's `to_icechunk(...,
append_dim="time")` of the same day.

Started by benches/living/run (which builds vzarr and the venv and generates the catalog);
see BENCHMARKS.md. Every timed step is its own process under GNU time (benches/compare's
run_process: wall seconds from spawn to exit, peak RSS, CPU); the catalog is read once first
so that it sits in the page cache. The steps:

1. the scan cache filled by one build of the first D-K days (its time recorded as the cold
   build), then --runs full builds of those days from the warm cache, JSON and Icechunk
   alternating (median), and --runs full builds of all D days (the "full rebuild" an append
   replaces, and the reference the appended outputs must equal);
2. K one-day appends, `vzarr build --append DAY -o OUT --cache-dir C`, onto the JSON and onto
   the Icechunk repository (each with its own copy of the cache of the first D-K days, so the
   new day is scanned, as it is when it is new): seconds per append, the output's size (JSON)
   or the bytes the repository gained (the sizes of its files, before and after); every
   append must say "appended at the tail"; after the last, the JSON must be byte-identical
   (but for the provenance's record of the inputs, see `equal_json`) to
   the full build of the D days and the repository must read equal to the full build's
   (peers.py compare);
3. the first new day appended onto a copy of the Icechunk repository of the first D-K days,
   --runs times, alternating: by vzarr, by icechunk-python alone (peers.py icechunk: the
   day's 288 references, taken from vzarr's JSON of that day, written with
   `store.set_virtual_refs` after resizing the arrays, one commit) and by VirtualiZarr 2.8
   (peers.py virtualizarr: `open_virtual_dataset` with its HDF parser +
   `vds.vz.to_icechunk(store, append_dim="time")` + commit); each output read back
   (the appended day against netCDF4-python) before its figure counts.

results.md and results.json land in the work dir.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compare"))
from bench import BenchError, brief_error, log, machine, run_process, versions, warm  # noqa: E402

TAIL = "appended at the tail"
TARGETS = {"ratio": 0.2, "bytes_per_append": 2**20}  # issue 51's "done when"


def size(path: Path) -> int:
    """Bytes of a file, or of every file under a directory."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def parts(path: Path) -> dict:
    """Bytes under each top-level entry of a repository (manifests, snapshots, transactions,
    chunks, repo, overwritten: where Icechunk's local storage keeps the replaced copies of
    its `repo` object)."""
    return {p.name: size(p) for p in sorted(path.iterdir())}


def fresh(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def copy(src: Path, dst: Path) -> None:
    fresh(dst)
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copyfile(src, dst)


def run(argv: list, logp: Path, what: str) -> dict:
    """One process under GNU time; fails the bench if it fails."""
    argv = [str(x) for x in argv]
    r = run_process(argv, logp)
    if r["rc"] != 0:
        raise BenchError(f"{what} failed (exit {r['rc']}): {brief_error(r['stderr'])}\n"
                         f"  command: {' '.join(argv)}\n  full log: {logp}.err")
    return r


def brief(r: dict, **extra) -> dict:
    return {"wall": r["wall"], "rss": r["rss"], "cpu": r["cpu"], **extra}


def stats(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs),
            "first": xs[0], "last": xs[-1], "n": len(xs)}


def small_chunks(a) -> list:
    """Chunks smaller than the catalog's default (gen.py --chunk) are kept as they are: merged
    or inlined they would not be the references this benchmark counts."""
    return ["--small-chunks", "keep"] if a.chunk < 32 else []


def refs_per_day(a) -> int:
    return (384 // a.chunk) * (768 // a.chunk)


def build_argv(a, catalog: Path, out: Path, fmt: str, cache: Path) -> list:
    return [a.vzarr, "build", "--catalog", catalog, "--concat-dim", "time", "-o", out,
            "--format", fmt, "--cache-dir", cache, *small_chunks(a)]


def full_builds(a, work: Path, lists: dict, caches: dict, fmts: list[str]) -> dict:
    """--runs full builds of the first D-K days and of all D days from a warm scan cache, the
    formats alternating; the last outputs are kept (base.*, full.*)."""
    res: dict = {}
    for n, key in ((a.days - a.appends, "base"), (a.days, "full")):
        res[key] = {"days": n}
        runs: dict[str, list] = {f: [] for f in fmts}
        for i in range(a.runs):
            for fmt in fmts:
                out = work / f"{key}.{'json' if fmt == 'kerchunk' else 'icechunk'}"
                fresh(out)
                r = run(build_argv(a, lists[key], out, fmt, caches[key]),
                        work / "logs" / f"{key}-{fmt}.run{i}", f"full build ({key}, {fmt})")
                runs[fmt].append(brief(r, bytes=size(out)))
                log(f"  full build of {n} days, {fmt}: {r['wall']:.2f} s, "
                    f"{size(out) / 2**20:.1f} MiB")
        for fmt, rs in runs.items():
            res[key][fmt] = {"runs": rs, "wall": statistics.median(x["wall"] for x in rs),
                             "rss": statistics.median(x["rss"] for x in rs),
                             "cpu": statistics.median(x["cpu"] for x in rs),
                             "bytes": rs[-1]["bytes"]}
    return res


def appends(a, work: Path, fmt: str, new: list[Path], cache0: Path) -> dict:
    """K one-day appends onto a copy of the base output, with a copy of the base cache."""
    ext = "json" if fmt == "kerchunk" else "icechunk"
    out = work / f"appended.{ext}"
    cache = work / f"cache-append-{ext}"
    copy(work / f"base.{ext}", out)
    copy(cache0, cache)
    per = []
    for k, day in enumerate(new):
        before = size(out)
        pb = parts(out) if out.is_dir() else None
        r = run([a.vzarr, "build", "--append", day, "-o", out, "--format", fmt,
                 "--cache-dir", cache, *small_chunks(a)], work / "logs" / f"append-{ext}.{k}",
                f"append of {day.name} ({fmt})")
        line = next((l for l in r["stdout"].splitlines() if l.startswith("appended ")), "")
        if not line.startswith(TAIL):
            raise BenchError(f"append {k + 1} of {day.name} ({fmt}) did not append at the tail: "
                             f"{line or '(no appended line)'}\n  stdout: {work}/logs/"
                             f"append-{ext}.{k}.out")
        after = size(out)
        extra = {}
        if pb is not None:
            pa = parts(out)
            extra["added_parts"] = {k: v - pb.get(k, 0) for k, v in pa.items()}
        per.append(brief(r, day=day.name, bytes_before=before, bytes_after=after,
                         added=after - before, line=line, **extra))
        if k < 3 or k == len(new) - 1 or (k + 1) % 25 == 0:
            log(f"  append {k + 1}/{len(new)} ({fmt}): {r['wall']:.3f} s, "
                f"{'+' if after >= before else ''}{(after - before) / 2**10:.1f} KiB")
    walls = [p["wall"] for p in per]
    added = [p["added"] for p in per]
    res = {}
    if fmt == "icechunk":
        # What an append adds but the copies of the replaced `repo` object (kept only by
        # Icechunk's local storage, not on an object store without versioning).
        res["added_live"] = stats([p["added"] - p["added_parts"].get("overwritten", 0)
                                   for p in per])
        res["added_parts"] = {k: stats([p["added_parts"].get(k, 0) for p in per])
                              for k in per[-1]["added_parts"]}
    return {**res, "appends": per, "wall": stats(walls), "added": stats(added),
            "rss": statistics.median(p["rss"] for p in per),
            "bytes_start": per[0]["bytes_before"], "bytes_end": per[-1]["bytes_after"]}


def equal_json(work: Path) -> dict:
    """The appended reference file against the full build's: byte for byte but for the
    provenance's record of the inputs (`inputs`: the full build names one catalog, the
    appended output the first days' catalog and each appended file), which is what
    `vzarr sync` lists again."""
    same = subprocess.call(["cmp", "-s", str(work / "appended.json"), str(work / "full.json")]) == 0
    if same:
        return {"byte_identical": True, "bytes": size(work / "full.json")}
    a, b = (json.loads((work / n).read_text()) for n in ("appended.json", "full.json"))
    for d in (a, b):
        d.get("vzarr", {}).pop("inputs", None)
    if a != b:
        raise BenchError(f"after the appends {work}/appended.json differs from the full build "
                         f"{work}/full.json (more than the recorded inputs)")
    return {"byte_identical": False, "equal_but_inputs": True, "bytes": size(work / "full.json")}


def equal_icechunk(a, work: Path) -> dict:
    r = run([a.python, HERE / "peers.py", "compare", work / "appended.icechunk",
             work / "full.icechunk", "--tail", a.appends + 1],
            work / "logs" / "compare-icechunk", "comparing the appended repository")
    c = json.loads(r["stdout"].strip().splitlines()[-1])
    if not c.get("ok"):
        raise BenchError(f"the appended repository does not read as the full build's: {c}")
    return c


def reprocess(path: Path) -> None:
    """Rewrites `path` as a data centre re-processing a day would: the same coordinates and
    layout, `tas` + 0.5 K (netCDF4-python, a new file moved over the old)."""
    import netCDF4
    import numpy as np
    tmp = path.with_suffix(".reprocessed")
    shutil.copyfile(path, tmp)
    with netCDF4.Dataset(tmp, "r+") as f:
        f["tas"][:] = np.asarray(f["tas"][:]) + np.float32(0.5)
    tmp.replace(path)


def sync(a, work: Path, fmt: str, files: list[Path], caches: dict) -> dict:
    """`vzarr sync` after one day was re-processed and two new days arrived: the output built
    from the catalog of all days but the last two (the scan cache warm), then the middle day
    rewritten and the two days added to the catalog, then --runs syncs, each from a copy of
    the output as built, timed (the median is reported); each must scan those three files
    only. The JSON must then equal a fresh build of the files as they are (but for the
    recorded inputs); the re-processed file is restored after."""
    ext = "json" if fmt == "kerchunk" else "icechunk"
    out, cache, listing = work / f"sync.{ext}", work / f"cache-sync-{ext}", work / "sync.txt"
    built = work / f"sync-built.{ext}"
    fresh(built)
    # A cache of the files built only (filled by that build): the new days are scanned.
    fresh(cache)
    listing.write_text("".join(f"{f}\n" for f in files[:-2]))
    run(build_argv(a, listing, built, fmt, cache), work / "logs" / f"sync-base-{ext}",
        f"the output synced ({fmt})")
    day = files[len(files) // 2]
    backup = work / "reprocessed-day.orig"
    shutil.copy2(day, backup)
    walls, runs = [], []
    try:
        reprocess(day)
        listing.write_text("".join(f"{f}\n" for f in files))
        summary = work / f"sync-{ext}.summary.json"
        for k in range(a.runs):
            copy(built, out)
            # The sync's cache as the build left it (the new days' scans are not kept).
            cache_run = work / f"cache-sync-{ext}-run"
            copy(cache, cache_run)
            os.sync()
            # The catalog listing and the files it names (both in the work dir) are read.
            r = run([a.vzarr, "sync", out, "--allow-prefix", work, "--cache-dir", cache_run,
                     "--summary-json", summary], work / "logs" / f"sync-{ext}-{k}",
                    f"sync ({fmt})")
            s = json.loads(summary.read_text())
            b = s.get("build", {})
            if b.get("scanned") != 3:
                raise BenchError(f"sync ({fmt}) scanned {b.get('scanned')} files, not 3: "
                                 f"{r['stdout']}")
            walls.append(r["wall"])
            runs.append((r, s))
        r, s = runs[0]
        b = s.get("build", {})
        res = brief(r, line=next((l for l in r["stdout"].splitlines() if "added" in l), ""),
                    planned=next((l for l in r["stdout"].splitlines()
                                  if "replaced in place" in l or "planned every file" in l), ""),
                    action=s.get("action"),
                    summary={k: b.get(k) for k in ("files", "scanned", "cache_hits", "failed")})
        res["wall"] = statistics.median(walls)
        res["walls"] = walls
        if fmt == "kerchunk":
            rebuilt = work / "sync-fresh.json"
            run(build_argv(a, listing, rebuilt, fmt, cache), work / "logs" / "sync-fresh",
                "a fresh build of the synced files")
            x, y = (json.loads(p.read_text()) for p in (out, rebuilt))
            for d in (x, y):
                d.get("vzarr", {}).pop("inputs", None)
            if x != y:
                raise BenchError(f"the synced {out} differs from a fresh build {rebuilt}")
            res["equal_fresh_build"] = True
            fresh(rebuilt)
    finally:
        shutil.copy2(backup, day)
        backup.unlink()
    log(f"  sync ({fmt}): median {res['wall']:.2f} s of {len(walls)} "
        f"({', '.join(f'{w:.2f}' for w in walls)}); {res['line']}")
    return res


def peers(a, work: Path, day: Path, n_base: int, cache0: Path) -> dict:
    """The first new day appended onto copies of the base repository: vzarr, icechunk-python
    alone and VirtualiZarr, alternating, --runs times each."""
    refs = work / "day-refs.json"
    run([a.vzarr, "build", day, "-o", refs], work / "logs" / "day-refs", "the day's references")
    tools = {
        "vzarr": lambda out, cache: [a.vzarr, "build", "--append", day, "-o", out, "--format",
                                     "icechunk", "--cache-dir", cache],
        "icechunk-python": lambda out, cache: [a.python, HERE / "peers.py", "icechunk", out,
                                               refs, day],
        "virtualizarr": lambda out, cache: [a.python, HERE / "peers.py", "virtualizarr", out,
                                            day],
    }
    res: dict = {}
    for i in range(a.runs):
        for tool, argv in tools.items():
            out = work / f"peer-{tool}.icechunk"
            cache = work / "cache-peer"
            copy(work / "base.icechunk", out)
            copy(cache0, cache)
            before = size(out)
            logp = work / "logs" / f"peer-{tool}.run{i}"
            r = run_process([str(x) for x in argv(out, cache)], logp)
            if r["rc"] != 0:
                err = brief_error(r["stderr"])
                log(f"  {tool}: failed (exit {r['rc']}): {err}")
                res.setdefault(tool, {"runs": []})["failed"] = err
                continue
            added = size(out) - before
            phases = None
            if tool != "vzarr":
                phases = json.loads(r["stdout"].strip().splitlines()[-1])
            elif not r["stdout"].startswith(TAIL) and TAIL not in r["stdout"]:
                raise BenchError(f"vzarr's append of {day.name} did not append at the tail")
            res.setdefault(tool, {"runs": []})["runs"].append(
                brief(r, added=added, phases=phases))
            log(f"  {tool}: {r['wall']:.2f} s, +{added / 2**10:.1f} KiB")
            if i == 0:
                c = run([a.python, HERE / "peers.py", "check-day", out, day, n_base],
                        work / "logs" / f"peer-{tool}.check", f"reading {tool}'s append back")
                res[tool]["check"] = json.loads(c["stdout"].strip().splitlines()[-1])
    for tool, t in res.items():
        rs = t["runs"]
        if not rs:
            continue
        t["wall"] = statistics.median(x["wall"] for x in rs)
        t["rss"] = statistics.median(x["rss"] for x in rs)
        t["cpu"] = statistics.median(x["cpu"] for x in rs)
        t["added"] = statistics.median(x["added"] for x in rs)
        if rs[0]["phases"]:
            t["phases"] = {k: statistics.median(x["phases"][k] for x in rs)
                           for k in rs[0]["phases"]}
    return res


def report(res: dict) -> str:
    mib = lambda n: f"{n / 2**20:,.1f} MiB"  # noqa: E731
    kib = lambda n: f"{n / 2**10:,.1f} KiB"  # noqa: E731
    d, k = res["days"], res["appends"]
    lines = [f"catalog: {d} daily files, {d * res['refs_per_day']:,} references at the end; "
             f"the first {d - k} built, then {k} one-day appends; "
             f"load average {' '.join(res['machine']['loadavg_start'])} at the start, "
             f"{' '.join(res['machine']['loadavg_end'])} at the end", ""]
    fb = res.get("full")
    if fb:
        lines += [f"cold build of the first {d - k} days (the scan cache filled): "
                  f"{res['cold']['wall']:.2f} s", "",
                  "| full build, warm scan cache (median) | wall s | peak RSS | output |",
                  "|---|---:|---:|---:|"]
        for key in ("base", "full"):
            for fmt, name in (("kerchunk", "JSON"), ("icechunk", "Icechunk")):
                if fmt in fb[key]:
                    t = fb[key][fmt]
                    lines.append(f"| {fb[key]['days']} days, {name} | {t['wall']:.2f} | "
                                 f"{mib(t['rss'])} | {mib(t['bytes'])} |")
    for fmt, name in (("kerchunk", "JSON"), ("icechunk", "Icechunk")):
        ap = res.get(f"appends_{fmt}")
        if not ap:
            continue
        w, b = ap["wall"], ap["added"]
        full = fb["full"][fmt]["wall"] if fb else None
        lines += ["", f"{name}: {w['n']} one-day appends, every one at the tail: "
                  f"{w['median']:.3f} s median (min {w['min']:.3f}, max {w['max']:.3f}; "
                  f"first {w['first']:.3f}, last {w['last']:.3f}), peak RSS "
                  f"{mib(ap['rss'])}"
                  + (f"; {w['median'] / full:.3f}x the full build of {d} days "
                     f"({full:.2f} s; target <= {TARGETS['ratio']}x)" if full else "")]
        if fmt == "icechunk":
            lines.append(f"  bytes added per append: first {kib(b['first'])}, median "
                         f"{kib(b['median'])}, last {kib(b['last'])}, min {kib(b['min'])}, "
                         f"max {kib(b['max'])}; repository {mib(ap['bytes_start'])} -> "
                         f"{mib(ap['bytes_end'])} (target <= 1 MiB each)")
            if "added_live" in ap:
                lv = ap["added_live"]
                lines.append(f"  without overwritten/ (the replaced copies of `repo`): first "
                             f"{kib(lv['first'])}, median {kib(lv['median'])}, last "
                             f"{kib(lv['last'])}; by part (first / last): " + ", ".join(
                                 f"{k} {kib(v['first'])} / {kib(v['last'])}"
                                 for k, v in ap["added_parts"].items()))
            lines.append(f"  read equal to the full build's: {res['equal_icechunk']}")
        else:
            lines.append(f"  output {mib(ap['bytes_start'])} -> {mib(ap['bytes_end'])}; "
                         f"byte-identical to the full build: "
                         f"{res['equal_json']['byte_identical']}"
                         + (" (equal but for the recorded inputs)"
                            if res['equal_json'].get('equal_but_inputs') else ""))
    for fmt, sy in res.get("sync", {}).items():
        name = "JSON" if fmt == "kerchunk" else "Icechunk"
        full = fb["full"][fmt]["wall"] if fb and fmt in fb["full"] else None
        sm = sy["summary"]
        lines += ["", f"sync ({name}) after 1 re-processed and 2 new days: {sy['wall']:.2f} s "
                  f"(median of {len(sy.get('walls', [1]))}), "
                  f"peak RSS {mib(sy['rss'])}; {sy['action']}: {sm['scanned']} of {sm['files']} files scanned, "
                  f"{sm['cache_hits']} from the cache"
                  + (f"; {sy['wall'] / full:.3f}x the full build of {d} days ({full:.2f} s; "
                     f"target <= {TARGETS['ratio']}x)" if full else "")
                  + ("; equal to a fresh build" if sy.get("equal_fresh_build") else ""),
                  f"  {sy['line']}"] + ([f"  {sy['planned']}"] if sy.get("planned") else [])
    if res.get("peers"):
        p = res["peers"]
        lines += ["", f"| append of {p['day']} onto the repository of {d - k} days "
                      "(median) | wall s | CPU s | peak RSS | bytes added | in-process s |",
                  "|---|---:|---:|---:|---:|---:|"]
        for tool, t in p["tools"].items():
            if "wall" not in t:
                lines.append(f"| {tool} | failed: {t.get('failed')} | | | | |")
                continue
            inproc = (f"{sum(v for key, v in t['phases'].items() if key not in ('imports', 'refs')):.3f}"
                      if t.get("phases") else "")
            lines.append(f"| {tool} | {t['wall']:.2f} | {t['cpu']:.2f} | {mib(t['rss'])} | "
                         f"{kib(t['added'])} | {inproc} |")
        for tool, t in p["tools"].items():
            if t.get("phases"):
                lines.append(f"{tool} phases (median s): " + ", ".join(
                    f"{key} {v:.3f}" for key, v in t["phases"].items() if key != "refs"))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--catalog", required=True)
    ap.add_argument("--vzarr", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--appends", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="json,icechunk,peers,sync")
    ap.add_argument("--chunk", type=int, default=32)
    a = ap.parse_args()
    only = set(a.only.split(","))
    if not only <= {"json", "icechunk", "peers", "sync"}:
        raise BenchError(f"--only: json, icechunk, peers, sync (not {a.only})")
    if "peers" in only and a.chunk != 32:
        raise BenchError("the peers run on the default catalog only (--chunk 32)")
    work = Path(a.work).resolve()
    (work / "logs").mkdir(parents=True, exist_ok=True)
    files = sorted(Path(a.catalog).resolve().glob("tas_*.nc"))[: a.days]
    if len(files) < a.days:
        raise BenchError(f"{a.catalog} holds {len(files)} days, not {a.days}")
    nb = a.days - a.appends
    base, new = files[:nb], files[nb:]
    res: dict = {"days": a.days, "appends": a.appends, "runs": a.runs, "machine": machine(),
                 "versions": versions(a.vzarr), "chunk": a.chunk, "refs_per_day": refs_per_day(a)}
    import icechunk
    res["versions"]["icechunk (python)"] = icechunk.__version__
    log(f"{a.days} days ({a.days * refs_per_day(a):,} references): the first {nb} built, then "
        f"{a.appends} one-day appends; load {' '.join(res['machine']['loadavg_start'])}")
    warm([str(f) for f in files])
    lists = {"base": work / "base.txt", "full": work / "full.txt"}
    lists["base"].write_text("".join(f"{f}\n" for f in base))
    lists["full"].write_text("".join(f"{f}\n" for f in files))
    # The scan caches: one of the first D-K days (the appends each start from a copy), one of
    # all D days (the full rebuilds). Filling the first is the cold build.
    caches = {"base": work / "cache-base", "full": work / "cache-full"}
    for key, c in caches.items():
        fresh(c)
        out = work / f"cold-{key}.json"
        r = run(build_argv(a, lists[key], out, "kerchunk", c), work / "logs" / f"cold-{key}",
                f"cold build ({key})")
        if key == "base":
            res["cold"] = brief(r)
            log(f"  cold build of {nb} days (scan cache filled): {r['wall']:.2f} s")
        fresh(out)
    fmts = [f for f, o in (("kerchunk", "json"), ("icechunk", "icechunk")) if o in only]
    if "sync" in only and not fmts:
        fmts = ["kerchunk", "icechunk"]
    if "peers" in only and "icechunk" not in fmts:
        fmts.append("icechunk")
    res["full"] = full_builds(a, work, lists, caches, fmts)
    if "json" in only:
        log(f"{a.appends} appends, JSON")
        res["appends_kerchunk"] = appends(a, work, "kerchunk", new, caches["base"])
        res["equal_json"] = equal_json(work)
    if "icechunk" in only:
        log(f"{a.appends} appends, Icechunk")
        res["appends_icechunk"] = appends(a, work, "icechunk", new, caches["base"])
        res["equal_icechunk"] = equal_icechunk(a, work)
    if "sync" in only:
        log("sync after one re-processed and two new days")
        res["sync"] = {f: sync(a, work, f, files, caches) for f in fmts}
    if "peers" in only:
        log(f"peers: {new[0].name} onto the repository of {nb} days")
        res["peers"] = {"day": new[0].name, "tools": peers(a, work, new[0], nb, caches["base"])}
    res["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    (work / "results.json").write_text(json.dumps(res, indent=1))
    text = report(res)
    (work / "results.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
