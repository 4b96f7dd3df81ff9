"""The peer and the checks of benches/icechunk (run by bench.py, one process per call).

    peers.py virtualizarr FILE -o REPO     VirtualiZarr 2.8: open_virtual_dataset(HDFParser)
                                           + vds.vz.to_icechunk(session.store) + commit
    peers.py check REPO FILE [FILE...]     opens REPO with icechunk-python (authorising the
                                           virtual chunk containers it lists) + xarray and
                                           compares samples of every variable with h5py

Each prints one JSON line on stdout: the phase times of the peer, or what the check found.
"""

from __future__ import annotations

import json
import os
import sys
import time

T_START = time.perf_counter()


def emit(**kw) -> None:
    print(json.dumps(kw), flush=True)


def run_virtualizarr(path: str, out: str) -> None:
    import icechunk
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    t_import = time.perf_counter()
    path = os.path.abspath(path)
    root = os.path.dirname(path)
    # One local store for the file's directory, as the VirtualiZarr docs show for local files.
    registry = ObjectStoreRegistry({f"file://{root}": LocalStore(prefix=root)})
    vds = open_virtual_dataset(url=f"file://{path}", registry=registry, parser=HDFParser())
    t_scan = time.perf_counter()
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(f"file://{root}/", icechunk.local_filesystem_store(root))
    )
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(out), config)
    session = repo.writable_session("main")
    vds.vz.to_icechunk(session.store)
    t_refs = time.perf_counter()
    session.commit("VirtualiZarr to_icechunk")
    t_commit = time.perf_counter()
    emit(imports=t_import - T_START, scan=t_scan - t_import, set_refs=t_refs - t_scan,
         commit=t_commit - t_refs)


def check(repo_path: str, files: list[str]) -> None:
    """Every variable of the sources, sampled (first, middle and last rows along the first
    axis, stacked along a new first axis when there are several files), equal through
    icechunk-python + xarray; and the number of commits on main."""
    import h5py
    import icechunk
    import numpy as np
    import xarray as xr

    storage = icechunk.local_filesystem_storage(repo_path)
    conts = sorted((icechunk.Repository.open(storage).config.virtual_chunk_containers or {}))
    creds = icechunk.containers_credentials(
        {c: icechunk.credentials.LocalFileSystemAccess for c in conts})
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)
    ds = xr.open_zarr(repo.readonly_session("main").store, consolidated=False, zarr_format=3,
                      mask_and_scale=False)
    commits = len(list(repo.ancestry(branch="main")))
    compared = 0
    picks = sorted({0, len(files) // 2, len(files) - 1})
    for k in picks:
        with h5py.File(files[k], "r") as f:
            for name, src in f.items():
                if not isinstance(src, h5py.Dataset) or name not in ds:
                    continue
                got = ds[name]
                if len(files) > 1:
                    got = got[k]
                n = src.shape[0]
                for sl in (slice(0, 2), slice(n // 2, n // 2 + 2), slice(n - 2, n)):
                    want = src[sl] if src.ndim == 1 else src[sl, ...]
                    have = got[sl].values
                    if not np.array_equal(want, have):
                        emit(ok=False, error=f"{name}[{k}][{sl}] differs")
                        sys.exit(1)
                    compared += want.size
    if not compared:
        emit(ok=False, error="no variable compared")
        sys.exit(1)
    emit(ok=True, values_compared=int(compared), commits=commits, containers=conts,
         branches=sorted(repo.list_branches()))


def main() -> int:
    if len(sys.argv) >= 4 and sys.argv[1] == "virtualizarr" and sys.argv[3] == "-o":
        run_virtualizarr(sys.argv[2], sys.argv[4])
    elif len(sys.argv) >= 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
