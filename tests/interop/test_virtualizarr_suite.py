"""VirtualiZarr 2.8.0's own tests with vzarr's parser substituted for HDFParser and
NetCDF3Parser (tests/virtualizarr/run --ours): every test that fails is one listed, with its
reason, in tests/virtualizarr/known-failures.txt, so a regression of the parser as a drop-in
fails here; so does a listed test that passes (the list is out of date), a collection error,
a crashed worker, a pytest exit other than 0 or 1, and a run that recorded nothing. The whole suite (about a minute on two workers); the baseline run with
VirtualiZarr's own parsers, which only gives the comparison's figures, is left to
`tests/virtualizarr/run` by hand.

In a clean-clone CI run on 2026-11-28, 17 of the suite's tests failed while writing their
netCDF4 test files ("RuntimeError: NetCDF: HDF error"), and it was run under `scripts/test
--full` only for a while. The disk is the likely cause, not the suite: HDF5 reports a failed
write as "HDF error", the machine's disk was nearly full of old CI clones that day (2 GB free
once they were counted), and the next clean-clone run failed compiling with "No space left on
device". With the space back it passes again, the clean-clone CI run included, so it is back
in the default run; a failure of this kind names the tests and their errors here."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT


def test_virtualizarrs_suite_fails_only_where_known(tmp_path):
    env = dict(os.environ, VZARR_INTEROP_PYTHON=sys.executable,
               VZARR_YARDSTICK_DIR=os.environ.get(
                   "VZARR_YARDSTICK_DIR", str(ROOT / ".tools" / "virtualizarr-yardstick")))
    p = subprocess.run([str(ROOT / "tests" / "virtualizarr" / "run"), "--ours"], env=env,
                       capture_output=True, text=True, timeout=1200)
    print(p.stdout)
    print(p.stderr, file=sys.stderr)
    assert p.returncode == 0, f"failures not in known-failures.txt:\n{p.stdout[-6000:]}"
    assert "tests run with vzarr's parser" in p.stdout
