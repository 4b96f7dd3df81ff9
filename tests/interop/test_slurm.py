"""The README's scale-out path on a real batch engine: a single-node Slurm cluster from Debian's
packages (scripts/slurm/test-cluster) runs scripts/slurm/submit over a catalog, a job array of
`vzarr scan --shard K/N` tasks and a combine job after them (--dependency=afterok), and the
result must be byte-identical to a one-process `vzarr build` of the same catalog. Then the
unhappy path: one task fails, the combine job never runs, `vzarr combine` by hand names the
missing shard, and rerunning only that task plus the combine gives the same bytes again. And a
catalog of s3:// URLs (the moto server on loopback), with the credentials passed to the jobs
through the environment.

The cluster is started once for this module and stopped (daemons ended, state removed) at the
end, whatever happened. If Slurm cannot be installed, the tests fail; they never skip."""

import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, vzarr_bin
from test_concat import write_archive

CLUSTER = ROOT / "scripts" / "slurm" / "test-cluster"
SUBMIT = ROOT / "scripts" / "slurm" / "submit"
MONTHS = sorted((ROOT / "fixtures" / "archive").glob("tas_2023*.nc"))
N = 5  # shards: 12 sources give shards of 3, 3, 2, 2, 2
BAD_TASK = 2
TERMINAL = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
    "PREEMPTED",
}


def vzarr_abs() -> str:
    return str(Path(vzarr_bin()).resolve())


def run(cmd, env, timeout=60, check=True, **kw):
    p = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture(scope="module")
def slurm():
    """A running single-node Slurm cluster; yields the environment that reaches it."""
    # Short and fixed per checkout: munge's socket path must stay short, and a later run
    # finds (and cleans up) what a killed earlier run left there.
    tag = hashlib.sha256(str(ROOT).encode()).hexdigest()[:10]
    cluster_dir = Path("/tmp") / f"vzarr-slurm-{tag}"
    try:
        try:
            p = subprocess.run([CLUSTER, "start", cluster_dir], capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            pytest.fail("starting the test Slurm cluster (apt-get install included) took over 15 minutes")
        if p.returncode != 0:
            pytest.fail(
                "could not install or start the single-node Slurm cluster (Debian packages slurmctld, "
                f"slurmd, slurm-client, munge) that this test needs:\n{p.stderr}"
            )
        env = dict(os.environ, SLURM_CONF=str(cluster_dir / "slurm.conf"), VZARR_BIN=vzarr_abs())
        yield env
    finally:
        subprocess.run([CLUSTER, "stop", cluster_dir], timeout=120)
    assert not cluster_dir.exists(), f"{cluster_dir} left behind"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    """A catalog of copies of the 12 monthly NetCDF4 files (relative and absolute paths, out of
    time order, with a comment), and the one-process build of it."""
    base = tmp_path_factory.mktemp("catalog")
    data = base / "data"
    data.mkdir()
    files = []
    for m in MONTHS:
        shutil.copy2(m, data / m.name)
        files.append(data / m.name)
    assert len(files) == 12
    order = [5, 0, 11, 3, 8, 1, 10, 7, 2, 9, 4, 6]
    lines = ["# monthly tas, out of order on purpose"]
    for i, j in enumerate(order):
        lines.append(f"data/{files[j].name}" if i % 2 else str(files[j]))
    cat = base / "files.txt"
    cat.write_text("\n".join(lines) + "\n")
    single = base / "single.json"
    run([vzarr_abs(), "build", "--catalog", cat, "--concat-dim", "time", "-o", single], os.environ)
    # The source of catalog position 7 (7 % 5 == BAD_TASK) is the one made to fail below.
    bad = files[order[7]]
    assert 7 % N == BAD_TASK
    return cat, single.read_bytes(), bad


def submit(env, *args, cwd):
    p = run([SUBMIT, *args], env, cwd=cwd)
    ids = dict(re.findall(r"^(array_job|combine_job)=(\d+)$", p.stdout, re.M))
    assert set(ids) == {"array_job", "combine_job"}, p.stdout + p.stderr
    return ids["array_job"], ids["combine_job"]


def job_records(env, job_id):
    """scontrol's records of a job (one per array task), as dicts. No accounting needed."""
    p = run(["scontrol", "--oneliner", "show", "job", job_id], env, timeout=20)
    recs = []
    for line in p.stdout.splitlines():
        if line.strip():
            recs.append(dict(re.findall(r"(\w+)=(\S*)", line)))
    return recs


def wait(env, job_id, done, what, timeout=180):
    """Polls scontrol until done(records) is true; fails with the records after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        recs = job_records(env, job_id)
        if done(recs):
            return recs
        if time.monotonic() > deadline:
            states = [[r.get(k) for k in ("JobId", "ArrayTaskId", "JobState", "Reason")] for r in recs]
            pytest.fail(f"job {job_id}: not {what} after {timeout} s: {states}")
        time.sleep(0.5)


def logs(work: Path) -> str:
    """The jobs' logs, for failure messages."""
    return "\n".join(f"--- {p.name}\n{p.read_text()}" for p in sorted((work / "logs").glob("*")))


def finished(recs):
    return bool(recs) and all(r.get("JobState") in TERMINAL for r in recs)


def task_states(recs):
    return {int(r["ArrayTaskId"]): r["JobState"] for r in recs}


def test_array_then_combine_equals_the_single_process_build(slurm, catalog, tmp_path):
    cat, single, _ = catalog
    work = tmp_path / "run"
    out = tmp_path / "tas.json"
    array_job, combine_job = submit(slurm, cat, N, work, out, "--concat-dim", "time", cwd=tmp_path)

    recs = wait(slurm, combine_job, finished, "finished")
    assert recs[0]["JobState"] == "COMPLETED", (recs, logs(work))
    assert recs[0]["Dependency"] == "(null)"  # satisfied, so cleared
    tasks = task_states(wait(slurm, array_job, finished, "finished"))
    assert tasks == {k: "COMPLETED" for k in range(N)}, (tasks, logs(work))

    assert sorted(p.name for p in (work / "parts").iterdir()) == [f"part-{k}.json" for k in range(N)]
    log = (work / "logs" / f"vzarr-scan-{array_job}_4.out").read_text()
    assert f"shard 4/{N}, 2 of 12 sources" in log, log
    assert out.read_bytes() == single, "the Slurm-sharded build differs from the one-process build"


def test_a_failed_task_blocks_the_combine_and_a_rerun_of_it_recovers(slurm, catalog, tmp_path):
    cat, single, bad = catalog
    work = tmp_path / "run"
    out = tmp_path / "tas.json"
    # The file of one catalog entry is broken while the array runs (as if being rewritten):
    # only the task whose shard holds it fails. Renames keep the original's mtime, so the
    # restored file is the very source of the one-process build.
    good = bad.with_name(bad.name + ".good")
    os.replace(bad, good)
    try:
        data = good.read_bytes()
        bad.write_bytes(data[: len(data) // 2])
        array_job, combine_job = submit(slurm, cat, N, work, out, "--concat-dim", "time", cwd=tmp_path)
        tasks = task_states(wait(slurm, array_job, finished, "finished"))
    finally:
        os.replace(good, bad)
    assert tasks == {k: "FAILED" if k == BAD_TASK else "COMPLETED" for k in range(N)}, (tasks, logs(work))
    log = (work / "logs" / f"vzarr-scan-{array_job}_{BAD_TASK}.out").read_text()
    assert bad.name in log and "truncated" in log, log

    # afterok: the combine job never starts; Slurm keeps it pending as never satisfiable.
    recs = wait(
        slurm,
        combine_job,
        lambda r: r and r[0].get("Reason") == "DependencyNeverSatisfied",
        "DependencyNeverSatisfied",
        timeout=60,
    )
    assert recs[0]["JobState"] == "PENDING", recs
    assert "(failed)" in recs[0]["Dependency"], recs
    assert not out.exists()
    parts = sorted((work / "parts").glob("part-*.json"))
    assert [p.name for p in parts] == [f"part-{k}.json" for k in range(N) if k != BAD_TASK]

    # Combining by hand what is there names the missing shard and writes nothing.
    p = run([slurm["VZARR_BIN"], "combine", *parts, "--concat-dim", "time", "-o", out], slurm, check=False)
    assert p.returncode != 0
    assert f"missing shard(s) {BAD_TASK} of {N}" in p.stderr, p.stderr
    assert not out.exists()

    # So does the combine job script when submitted without the dependency.
    lone = run(
        ["sbatch", "--parsable", f"--output={work}/logs/lone-combine.out",
         ROOT / "scripts/slurm/combine.sbatch", N, work / "parts", out, "--concat-dim", "time"],
        slurm,
    ).stdout.strip().split(";")[0]
    recs = wait(slurm, lone, finished, "finished")
    assert recs[0]["JobState"] == "FAILED", recs
    log = (work / "logs" / "lone-combine.out").read_text()
    assert f"missing the partial scans of shard(s) {BAD_TASK} of {N}" in log, log
    assert not out.exists()

    # Cancel the stuck combine, rerun only the failed task with a new combine after it.
    run(["scancel", combine_job], slurm)
    wait(slurm, combine_job, lambda r: r and r[0].get("JobState") == "CANCELLED", "cancelled", timeout=60)
    before = {p.name: p.stat().st_mtime_ns for p in parts}
    rerun_job, combine2_job = submit(
        slurm, "--array", BAD_TASK, cat, N, work, out, "--concat-dim", "time", cwd=tmp_path
    )
    recs = wait(slurm, combine2_job, finished, "finished")
    assert recs[0]["JobState"] == "COMPLETED", (recs, logs(work))
    assert task_states(job_records(slurm, rerun_job)) == {BAD_TASK: "COMPLETED"}
    assert {p.name: p.stat().st_mtime_ns for p in parts} == before, "only the failed task ran again"
    assert out.read_bytes() == single, "the rerun's combined output differs from the one-process build"


def test_a_catalog_of_s3_urls(slurm, moto_server, tmp_path):
    """The jobs get the object-store credentials from the submitting environment; vzarr scan
    options pass through submit's --scan-opt."""
    client, s3_env = moto_server
    bucket = "vzarr-slurm"
    client.create_bucket(Bucket=bucket)
    paths = write_archive(tmp_path, [(2022, m) for m in range(1, 7)], fmt="NETCDF3_64BIT_OFFSET")
    for p in paths:
        client.upload_file(str(p), bucket, f"nc3/{p.name}")
    cat = tmp_path / "s3.txt"
    cat.write_text("".join(f"s3://{bucket}/nc3/{p.name}\n" for p in paths))
    env = dict(s3_env, SLURM_CONF=slurm["SLURM_CONF"], VZARR_BIN=slurm["VZARR_BIN"])
    single = tmp_path / "single.json"
    run([slurm["VZARR_BIN"], "build", "--catalog", cat, "--concat-dim", "time", "-o", single], env)

    work = tmp_path / "run"
    out = tmp_path / "s3.json"
    cache = tmp_path / "cache"
    array_job, combine_job = submit(
        env, "--scan-opt", f"--cache-dir={cache}", "--scan-opt", "--jobs=2",
        cat, 4, work, out, "--concat-dim", "time", cwd=tmp_path,
    )
    recs = wait(env, combine_job, finished, "finished")
    assert recs[0]["JobState"] == "COMPLETED", (recs, logs(work))
    assert task_states(job_records(env, array_job)) == {k: "COMPLETED" for k in range(4)}
    assert out.read_bytes() == single.read_bytes()
    assert f"s3://{bucket}/nc3/{paths[0].name}" in out.read_text()
    # The --scan-opt options reached vzarr scan: every source's scan is in the cache.
    assert len([p for p in cache.rglob("*") if p.is_file()]) >= len(paths), logs(work)
