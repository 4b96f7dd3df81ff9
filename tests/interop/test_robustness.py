"""The robustness suite in the test run (see robustness.py): a seeded sample of mutants of
every fixture, every bomb and every tampered manifest, each through the vzarr binary under a
memory and a time limit. `scripts/robustness N` runs more mutants and prints the report."""

import os

import pytest

import robustness as rb


@pytest.fixture()
def work(tmp_path):
    return tmp_path


def check(report: rb.Report) -> None:
    print(report.summary())
    assert not report.problems, "\n".join(report.problems[:20])
    assert report.runs > 0


def test_mutants(work):
    report = rb.Report()
    n = int(os.environ.get("VZARR_MUTANTS", "240"))
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
