"""Every reference set kerchunk 0.2.10 (pinned) makes of the real-file corpus (see
test_real_files.py): read by vzarr, audited and verified against its source with no false
alarm (kerchunk's own defects, listed below with what they are, named by kind), and upgraded
to Zarr v3 JSON and to an Icechunk repository that zarr-python and icechunk-python read equal
to h5py and netCDF4-python, where only what the audit found defective is left out, each with
its reason.

kerchunk's references are made by kerchunk_corpus.py and kept in the user's cache by the
SHA-256 of each file (with kerchunk's version and that program's own hash), as
scripts/real-files keeps the files: kerchunk takes about a minute over the corpus on two cores,
most of it waiting out the files it never finishes."""

import hashlib
import json
import os
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kerchunk
import pytest
import zarr

from conftest import assert_values_equal, open_store, run_vzarr
from kerchunk_corpus import sha256
from test_kerchunk_refs import left_out
from test_real_files import FULL, REAL_DIR, REAL_FILES, source_arrays

GENERATOR = Path(__file__).with_name("kerchunk_corpus.py")
# Seconds kerchunk may take for one file (it takes under 2 s for all it finishes).
KERCHUNK_TIMEOUT = 10


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    made_by = hashlib.sha256(GENERATOR.read_bytes()).hexdigest()[:12]
    return base / "vzarr" / "kerchunk-refs" / f"kerchunk-{kerchunk.__version__}-{made_by}"


# The kinds of kerchunk's own defects in its references of corpus files (38 of 234 files):
# - missing: scalar variable-length strings, which the file keeps in its global heap (NWB and
#   hdmf files, NeXus, PyTables, a CFA file): kerchunk leaves their one chunk out, so they
#   read as the fill value "";
# - fill value: a character scalar never written (a CF grid mapping), or a PyTables index
#   never written: the file gives it the fill value 0, kerchunk " ";
# - metadata: HDF5 object and region references (stored by kerchunk as the text "None") and
#   variable-length sequences, which vzarr reads as paths or leaves out, naming why.
KERCHUNK_DEFECT_KINDS = {"missing", "fill-value", "metadata"}


@pytest.fixture(scope="module")
def corpus_refs(tmp_path_factory) -> dict:
    """{corpus file: kerchunk's references of it (a JSON file whose URLs name the file where
    it is now), or why kerchunk made none}."""
    cache = cache_dir()
    p = subprocess.run([sys.executable, str(GENERATOR), str(cache), "--timeout",
                        str(KERCHUNK_TIMEOUT), "--jobs", "2", *map(str, REAL_FILES)],
                       capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-3000:]
    d = tmp_path_factory.mktemp("kerchunk-corpus")
    out = {}
    for i, src in enumerate(REAL_FILES):
        key = sha256(src)
        made = cache / f"{key}.json"
        if not made.exists():
            out[src] = (cache / f"{key}.failed").read_text()
            continue
        refs = json.loads(made.read_text())
        # Made from a file with the same bytes, maybe another (the corpus holds a few copies
        # under other names) or elsewhere (another checkout).
        for v in refs["refs"].values():
            if isinstance(v, list) and v and isinstance(v[0], str):
                v[0] = str(src)
        path = d / f"{i:03}-{src.name}.json"
        path.write_text(json.dumps(refs))
        out[src] = path
    return out


def made(corpus_refs) -> dict:
    return {src: r for src, r in corpus_refs.items() if isinstance(r, Path)}


def test_kerchunk_made_references_of_the_corpus(corpus_refs):
    """kerchunk makes references for nearly all the corpus; what it does not is its own
    failure (a timeout or an exception of kerchunk's), listed."""
    failed = {str(s.relative_to(REAL_DIR)): r for s, r in corpus_refs.items()
              if not isinstance(r, Path)}
    print(f"kerchunk made references of {len(made(corpus_refs))} of {len(REAL_FILES)} corpus "
          f"files; none of {len(failed)}:\n" + "\n".join(f"  {k}: {v}" for k, v in failed.items()))
    assert all(r.startswith("kerchunk") for r in failed.values()), failed
    assert len(made(corpus_refs)) >= 225, failed


def verify_json(job: tuple[Path, Path]) -> tuple[int, dict]:
    src, refs = job
    # The file is named: kerchunk's references of a small file may name none (all inline).
    p = run_vzarr("verify", refs, "--source", src, "--allow-prefix", REAL_DIR,
                  "--readers", "native", "--json", "--max-reported", "100000", check=False)
    try:
        return p.returncode, json.loads(p.stdout)
    except json.JSONDecodeError:
        return p.returncode, {"error": p.stderr[-1000:]}


@pytest.fixture(scope="module")
def verified(corpus_refs) -> dict:
    """{corpus file: (exit status, vzarr verify's JSON report)} of every reference set."""
    refs = made(corpus_refs)
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(refs, pool.map(verify_json, refs.items())))


def test_verify_names_kerchunks_defects_and_nothing_else(verified):
    """vzarr verify of each reference set, told the file it was made from: the audit names
    an array defective only where values read through the references differ from vzarr's
    reader of the source (no false alarm), every array whose values differ is named (no
    defect unnamed), the kinds are kerchunk's known ones, and the exit status says so."""
    problems, clean, named = [], 0, {}
    for src, (rc, r) in verified.items():
        name = str(src.relative_to(REAL_DIR))
        if "error" in r:
            problems.append(f"{name}: vzarr verify failed: {r['error']}")
            continue
        audit = r["audit"]
        kinds = {k.replace(" ", "-") for k in audit["by_kind"]}
        defective = set(audit["defective_arrays"])
        differ = {m["array"] for m in r["mismatches"]}
        skipped = {s["array"] for s in r["skipped"]}
        if kinds - KERCHUNK_DEFECT_KINDS:
            problems.append(f"{name}: defects of kinds {kinds - KERCHUNK_DEFECT_KINDS}:\n"
                            + "\n".join(json.dumps(d) for d in audit["defects"][:5]))
        if defective - differ - skipped:
            problems.append(f"{name}: false alarm: {sorted(defective - differ - skipped)} "
                            f"named defective, yet read equal:\n{audit['defective_arrays']}")
        if differ - defective:
            problems.append(f"{name}: values differ in {sorted(differ - defective)}, which the "
                            "audit does not name")
        if rc != (1 if defective or differ else 0):
            problems.append(f"{name}: exit status {rc}")
        if defective:
            named[name] = audit["by_kind"]
        else:
            clean += 1
    print(f"verified kerchunk's references of {len(verified)} corpus files: {clean} clean, "
          f"{len(named)} with kerchunk's own defects named:\n"
          + "\n".join(f"  {k}: {v}" for k, v in named.items()))
    assert not problems, "\n".join(problems)
    # kerchunk's defects are there to be found: 38 files on this machine.
    assert len(named) >= 30, named


def upgrade(src: Path, refs: Path, out: Path, defective: bool, *extra):
    leave = ["--leave-out-defective", "--source", src] if defective else []
    return run_vzarr("upgrade", refs, "-o", out, "--allow-prefix", REAL_DIR, *leave, *extra,
                     check=False)


def has_defects(report: tuple[int, dict]) -> bool:
    rc, r = report
    return rc != 0 or bool(r.get("audit", {}).get("by_kind"))


def compare_with_source(src: Path, kept_by_kerchunk: set, group, stderr: str) -> list[str]:
    """Every array kerchunk's references hold is in `group` equal to the source (h5py or
    netCDF4-python) or reported left out; returns what is not."""
    name = str(src.relative_to(REAL_DIR))
    skipped = left_out(stderr)
    got = {p: a for p, a in group.members(max_depth=None) if isinstance(a, zarr.Array)}
    problems = []
    for path, read in source_arrays(src):
        if path not in kept_by_kerchunk:
            continue
        if path in skipped:
            continue
        if path not in got:
            problems.append(f"{name}:{path} neither upgraded nor reported left out")
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = read()
        except Exception:  # noqa: BLE001  (types the reference reader cannot read either)
            continue
        try:
            assert_values_equal(expected, got[path][...], f"{name}:{path}")
        except AssertionError as e:
            problems.append(str(e))
    return problems


def icechunk_group(repo_path: Path):
    """The root group of a repository, read by icechunk-python with access to the local
    files its virtual chunk containers name."""
    import icechunk
    storage = icechunk.local_filesystem_storage(str(repo_path))
    conts = sorted((icechunk.Repository.open(storage).config.virtual_chunk_containers or {}))
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=(
        icechunk.containers_credentials(
            {c: icechunk.credentials.LocalFileSystemAccess for c in conts})))
    return zarr.open_group(repo.readonly_session(branch="main").store, mode="r", zarr_format=3)


def arrays_in(refs: Path) -> set:
    return {k[: -len("/.zarray")] for k in json.loads(refs.read_text())["refs"]
            if k.endswith("/.zarray")}


@pytest.mark.parametrize("fmt", ["json", "icechunk"])
def test_upgraded_references_read_equal_to_the_sources(corpus_refs, verified, tmp_path, fmt):
    """`vzarr upgrade` of each reference set (with --leave-out-defective, audited against the
    file it was made from, where verify found defects) to Zarr v3 JSON or to an Icechunk
    repository: read by zarr-python (through icechunk-python for Icechunk), every array
    kerchunk's references hold equals h5py's or netCDF4-python's reading of the source, or is
    reported left out with the reason. Icechunk takes every set with defects and a fixed
    quarter of the others (the same writer as `vzarr build`, which test_real_files_icechunk.py
    takes through every corpus file); `scripts/test --full` takes them all."""
    refs = made(corpus_refs)
    ext = ".json" if fmt == "json" else ".repo"
    jobs = [(src, r, tmp_path / f"{i:03}{ext}") for i, (src, r) in enumerate(refs.items())
            if fmt == "json" or FULL or i % 4 == 0 or has_defects(verified[src])]

    def run(job):
        src, r, out = job
        return upgrade(src, r, out, has_defects(verified[src]),
                       *(["--format", "icechunk"] if fmt == "icechunk" else []))

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run, jobs))
    problems = []
    for (src, r, out), p in zip(jobs, results):
        name = str(src.relative_to(REAL_DIR))
        if p.returncode != 0:
            problems.append(f"{name}: upgrade failed: {p.stderr[-500:]}")
            continue
        if fmt == "json":
            group = zarr.open_group(open_store(json.loads(out.read_text())), mode="r",
                                    zarr_format=3)
        else:
            group = icechunk_group(out)
        problems += compare_with_source(src, arrays_in(r), group, p.stderr)
    left = sum("references are defective" in p.stderr for p in results)
    print(f"upgraded {len(jobs)} reference sets to {fmt}; defective arrays left out of {left}")
    assert not problems, "\n".join(problems[:40])
    assert left >= 30, left
