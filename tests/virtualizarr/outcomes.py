"""Recording a yardstick run's outcomes (VirtualiZarr's suite, xarray's suite): one JSON line a
test, read by compare.py."""

from __future__ import annotations

import json
import os

import pytest


def record(report: pytest.TestReport, out: str | None, xdist: bool, **extra) -> None:
    """Appends the outcome of the test of ``report`` to ``out`` (nothing when ``out`` is
    unset): its call, or its failed or skipped set-up; for a failure its exception's first
    line. With pytest-xdist (``xdist``) only a worker writes (the controller hears every
    report again). ``extra`` goes into the line too."""
    if not out or (xdist and not os.environ.get("PYTEST_XDIST_WORKER")):
        return
    # Expected failures are "xfailed" / "xpassed", as pytest counts them.
    if report.when == "call" or (report.when == "setup" and not report.passed):
        reason = ""
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xpassed" if report.passed else "xfailed"
        elif report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            reason = crash.message.splitlines()[0] if crash and crash.message else ""
        with open(out, "a") as f:
            f.write(json.dumps({"test": report.nodeid, "outcome": outcome,
                                "reason": reason[:300], **extra}) + "\n")
