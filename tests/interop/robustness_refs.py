"""The reference-file campaign: seeded mutants of every kind of reference vzarr reads, each
read through the vzarr binary (`cat`, `verify`, `upgrade`) under a 1 GiB address-space limit
and a 10 s time limit (issue 52's bounds).

Surfaces and their seeds (written into the work directory first):
- kerchunk JSON: kerchunk's SingleHdf5ToZarr output of a fixture (version 1, Zarr v2
  metadata as JSON strings, inline chunks), the same as version 0, and references with
  templates and `gen` entries (arithmetic in the templates) over a small binary file;
- kerchunk Parquet: the same references through kerchunk's refs_to_dataframe (`.zmetadata`
  and record files of 5 rows);
- vzarr JSON: `vzarr build` of a fixture and of the monthly archive (provenance, concatenation);
- Icechunk: `vzarr build --format icechunk` of the same (repo file, snapshots, manifests,
  transaction logs, native chunks).

A mutant changes one file of a seed: bytes (flips, overwrites, zeroed or copied blocks, cuts,
absurd 64-bit values: robustness.mutate), or, for JSON, one to three values replaced by
hostile ones (huge, negative, -2^127 template arithmetic, wrong types, paths outside), inside
the JSON strings that hold Zarr metadata too.

Every run must end with exit status 0 (values), or 1/2 with a `vzarr: error:` line (or
verify's report of differing values); what counts against the campaign: panics (Rust's
report, or vzarr's "internal error"), aborts (a signal: stack overflow, ...), hangs (past the
time limit twice), out-of-memory (a failed allocation under the limit), and errors without
vzarr's message. Errors that come from a panic a library caught (the parquet, flexbuffers or
icechunk crates on a corrupt file) are counted apart, as clean errors.

    python tests/interop/robustness_refs.py [--mutants N] [--seed S] [--jobs J] [--work DIR]

`scripts/robustness references N` builds the binary and runs it; `test_robustness.py` runs a
short seeded sample.
"""

from __future__ import annotations

import argparse
import base64
import collections
import json
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import robustness as rb  # noqa: E402

FIXTURES = rb.FIXTURES

#: The issue's bounds: 1 GiB of address space, 10 s.
MEMORY_LIMIT = 1 << 30
TIME_LIMIT = 10.0

#: The environment of the runs. glibc's malloc reserves 64 MiB of address space for each
#: arena it creates (up to 8 per core, one per thread that allocates at once): under an
#: address-space limit of 1 GiB, a valid `verify` then fails at random to start a thread,
#: with nothing allocated. Two arenas keep the limit a measure of what vzarr allocates.
#: RUST_BACKTRACE is left out: with it the binary prints Rust's report of the panics the
#: libraries catch as errors.
RUN_ENV = {k: v for k, v in os.environ.items() if k != "RUST_BACKTRACE"} | {"MALLOC_ARENA_MAX": "2"}

SURFACES = ("kerchunk-json", "kerchunk-parquet", "vzarr-json", "icechunk")
OUTCOMES = ("ok", "clean error", "caught panic", "panic", "abort", "hang", "oom", "unclean error")
#: Outcomes that fail the campaign.
PROBLEMS = ("panic", "abort", "hang", "oom", "unclean error")

MIN_I128 = "(-170141183460469231731687303715884105727 - 1)"

#: Values a JSON mutant puts in place of one of the seed's.
HOSTILE = [
    0, -1, 1, 2, 7, 255, 2**31 - 1, 2**31, 2**32, 2**40, 2**53, 2**63 - 1, 2**63, 2**64, 2**127,
    -(2**63), -(2**127), 1e308, -1e308, 0.5, "", "x", "NaN", "base64:", "base64:!!!",
    "base64:" + base64.b64encode(bytes(64)).decode(), "{{u}}", "{{ nope }}", "{{",
    "{{ i * 2**62 }}", f"{{{{ {MIN_I128} // -1 }}}}", f"{{{{ {MIN_I128} % -1 }}}}",
    f"{{{{ -{MIN_I128} }}}}", "{{ i // 0 }}", "{{ (((((((((i))))))))) }}",
    "../../../../etc/passwd", "file:///etc/passwd", "s3://bucket/x", "http://127.0.0.1:9/x",
    None, True, [], {}, [0], [2**31], [2**40, 2**40], [2**62, 2**62, 2**62], [1, 1, 1, 1],
    {"stop": 2**40}, {"start": -(2**63), "stop": 2**63 - 1}, {"stop": 2**27, "step": 1},
    ["x", 0, 2**63], ["x"], "\u0000", "é" * 3, "<f8", "|S0", "<U2147483647", "zlib",
]


# --- seeds -----------------------------------------------------------------------------------


@dataclass
class Seed:
    """A reference set to mutate: its path (file or directory), surface, and the selection
    `cat` reads."""

    surface: str
    path: Path
    selection: str


def build_seeds(work: Path) -> list[Seed]:
    """Writes the seeds into `work` (see the module's doc)."""
    from kerchunk.df import refs_to_dataframe
    from kerchunk.hdf import SingleHdf5ToZarr

    work.mkdir(parents=True, exist_ok=True)
    nc4 = FIXTURES / "nc4_climate.nc"
    seeds = []

    def vzarr(*args):
        r = rb.run(["build", *args], memory_limit=4 << 30)
        if r.returncode != 0:
            raise RuntimeError(r.stderr.decode(errors="replace"))

    refs = SingleHdf5ToZarr(str(nc4), inline_threshold=300).translate()
    k1 = work / "kerchunk.json"
    k1.write_text(json.dumps(refs))
    seeds.append(Seed("kerchunk-json", k1, "tas[0,0,0:4]"))
    k0 = work / "kerchunk_v0.json"
    k0.write_text(json.dumps(refs["refs"]))
    seeds.append(Seed("kerchunk-json", k0, "tas[0:2,0,0]"))
    # Templates and generated keys over a small file: x (64 int16 in chunks of 4), y (6x4
    # uint8 in chunks of 2x2, listed values).
    data = work / "gen_data.bin"
    data.write_bytes(bytes(range(256)) * 2)
    zarray = lambda shape, chunks, dtype: json.dumps(  # noqa: E731
        {"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dtype,
         "compressor": None, "filters": None, "fill_value": 0, "order": "C"})
    gen = {
        "version": 1,
        "templates": {"u": str(data), "base": str(data.parent)},
        "refs": {
            ".zgroup": json.dumps({"zarr_format": 2}),
            "x/.zarray": zarray([64], [4], "<i2"),
            "x/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["x"]}),
            "y/.zarray": zarray([6, 4], [2, 2], "|u1"),
            "y/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["a", "b"]}),
            "x/0": ["{{u}}", 0, 8],
        },
        "gen": [
            {"key": "x/{{i}}", "url": "{{u}}", "offset": "{{ (i * 8) % 512 }}", "length": "8",
             "dimensions": {"i": {"start": 1, "stop": 16}}},
            {"key": "y/{{a}}.{{b}}", "url": "{{base}}/gen_data.bin",
             "offset": "{{ a * 100 + b * 4 - (a // 2) }}", "length": 4,
             "dimensions": {"a": [0, 1, 2], "b": {"stop": 2}}},
        ],
    }
    kg = work / "kerchunk_gen.json"
    kg.write_text(json.dumps(gen))
    seeds.append(Seed("kerchunk-json", kg, "x[0:8]"))
    parq = work / "kerchunk.parq"
    refs_to_dataframe(str(k1), str(parq), record_size=5)
    seeds.append(Seed("kerchunk-parquet", parq, "tas[0,0,0:4]"))
    v1 = work / "vzarr.json"
    vzarr(nc4, "-o", v1)
    seeds.append(Seed("vzarr-json", v1, "tas[0,0,0:4]"))
    va = work / "vzarr_archive.json"
    vzarr(FIXTURES / "archive", "--concat-dim", "time", "-o", va)
    seeds.append(Seed("vzarr-json", va, "tas[0:2,0,0]"))
    ic = work / "icechunk"
    vzarr(nc4, "-o", ic, "--format", "icechunk")
    seeds.append(Seed("icechunk", ic, "tas[0,0,0:4]"))
    ia = work / "icechunk_archive"
    vzarr(FIXTURES / "archive", "--concat-dim", "time", "-o", ia, "--format", "icechunk")
    seeds.append(Seed("icechunk", ia, "tas[0:2,0,0]"))
    return seeds


# --- mutations -------------------------------------------------------------------------------


def leaves(v, path=()):
    """The paths to every value inside `v` (containers included), with a flag telling a
    value that is itself JSON text (kerchunk's metadata) to descend into."""
    out = [path]
    if isinstance(v, dict):
        for k, x in v.items():
            out += leaves(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += leaves(x, path + (i,))
    elif isinstance(v, str) and v[:1] in "{[" and len(v) < 100_000:
        try:
            inner = json.loads(v)
        except ValueError:
            return out
        out += [path + (("json", p),) for p in leaves(inner)[1:]]
    return out


#: Keys whose values size something.
HOT = {"shape", "chunks", "record_size", "stop", "start", "step", "offset", "length",
       "templates", "configuration", "chunk_shape", "chunk_grid", "dimensions"}


def flat(path):
    """The keys along `path`, those inside JSON text included."""
    for k in path:
        if isinstance(k, tuple) and k[0] == "json":
            yield from flat(k[1])
        else:
            yield k


def get_at(v, path):
    for k in path:
        v = v[k]
    return v


def set_at(v, path, new):
    """`v` with the value at `path` replaced by `new` (through JSON text where the path says)."""
    if not path:
        return new
    k = path[0]
    if isinstance(k, tuple) and k[0] == "json":
        return json.dumps(set_at(json.loads(v), k[1], new))
    v[k] = set_at(v[k], path[1:], new)
    return v


def mutate_json_value(rng: random.Random, doc):
    """One to three values of `doc` replaced by hostile ones (or keys dropped)."""
    for _ in range(rng.choices([1, 2, 3], [6, 3, 1])[0]):
        # A section first: mostly one key of the references (uniformly: chunk references
        # outnumber metadata), the generated keys or templates where there are some, or any
        # value of the document.
        sections = [("any", 1)]
        if isinstance(doc, dict):
            refs = doc.get("refs", doc if "version" not in doc else None)
            if isinstance(refs, dict) and refs:
                sections.append(("refs", 5))
            for k, w in (("gen", 4), ("templates", 1), ("metadata", 4), ("record_size", 1)):
                if k in doc:
                    sections.append((k, w))
        section = rng.choices([s for s, _ in sections], [w for _, w in sections])[0]
        if section == "refs":
            base = ("refs",) if "refs" in doc else ()
            key = rng.choice(list(get_at(doc, base)))
            paths = [base + (key,) + p for p in leaves(get_at(doc, base + (key,)))]
        elif section == "any":
            paths = leaves(doc)
        else:
            paths = [(section,) + p for p in leaves(doc[section])]
        # Half the time a value that sizes something (shapes, chunks, record sizes, ranges,
        # offsets, lengths, templates), when there is one.
        hot = [p for p in paths if any(HOT & set(map(str, flat(p))))]
        p = rng.choice(hot if hot and rng.random() < 0.5 else paths)
        # Inside JSON text: the last element is ("json", inner path).
        if p and isinstance(p[-1], tuple):
            outer, inner = p[:-1], p[-1][1]
            text = get_at(doc, outer)
            try:
                parsed = json.loads(text)
            except (ValueError, TypeError):
                continue
            parsed = mutate_at(rng, parsed, inner)
            doc = set_at(doc, outer, json.dumps(parsed))
        else:
            doc = mutate_at(rng, doc, p)
    return doc


NUMBERS = [v for v in HOSTILE if isinstance(v, (int, float)) and not isinstance(v, bool)]
TEXTS = [v for v in HOSTILE if isinstance(v, str)]


def mutate_at(rng: random.Random, doc, path):
    if path and rng.random() < 0.1:
        parent = get_at(doc, path[:-1])
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
            return doc
    old = get_at(doc, path)
    # Mostly a value of the same kind (one the parser accepts, to reach what reads it).
    if isinstance(old, (int, float)) and not isinstance(old, bool) and rng.random() < 0.7:
        new = rng.choice(NUMBERS)
    elif isinstance(old, str) and rng.random() < 0.5:
        new = rng.choice(TEXTS)
    else:
        new = rng.choice(HOSTILE)
    if isinstance(new, (list, dict)):
        new = json.loads(json.dumps(new))
    return set_at(doc, path, new)


def mutate_json_file(rng: random.Random, p: Path) -> None:
    data = p.read_bytes()
    if rng.random() < 0.25:
        p.write_bytes(rb.mutate(rng, data))
        return
    try:
        doc = json.loads(data)
    except ValueError:
        p.write_bytes(rb.mutate(rng, data))
        return
    p.write_text(json.dumps(mutate_json_value(rng, doc)))


def mutate_seed(rng: random.Random, seed: Seed, dst: Path) -> str:
    """A mutant of `seed` at `dst` (a copy with one file changed); returns what changed."""
    if seed.path.is_dir():
        shutil.copytree(seed.path, dst)
        files = sorted(p for p in dst.rglob("*") if p.is_file())
        if seed.surface == "icechunk":
            # The files a reader decodes first are chosen more often.
            weights = [12 if p.name == "repo" else 3 if p.parent.name in ("snapshots", "manifests")
                       else 1 for p in files]
        else:
            weights = [len(files) if p.name == ".zmetadata" else 1 for p in files]
        f = rng.choices(files, weights)[0]
        if f.name == ".zmetadata":
            mutate_json_file(rng, f)
        elif rng.random() < 0.5:
            # One bit: what a disk or a network flips (a compressed file without a checksum
            # decodes to something else, not to an error).
            b = bytearray(f.read_bytes())
            if b:
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            f.write_bytes(bytes(b))
        else:
            f.write_bytes(rb.mutate(rng, f.read_bytes()))
        return str(f.relative_to(dst))
    shutil.copy(seed.path, dst)
    mutate_json_file(rng, dst)
    return dst.name


# --- runs ------------------------------------------------------------------------------------


CAUGHT = ("the Parquet reader failed", "the flexbuffer reader failed", "the icechunk crate failed")


def classify(r: rb.Run) -> str:
    err = r.stderr.decode(errors="replace")
    out = r.stdout.decode(errors="replace")
    if r.timed_out:
        return "hang"
    if "memory allocation of" in err or "out of memory" in err or r.returncode == -9:
        return "oom"
    if "panicked at" in err or "internal error" in err or r.returncode == 101:
        return "panic"
    if r.returncode is None or r.returncode < 0 or r.returncode > 2 or "fatal runtime error" in err:
        return "abort"
    if r.returncode == 0:
        return "ok"
    if "vzarr: error:" in err or ("MISMATCH" in out or "DEFECT" in out or "skipped" in out):
        return "caught panic" if any(c in err for c in CAUGHT) else "clean error"
    return "unclean error"


@dataclass
class Tally:
    """Counts of a campaign: mutants per surface, outcomes per surface and command."""

    mutants: collections.Counter = field(default_factory=collections.Counter)
    outcomes: dict = field(default_factory=lambda: collections.defaultdict(collections.Counter))
    problems: list = field(default_factory=list)
    max_rss: int = 0
    slowest: float = 0.0

    def merge(self, other: "Tally") -> None:
        self.mutants.update(other.mutants)
        for k, c in other.outcomes.items():
            self.outcomes[k].update(c)
        self.problems += other.problems
        self.max_rss = max(self.max_rss, other.max_rss)
        self.slowest = max(self.slowest, other.slowest)

    def problem_count(self) -> int:
        return sum(c[o] for c in self.outcomes.values() for o in PROBLEMS)

    def report(self) -> str:
        lines = []
        runs = sum(sum(c.values()) for c in self.outcomes.values())
        lines.append(f"{sum(self.mutants.values())} mutants, {runs} runs "
                     f"(limits: {MEMORY_LIMIT >> 20} MiB address space, {TIME_LIMIT:.0f} s); "
                     f"largest peak {self.max_rss >> 20} MiB, slowest {self.slowest:.2f} s")
        head = f"{'surface':<17} {'command':<8} " + " ".join(f"{o:>13}" for o in OUTCOMES)
        lines.append(head)
        for s in SURFACES:
            for cmd in ("cat", "verify", "upgrade"):
                c = self.outcomes.get((s, cmd))
                if c:
                    lines.append(f"{s:<17} {cmd:<8} " + " ".join(f"{c[o]:>13}" for o in OUTCOMES))
            lines.append(f"{s:<17} {'mutants':<8} {self.mutants[s]:>13}")
        total = collections.Counter()
        for c in self.outcomes.values():
            total.update(c)
        lines.append(f"{'all':<17} {'':<8} " + " ".join(f"{total[o]:>13}" for o in OUTCOMES))
        return "\n".join(lines)


def commands(seed: Seed, refs: Path, out: Path, allow: list[str]) -> list[tuple[str, list]]:
    cmds = [
        ("cat", ["cat", refs, seed.selection, *allow]),
        ("verify", ["verify", refs, *allow]),
    ]
    # Upgrade reads kerchunk references and vzarr's JSON (an Icechunk repository is refused).
    cmds.append(("upgrade", ["upgrade", refs, "-o", out, *allow]))
    return cmds


def run_one(args: tuple) -> Tally:
    """Mutant `k` (its seed chosen by the campaign seed), all its runs."""
    k, seed_index, seeds, work, campaign_seed, keep = args
    seed = seeds[seed_index]
    rng = random.Random(f"{campaign_seed}:{k}")
    t = Tally()
    mdir = work / f"m{k:06d}"
    mdir.mkdir()
    refs = mdir / seed.path.name
    changed = mutate_seed(rng, seed, refs)
    t.mutants[seed.surface] += 1
    allow = ["--allow-prefix", str(FIXTURES), "--allow-prefix", str(work)]
    kept = False
    for cmd, argv in commands(seed, refs, mdir / "upgraded.json", allow):
        r = rb.run(argv, env=RUN_ENV, memory_limit=MEMORY_LIMIT, time_limit=TIME_LIMIT)
        outcome = classify(r)
        if outcome == "hang":
            # Once more, alone on the machine as far as this worker goes: a slow run under
            # load is not a hang.
            r = rb.run(argv, env=RUN_ENV, memory_limit=MEMORY_LIMIT, time_limit=TIME_LIMIT * 3)
            outcome = classify(r)
        t.outcomes[(seed.surface, cmd)][outcome] += 1
        t.max_rss = max(t.max_rss, r.max_rss)
        t.slowest = max(t.slowest, r.seconds)
        if outcome in PROBLEMS:
            err = r.stderr.decode(errors="replace")
            t.problems.append(f"{outcome}: {seed.surface} mutant {k} ({changed}), {cmd}: "
                              f"exit {r.returncode}, {r.seconds:.1f} s\n{err[-1500:]}")
            if keep and not kept:
                dst = work / "problems" / f"m{k:06d}"
                dst.parent.mkdir(exist_ok=True)
                shutil.copytree(mdir, dst, dirs_exist_ok=True)
                kept = True
    shutil.rmtree(mdir, ignore_errors=True)
    return t


def campaign(work: Path, n: int, seed: int, jobs: int = 1, keep: bool = True,
             progress: bool = False) -> Tally:
    """Builds the seeds in `work` and runs `n` mutants (surfaces in turn, seeds of a surface in
    turn), `jobs` at once."""
    seeds = build_seeds(work / "seeds")
    by_surface = {s: [i for i, x in enumerate(seeds) if x.surface == s] for s in SURFACES}
    tasks = []
    for k in range(n):
        choices = by_surface[SURFACES[k % len(SURFACES)]]
        tasks.append((k, choices[(k // len(SURFACES)) % len(choices)], seeds, work, seed, keep))
    total = Tally()
    t0 = time.time()
    if jobs <= 1:
        results = map(run_one, tasks)
    else:
        pool = multiprocessing.get_context("fork").Pool(jobs)
        results = pool.imap_unordered(run_one, tasks, chunksize=4)
    for i, t in enumerate(results, 1):
        total.merge(t)
        if progress and (i % 100 == 0 or i == n):
            print(f"  {i}/{n} mutants, {total.problem_count()} problems, "
                  f"{time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    if jobs > 1:
        pool.close()
        pool.join()
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutants", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--work", type=Path, help="work directory (kept; default: a temporary one)")
    a = ap.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="vzarr-refs-campaign-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    try:
        t = campaign(work, a.mutants, a.seed, a.jobs, keep=a.work is not None, progress=True)
    finally:
        if a.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(t.report())
    print(f"{time.time() - t0:.0f} s; problems: {t.problem_count()}")
    for p in t.problems[:30]:
        print("  " + p.replace("\n", "\n    "))
    return 1 if t.problem_count() else 0


if __name__ == "__main__":
    sys.exit(main())
