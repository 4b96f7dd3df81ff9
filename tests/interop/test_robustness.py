"""The robustness suite in the test run (see robustness.py): a seeded sample of mutants of
every fixture, every bomb and every tampered manifest, each through the vzarr binary under a
memory and a time limit. `scripts/robustness N` runs more mutants and prints the report.
Mutants of reference files (robustness_refs.py): a seeded sample here, `scripts/robustness
references N` for the campaign."""

import os

import pytest

import robustness as rb
import robustness_refs as rr

# `scripts/test --full` runs the larger samples; the default run takes two thirds of them
# (the file was the second longest of the interop run at 173 s).
FULL = os.environ.get("VZARR_TEST_FULL") == "1"


@pytest.fixture()
def work(tmp_path):
    return tmp_path


def check(report: rb.Report) -> None:
    print(report.summary())
    assert not report.problems, "\n".join(report.problems[:20])
    assert report.runs > 0


def test_mutants(work):
    report = rb.Report()
    n = int(os.environ.get("VZARR_MUTANTS", "240" if FULL else "160"))
    rb.run_mutants(work, n, seed=20261123, report=report)
    check(report)
    assert report.errors > 0, "mutants should break some files"


def test_bombs(work):
    report = rb.Report()
    rb.run_bombs(work, report)
    check(report)


def test_tampered_manifests(work):
    report = rb.Report()
    rb.run_tampered(work, report)
    check(report)
    assert report.ok == 0, "every tampered manifest must be refused"


def test_reference_mutants(work):
    """A seeded sample of the reference-file campaign: kerchunk JSON and Parquet, vzarr JSON,
    Icechunk repositories, each mutant through cat, verify and upgrade under 1 GiB and 10 s."""
    n = int(os.environ.get("VZARR_REF_MUTANTS", "120" if FULL else "80"))
    t = rr.campaign(work, n, seed=20261202, jobs=1, keep=False)
    print(t.report())
    assert t.problem_count() == 0, "\n".join(t.problems[:20])
    assert sum(t.mutants.values()) == n
    runs = {o: sum(c[o] for c in t.outcomes.values()) for o in rr.OUTCOMES}
    assert runs["ok"] > 0 and runs["clean error"] > 0, runs
