"""Icechunk at scale (issue 15): vzarr build --format icechunk against VirtualiZarr's
to_icechunk on archive (b), and vzarr alone on a synthetic catalog of 10M references.

Started by benches/icechunk/run (which builds vzarr and the venv and generates the inputs);
see BENCHMARKS.md. Every run is its own process under GNU time: wall time from spawn to exit,
peak resident set size and CPU time of that process (benches/compare's run_process). Figures
are medians of --runs runs (the tools alternate); the inputs sit in the page cache. The first
output of each tool is checked: icechunk-python 2.3 + xarray open the repository,
authorising the containers it lists, and samples of every variable equal h5py's values.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "compare"))
from bench import BenchError, brief_error, log, machine, run_process, versions, warm  # noqa: E402

TARGETS = {"speedup": 10.0, "memory_ratio": 5.0, "catalog_rss": 2**30}


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def check(repo: Path, files: list[str], python: str, logp: Path) -> dict:
    r = run_process([python, str(HERE / "peers.py"), "check", str(repo), *files], logp)
    if r["rc"] != 0:
        raise BenchError(f"{repo} does not read back as its sources: {brief_error(r['stderr'])} "
                         f"{r['stdout'][-300:]}")
    return json.loads(r["stdout"].strip().splitlines()[-1])


def one(tool: str, argv: list[str], out: Path, logp: Path) -> dict:
    if out.exists():
        shutil.rmtree(out)
    r = run_process(argv, logp)
    if r["rc"] != 0:
        raise BenchError(f"{tool} failed (exit {r['rc']}): {brief_error(r['stderr'])}\n"
                         f"  command: {' '.join(argv[:8])} ...\n  full log: {logp}.err")
    r["repo_bytes"] = du(out)
    r["stdout_tail"] = r["stdout"].strip().splitlines()[-6:]
    if tool == "virtualizarr":
        r["phases"] = json.loads(r["stdout"].strip().splitlines()[-1])
    del r["stdout"], r["stderr"]
    log(f"  {tool}: {r['wall']:.2f} s, {r['rss'] / 2**20:.0f} MiB, "
        f"repository {r['repo_bytes'] / 2**20:.1f} MiB")
    return r


def summary(runs: list[dict]) -> dict:
    return {"runs": runs, "wall": statistics.median(r["wall"] for r in runs),
            "rss": statistics.median(r["rss"] for r in runs),
            "cpu": statistics.median(r["cpu"] for r in runs),
            "repo_bytes": runs[-1]["repo_bytes"]}


def bench_b(a, work: Path) -> dict:
    arch = json.loads((Path(a.archives) / "archives.json").read_text())["b_hdf5_chunks"]
    files = arch["files"]
    log(f"(b) {files[0]}: {arch['data_chunks']:,} chunks, {arch['bytes'] / 1e9:.2f} GB")
    warm(files)
    d = work / "b"
    d.mkdir(parents=True, exist_ok=True)
    argvs = {
        "vzarr": [a.vzarr, "build", files[0], "--format", "icechunk", "-o", str(d / "vzarr.icechunk")]
        + (["--piece-refs", str(a.piece_refs)] if a.piece_refs else []),
        "virtualizarr": [a.python, str(HERE / "peers.py"), "virtualizarr", files[0], "-o",
                         str(d / "virtualizarr.icechunk")],
    }
    runs: dict[str, list[dict]] = {t: [] for t in argvs}
    checks = {}
    for i in range(a.runs):
        for tool, argv in argvs.items():
            out = Path(argv[argv.index("-o") + 1])
            runs[tool].append(one(tool, argv, out, d / f"{tool}.run{i}"))
            if i == 0:
                checks[tool] = check(out, files, a.python, d / f"{tool}.check")
                if checks[tool]["commits"] != 2:
                    raise BenchError(f"{tool}: {checks[tool]['commits']} commits on main")
    res = {"chunks": arch["data_chunks"], "bytes": arch["bytes"], "checks": checks,
           "tools": {t: summary(rs) for t, rs in runs.items()}}
    v, p = res["tools"]["vzarr"], res["tools"]["virtualizarr"]
    res["speedup"] = p["wall"] / v["wall"]
    res["memory_ratio"] = p["rss"] / v["rss"]
    return res


def bench_catalog(a, work: Path) -> dict:
    cat = Path(a.catalog)
    files = sorted(str(p) for p in cat.glob("member_*.h5"))
    size = sum(Path(f).stat().st_size for f in files)
    stamp = json.loads((cat / ".generated.json").read_text())
    refs = stamp["files"] * stamp["chunks"]
    log(f"(catalog) {len(files)} files x {stamp['chunks']:,} chunks = {refs:,} references, "
        f"{size / 2**20:.0f} MiB")
    warm(files)
    d = work / "catalog"
    d.mkdir(parents=True, exist_ok=True)
    # Both commit policies, alternating run by run: chosen by size (the default: one commit
    # per piece past --piece-refs), and one commit whatever the size (--one-commit). Every
    # chunk referenced as stored (--small-chunks keep): the one-byte chunks would otherwise be
    # merged and kept inline, and nothing would be referenced.
    modes = {"by size (default)": [], "one commit": ["--one-commit"]}
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    checks = {}
    for i in range(a.catalog_runs):
        for mode, extra in modes.items():
            out = d / ("vzarr.icechunk" if not extra else "vzarr-one.icechunk")
            argv = [a.vzarr, "build", *files, "--new-dim", "member", "--small-chunks", "keep",
                    "--format", "icechunk", "-o", str(out), *extra] + (
                        ["--piece-refs", str(a.piece_refs)] if a.piece_refs else [])
            tag = "by-size" if not extra else "one"
            r = one("vzarr", argv, out, d / f"vzarr-{tag}.run{i}")
            runs[mode].append(r)
            if i == 0:
                chk = check(out, files, a.python, d / f"vzarr-{tag}.check")
                pieces = next((int(line.split()[2]) for line in r["stdout_tail"]
                               if line.startswith("written in ")), 1)
                want = pieces + 1 if not extra else 2
                if chk["commits"] != want or chk["branches"] != ["main"]:
                    raise BenchError(f"catalog, {mode}: {chk} (want {want} commits)")
                chk["pieces"] = pieces
                checks[mode] = chk
    return {"files": len(files), "references": refs, "bytes": size, "checks": checks,
            "modes": {m: summary(rs) for m, rs in runs.items()}}


def report(res: dict) -> str:
    mib = lambda n: f"{n / 2**20:,.0f} MiB"  # noqa: E731
    lines = []
    if "b" in res:
        b = res["b"]
        v, p = b["tools"]["vzarr"], b["tools"]["virtualizarr"]
        lines += [f"| (b), {b['chunks']:,} chunks | wall s | peak RSS | CPU s | repository |",
                  "|---|---:|---:|---:|---:|"]
        for name, t in (("vzarr build --format icechunk", v), ("VirtualiZarr 2.8 to_icechunk", p)):
            lines.append(f"| {name} | {t['wall']:.2f} | {mib(t['rss'])} | {t['cpu']:.2f} | "
                         f"{mib(t['repo_bytes'])} |")
        ok = lambda c: "yes" if c else "**no**"  # noqa: E731
        lines += ["", f"speedup {b['speedup']:.1f}x (target >= {TARGETS['speedup']:g}x: "
                      f"{ok(b['speedup'] >= TARGETS['speedup'])}); memory "
                      f"{b['memory_ratio']:.1f}x less (target >= {TARGETS['memory_ratio']:g}x: "
                      f"{ok(b['memory_ratio'] >= TARGETS['memory_ratio'])})"]
        if "phases" in p["runs"][0]:
            ph = {k: statistics.median(r["phases"][k] for r in p["runs"]) for k in p["runs"][0]["phases"]}
            lines.append("VirtualiZarr phases (median s): " + ", ".join(f"{k} {x:.2f}" for k, x in ph.items()))
    if "catalog" in res:
        c = res["catalog"]
        lines += ["", f"| catalog: {c['files']} files, {c['references']:,} references | wall s | "
                      "peak RSS | CPU s | repository | commits |", "|---|---:|---:|---:|---:|---:|"]
        for mode, v in c["modes"].items():
            lines.append(f"| vzarr build --new-dim member --format icechunk, {mode} | "
                         f"{v['wall']:.1f} | {mib(v['rss'])} | {v['cpu']:.1f} | "
                         f"{mib(v['repo_bytes'])} | {c['checks'][mode]['commits'] - 1} |")
        lines.append("")
        for mode, v in c["modes"].items():
            lines.append(f"peak RSS target < 1 GiB, {mode}: "
                         f"{'yes' if v['rss'] < TARGETS['catalog_rss'] else '**no**'}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--vzarr", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--archives", help="benches/compare work dir holding archive (b)")
    ap.add_argument("--catalog", help="directory of the synthetic catalog")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--catalog-runs", type=int, default=1)
    ap.add_argument("--piece-refs", type=int, default=0, help="vzarr --piece-refs (0: default)")
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    res = {"machine": machine(), "versions": versions(a.vzarr)}
    import icechunk
    res["versions"]["icechunk (python)"] = icechunk.__version__
    if a.archives:
        res["b"] = bench_b(a, work)
    if a.catalog:
        res["catalog"] = bench_catalog(a, work)
    res["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    (work / "results.json").write_text(json.dumps(res, indent=1))
    text = report(res)
    (work / "results.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
