"""The real-file corpus (see test_real_files.py) through Icechunk: each file (every other one
unless `scripts/test --full`) built into a repository, read by icechunk-python and
zarr-python, and verified by `vzarr verify`. A file of
its own so that it runs beside test_real_files.py (the interop suite runs a file per worker)."""

import shutil

from conftest import run_vzarr
from test_real_files import FULL, REAL_DIR, REAL_FILES, Tally, verify_readers


def test_every_array_of_an_icechunk_repository_matches_an_independent_reader(tmp_path):
    """Every array of each corpus file, read through the Icechunk repository vzarr builds
    from it by icechunk-python (authorising the containers it lists) and zarr-python, equals
    what h5py or netCDF4-python reads, or is reported skipped; `vzarr verify` accepts every
    other one (vzarr's own reader of repositories against vzarr's readers of the sources; with
    `scripts/test --full` every one, then against libhdf5/netCDF-C too)."""
    from test_icechunk import build_repo, open_local, zarr_group

    t = Tally()
    # Every corpus file with --full; else every other one (test_real_files.py reads every file
    # through the reference files: the mapping is the same, the writer is not).
    files = REAL_FILES if FULL else REAL_FILES[1::2]
    for i, p in enumerate(files):
        repo_path = tmp_path / f"repo{i}"
        b = build_repo(repo_path, p, check=False)
        if b.returncode != 0:
            t.problems.append(f"{p.relative_to(REAL_DIR)}: build failed: {b.stderr.strip()[-300:]}")
            continue
        repo, _ = open_local(repo_path)
        t.check(p, zarr_group(repo))
        # vzarr's reader of repositories on every other file of those (every file with
        # --full): the values of each are compared with h5py/netCDF4 through icechunk-python
        # above.
        readers = verify_readers(p) if FULL else ["native"] if i % 2 == 0 else []
        for readers in readers:
            v = run_vzarr("verify", repo_path, "--trust-references", "--readers", readers, check=False)
            if v.returncode != 0:
                t.problems.append(f"{p.relative_to(REAL_DIR)}: vzarr verify --readers {readers} failed:\n"
                                  f"{v.stdout[-1500:]}{v.stderr[-500:]}")
        shutil.rmtree(repo_path)
    t.assert_complete("Icechunk, icechunk-python", files)
