"""The robustness suite: seeded mutants of the fixtures, bombs and tampered manifests, each run
through the vzarr binary under a memory limit and a time limit.

For every case the binary must end by itself (no hang), with exit status 0, 1 or 2 (no
signal, no abort), with a message that names the file when it fails, in bounded memory, and
without printing anything read from outside the allowed prefixes. `test_robustness.py` runs
a short seeded sample in the test suite; `scripts/robustness N` runs N mutants and prints the
report (mutants, outcomes, the largest peak memory, the slowest run).
"""

from __future__ import annotations

import base64
import json
import os
import random
import resource
import shutil
import subprocess
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"

#: Address-space limit of every run (the issue's bound on peak memory is 2 GiB of RSS).
MEMORY_LIMIT = 4 << 30
#: Wall-clock limit of every run.
TIME_LIMIT = 60.0
#: Peak resident memory a run may reach.
RSS_LIMIT = 2 << 30

SECRET = b"root:x:0:0:vzarr-robustness-secret\n"


@dataclass
class Run:
    """One run of the binary and how it ended."""

    args: list[str]
    returncode: int | None
    stdout: bytes
    stderr: bytes
    seconds: float
    max_rss: int
    timed_out: bool = False


@dataclass
class Report:
    """Counts over many runs."""

    runs: int = 0
    ok: int = 0
    errors: int = 0
    signals: int = 0
    hangs: int = 0
    over_memory: int = 0
    leaks: int = 0
    unnamed: int = 0
    max_rss: int = 0
    slowest: float = 0.0
    problems: list[str] = field(default_factory=list)

    def add(self, r: Run, names: str | None = None) -> None:
        self.runs += 1
        self.max_rss = max(self.max_rss, r.max_rss)
        self.slowest = max(self.slowest, r.seconds)
        what = " ".join(r.args[1:4])
        if r.timed_out:
            self.hangs += 1
            self.problems.append(f"hang: {what}")
            return
        if r.returncode is None or r.returncode < 0 or r.returncode > 2:
            self.signals += 1
            self.problems.append(f"exit {r.returncode}: {what}\n{r.stderr.decode(errors='replace')[-2000:]}")
            return
        if r.max_rss > RSS_LIMIT:
            self.over_memory += 1
            self.problems.append(f"{r.max_rss >> 20} MiB: {what}")
        if SECRET.strip() in r.stdout or SECRET.strip() in r.stderr:
            self.leaks += 1
            self.problems.append(f"printed bytes from outside the allowed prefixes: {what}")
        if r.returncode == 0:
            self.ok += 1
        else:
            self.errors += 1
            err = r.stderr.decode(errors="replace")
            out = r.stdout.decode(errors="replace")
            if "MISMATCH" in out and "chunk(s) differ" in out:
                return  # verify's report of differing chunks: a clean outcome
            if "vzarr: error:" not in err or (names and names not in err):
                self.unnamed += 1
                self.problems.append(f"error without the file's name ({names}): {what}\n{err[-1000:]}")

    def summary(self) -> str:
        return (
            f"{self.runs} runs: {self.ok} ok, {self.errors} clean errors, {self.signals} signals, "
            f"{self.hangs} hangs, {self.over_memory} over {RSS_LIMIT >> 20} MiB, {self.leaks} leaks, "
            f"{self.unnamed} errors not naming the file; largest peak {self.max_rss >> 20} MiB, "
            f"slowest {self.slowest:.2f} s"
        )


def vzarr_bin() -> str:
    return os.environ.get("VZARR_BIN") or str(ROOT / "target" / "debug" / "vzarr")


def run(
    args: list,
    env: dict | None = None,
    cwd: Path | None = None,
    memory_limit: int = MEMORY_LIMIT,
    time_limit: float = TIME_LIMIT,
) -> Run:
    """Runs the binary with `args` under the memory (address space) and time limits; records
    peak memory."""

    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    argv = [vzarr_bin(), *map(str, args)]
    t0 = time.monotonic()
    p = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=limits,
        env=env,
        cwd=cwd,
    )
    fired = threading.Event()

    def kill():
        fired.set()
        p.kill()

    timer = threading.Timer(time_limit, kill)
    timer.start()
    chunks: dict[str, bytes] = {}
    readers = [
        threading.Thread(target=lambda k=k, f=f: chunks.__setitem__(k, f.read()))
        for k, f in (("out", p.stdout), ("err", p.stderr))
    ]
    for t in readers:
        t.start()
    # wait4 gives this child's own peak memory.
    _, status, usage = os.wait4(p.pid, 0)
    timer.cancel()
    for t in readers:
        t.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - t0
    return Run(
        argv,
        p.returncode,
        chunks.get("out", b""),
        chunks.get("err", b""),
        seconds,
        usage.ru_maxrss * 1024,
        fired.is_set(),
    )


# --- mutants ---------------------------------------------------------------------------------


def seed_files() -> list[Path]:
    index = json.loads((FIXTURES / "fixtures.json").read_text())
    names = [f["name"] for f in index["files"] if f["format"] in ("hdf5", "netcdf4", "netcdf3")]
    return [FIXTURES / n for n in names] + sorted((FIXTURES / "archive").glob("*.nc"))[:2]


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One to four mutations: bit flips, byte overwrites, zeroed or duplicated blocks,
    truncation, an absurd 64-bit value written at a random place."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not b:
            break
        at = rng.randrange(len(b))
        kind = rng.randrange(7)
        if kind == 0:
            b[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            b[at] = rng.choice((0x00, 0xFF, rng.randrange(256)))
        elif kind == 2:
            n = rng.randint(1, 512)
            b[at : at + n] = bytes(min(n, len(b) - at))
        elif kind == 3:
            n = rng.randint(1, 256)
            src = rng.randrange(len(b))
            b[at : at + n] = b[src : src + n][: len(b) - at]
        elif kind == 4:
            del b[rng.randrange(len(b)) :]
        elif kind == 5:
            v = rng.choice((2**31 - 1, 2**32 - 1, 2**40, 2**60, 2**63 - 1, 2**64 - 1))
            b[at : at + 8] = v.to_bytes(8, rng.choice(("little", "big")))[: len(b) - at]
        else:
            for k in range(at, min(len(b), at + rng.randint(1, 16))):
                b[k] = rng.randrange(256)
    return bytes(b)


def run_mutants(work: Path, n: int, seed: int, report: Report) -> None:
    """Builds and inspects `n` mutants of the fixtures, each in its own file."""
    rng = random.Random(seed)
    seeds = [(p.name, p.read_bytes()) for p in seed_files()]
    for k in range(n):
        name, data = seeds[k % len(seeds)]
        path = work / f"m{k:05d}_{name}"
        path.write_bytes(mutate(rng, data))
        out = work / f"m{k:05d}.json"
        report.add(run(["build", path, "-o", out]), names=path.name)
        if k % 4 == 0:
            report.add(run(["inspect", path, "--split-contiguous", "4KiB"]), names=path.name)
        path.unlink(missing_ok=True)
        out.unlink(missing_ok=True)


# --- bombs -----------------------------------------------------------------------------------


def hdf5_bombs(work: Path) -> list[Path]:
    """Valid HDF5 files that ask for absurd resources: never-written datasets of 2^60 and 2^40
    chunks, an unlimited one, a contiguous one of 2^60 bytes."""
    import h5py

    out = []
    for name, make in [
        ("chunks_2e60.h5", lambda f: f.create_dataset("x", shape=(2**60,), chunks=(1,), dtype="u1")),
        ("chunks_2e40.h5", lambda f: f.create_dataset("x", shape=(2**40,), chunks=(1,), dtype="f8")),
        (
            "unlimited_2e50.h5",
            lambda f: f.create_dataset("x", shape=(2**50,), maxshape=(None,), chunks=(4,), dtype="i4"),
        ),
        ("contiguous_2e60.h5", lambda f: f.create_dataset("x", shape=(2**60,), dtype="u1")),
    ]:
        p = work / name
        with h5py.File(p, "w", libver="latest") as f:
            make(f)
        out.append(p)
    return out


def nc3_bombs(work: Path) -> list[Path]:
    """NetCDF3 headers with absurd counts: 2^31 - 1 records over a sparse file (one and two
    record variables), a variable of rank 67M."""
    out = []

    def header(numrecs: int, nvars: int) -> bytes:
        def name(s: bytes) -> bytes:
            pad = (4 - len(s) % 4) % 4
            return len(s).to_bytes(4, "big") + s + bytes(pad)

        h = b"CDF\x01" + numrecs.to_bytes(4, "big")
        h += (10).to_bytes(4, "big") + (2).to_bytes(4, "big")  # NC_DIMENSION, 2 dims
        h += name(b"t") + (0).to_bytes(4, "big") + name(b"x") + (2).to_bytes(4, "big")
        h += bytes(8)  # no global attributes
        h += (11).to_bytes(4, "big") + nvars.to_bytes(4, "big")  # NC_VARIABLE
        begin_at = []
        for k in range(nvars):
            h += name(f"v{k}".encode()) + (2).to_bytes(4, "big")
            h += (0).to_bytes(4, "big") + (1).to_bytes(4, "big")
            h += bytes(8) + (4).to_bytes(4, "big") + (8).to_bytes(4, "big")  # no attrs, NC_INT, vsize
            begin_at.append(len(h))
            h += bytes(4)
        hb = bytearray(h)
        for k, at in enumerate(begin_at):
            hb[at : at + 4] = (len(h) + 8 * k).to_bytes(4, "big")
        return bytes(hb)

    for nvars in (1, 2):
        p = work / f"records_2e31_{nvars}vars.nc"
        h = header(2**31 - 1, nvars)
        with open(p, "wb") as f:
            f.write(h)
            f.truncate(len(h) + (2**31 - 1) * 8 * nvars)
        out.append(p)
    # A rank far above netCDF-C's 1024.
    p = work / "rank_67M.nc"
    h = bytearray(header(1, 1))
    at = h.index(b"v0") + 4
    h[at : at + 4] = (67_000_000).to_bytes(4, "big")
    p.write_bytes(bytes(h) + bytes(64))
    out.append(p)
    return out


def run_bombs(work: Path, report: Report) -> None:
    for p in hdf5_bombs(work) + nc3_bombs(work):
        for args in (
            ["build", p, "-o", work / "bomb.json"],
            ["inspect", p, "--split-contiguous", "4MiB"],
        ):
            report.add(run(args), names=p.name)


# --- tampered manifests ---------------------------------------------------------------------


def tampered_manifests(work: Path) -> list[tuple[Path, list[str]]]:
    """Manifests over a copy of a fixture, tampered: a symlink inside the allowed directory to
    a secret outside, a recorded prefix of `/`, templates and `..`, absurd lengths and
    offsets, a zlib bomb inline. Each with the read arguments to try."""
    data = work / "data"
    data.mkdir()
    shutil.copy(FIXTURES / "nc3_classic.nc", data / "nc3_classic.nc")
    secret = work / "secret.txt"
    secret.write_bytes(SECRET * 16)
    (data / "link.nc").symlink_to(secret)
    good = work / "good.json"
    subprocess.run([vzarr_bin(), "build", data / "nc3_classic.nc", "-o", good], check=True, capture_output=True)
    refs = json.loads(good.read_text())
    key = "tas/c/0/0/0"
    off, length = refs["refs"][key][1], refs["refs"][key][2]
    url = refs["refs"][key][0]
    cases = []

    def tamper(name: str, change) -> None:
        r = json.loads(json.dumps(refs))
        change(r)
        p = work / f"{name}.json"
        p.write_text(json.dumps(r))
        cases.append(p)

    tamper("symlink", lambda r: r["refs"].__setitem__(key, [f"file://{data}/link.nc", 0, 40]))
    tamper("secret", lambda r: r["refs"].__setitem__(key, [f"file://{secret}", 0, 40]))

    def root_prefix(r):
        r["vzarr"]["allowed_prefixes"] = ["file:///"]
        r["refs"][key] = [f"file://{secret}", 0, 40]

    tamper("root_prefix", root_prefix)
    tamper("dotdot", lambda r: r["refs"].__setitem__(key, [f"file://{data}/../secret.txt", 0, 40]))

    def template(r):
        r["templates"] = {"d": f"file://{data}/.."}
        r["refs"][key] = ["{{d}}/secret.txt", 0, 40]

    tamper("template", template)
    tamper("huge_length", lambda r: r["refs"].__setitem__(key, [url, 0, 2**40]))
    tamper("huge_offset", lambda r: r["refs"].__setitem__(key, [url, 2**63, 100]))
    tamper("length_2e30", lambda r: r["refs"].__setitem__(key, [url, off, 2**30]))

    def zlib_bomb(r):
        meta = json.loads(r["refs"]["tas/zarr.json"])
        meta["codecs"].append({"name": "numcodecs.zlib", "configuration": {"level": 1}})
        r["refs"]["tas/zarr.json"] = json.dumps(meta)
        bomb = zlib.compress(bytes(1 << 30), 9)
        for k in list(r["refs"]):
            if k.startswith("tas/c/"):
                r["refs"][k] = "base64:" + base64.b64encode(bomb).decode()

    tamper("zlib_bomb", zlib_bomb)
    tamper("many_chunks", lambda r: r["refs"].__setitem__(
        "tas/zarr.json",
        json.dumps(dict(json.loads(r["refs"]["tas/zarr.json"]), shape=[2**62, 2**62, 2**62])),
    ))
    allow = ["--allow-prefix", str(data)]
    # Trusting the references is for references one made: a manifest that records `/` is
    # trusted to read anything, by the user's choice, so that case is tried with --allow-prefix.
    trusted = [p for p in cases if p.stem != "root_prefix"]
    return [(p, allow) for p in cases] + [(p, ["--trust-references"]) for p in trusted]


def run_tampered(work: Path, report: Report) -> None:
    for p, allow in tampered_manifests(work):
        for args in (["cat", p, "tas[0]", *allow], ["verify", p, "--ignore-stale", *allow]):
            report.add(run(args), names=None)
