"""The peers and the checks of benches/living (run by bench.py, one process per call).

    peers.py icechunk REPO REFS.json DAY.nc   icechunk-python alone: the arrays along time
                                             resized by one, the day's time value written,
                                             its tas references (REFS.json: vzarr's
                                             references of DAY.nc) set with
                                             store.set_virtual_refs, one commit
    peers.py virtualizarr REPO DAY.nc         VirtualiZarr 2.8: open_virtual_dataset
                                             (HDFParser) + vds.vz.to_icechunk(store,
                                             append_dim="time") + commit
    peers.py check-day REPO DAY.nc N          REPO holds N+1 steps and its step N (tas and
                                             time, as stored) equals DAY.nc's, read by
                                             netCDF4-python
    peers.py compare REPO_A REPO_B --tail T   the two repositories read equal: every array's
                                             shape, dtype and attributes, time/lat/lon whole,
                                             tas over the last T steps whole, two grid
                                             points' whole series and the first step

Each prints one JSON line on stdout: the phase times of the peer (seconds), or what the check
found. The repositories are read with icechunk-python 2.3 and zarr-python, the virtual
chunk containers they list authorised.
"""

from __future__ import annotations

import json
import os
import sys
import time

T_START = time.perf_counter()


def emit(**kw) -> None:
    print(json.dumps(kw), flush=True)


def open_repo(path: str):
    import icechunk

    storage = icechunk.local_filesystem_storage(path)
    conts = sorted(icechunk.Repository.open(storage).config.virtual_chunk_containers or {})
    creds = icechunk.containers_credentials(
        {c: icechunk.credentials.LocalFileSystemAccess for c in conts})
    return icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)


def run_icechunk(repo_path: str, refs_path: str, day: str) -> None:
    """The day's references written with icechunk-python's own calls: what a user of
    Icechunk alone, given the references (here vzarr's JSON of that one file), does."""
    import icechunk
    import netCDF4
    import zarr

    t_import = time.perf_counter()
    with open(refs_path) as f:
        refs = json.load(f)["refs"]
    with netCDF4.Dataset(day) as nc:
        nc.set_auto_maskandscale(False)
        tval = nc["time"][:]
    specs = []
    t_read = time.perf_counter()
    repo = open_repo(repo_path)
    session = repo.writable_session("main")
    store = session.store
    root = zarr.open_group(store, mode="r+", zarr_format=3)
    tas, tim = root["tas"], root["time"]
    n = tas.shape[0]
    tas.resize((n + 1, *tas.shape[1:]))
    tim.resize((n + 1,))
    tim[n:] = tval
    t_meta = time.perf_counter()
    for key, v in refs.items():
        if not key.startswith("tas/c/"):
            continue
        if not isinstance(v, list) or len(v) != 3:
            raise SystemExit(f"{key}: not a [url, offset, length] reference: {v!r:.80}")
        idx = [int(x) for x in key[len("tas/c/"):].split("/")]
        url = v[0] if "://" in v[0] else "file://" + os.path.abspath(v[0])
        specs.append(icechunk.VirtualChunkSpec(index=[n + idx[0], *idx[1:]], location=url,
                                               offset=int(v[1]), length=int(v[2])))
    if len(specs) != 288:
        raise SystemExit(f"{len(specs)} tas references in {refs_path}, not 288")
    failed = store.set_virtual_refs("tas", specs, validate_containers=True)
    if failed:
        raise SystemExit(f"set_virtual_refs refused {len(failed)} references (no container?)")
    t_refs = time.perf_counter()
    session.commit(f"append {os.path.basename(day)} (icechunk-python)")
    t_commit = time.perf_counter()
    emit(imports=t_import - T_START, read_refs=t_read - t_import, open_resize=t_meta - t_read,
         set_refs=t_refs - t_meta, commit=t_commit - t_refs, refs=len(specs))


def run_virtualizarr(repo_path: str, day: str) -> None:
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    t_import = time.perf_counter()
    path = os.path.abspath(day)
    root = os.path.dirname(path)
    registry = ObjectStoreRegistry({f"file://{root}": LocalStore(prefix=root)})
    vds = open_virtual_dataset(url=f"file://{path}", registry=registry, parser=HDFParser())
    t_scan = time.perf_counter()
    repo = open_repo(repo_path)
    session = repo.writable_session("main")
    vds.vz.to_icechunk(session.store, append_dim="time")
    t_refs = time.perf_counter()
    session.commit(f"append {os.path.basename(day)} (VirtualiZarr)")
    t_commit = time.perf_counter()
    emit(imports=t_import - T_START, scan=t_scan - t_import, to_icechunk=t_refs - t_scan,
         commit=t_commit - t_refs)


def zarr_root(repo_path: str):
    import zarr

    zarr.config.set({"array.rectilinear_chunks": True})
    repo = open_repo(repo_path)
    return repo, zarr.open_group(repo.readonly_session("main").store, mode="r", zarr_format=3)


def check_day(repo_path: str, day: str, n: int) -> None:
    import netCDF4
    import numpy as np

    repo, g = zarr_root(repo_path)
    with netCDF4.Dataset(day) as nc:
        nc.set_auto_maskandscale(False)
        want_tas, want_t = nc["tas"][:], nc["time"][:]
    if g["tas"].shape[0] != n + 1 or g["time"].shape[0] != n + 1:
        emit(ok=False, error=f"shapes {g['tas'].shape} {g['time'].shape}, want {n + 1} steps")
        sys.exit(1)
    have_tas, have_t = g["tas"][n:n + 1], g["time"][n:n + 1]
    ok = np.array_equal(want_tas, have_tas) and np.array_equal(want_t, have_t)
    emit(ok=bool(ok), steps=n + 1, time=float(have_t[0]),
         commits=len(list(repo.ancestry(branch="main"))))
    if not ok:
        sys.exit(1)


def label(sel) -> str:
    sel = sel if isinstance(sel, tuple) else (sel,)
    return ",".join(f"{s.start or 0}:{'' if s.stop is None else s.stop}"
                    if isinstance(s, slice) else str(s) for s in sel)


def compare(a_path: str, b_path: str, tail: int) -> None:
    import numpy as np

    ra, a = zarr_root(a_path)
    rb, b = zarr_root(b_path)
    names = sorted(k for k, _ in a.arrays())
    if names != sorted(k for k, _ in b.arrays()):
        emit(ok=False, error=f"arrays {names} against {sorted(k for k, _ in b.arrays())}")
        sys.exit(1)
    diffs, compared, sums = [], 0, {}
    for name in names:
        x, y = a[name], b[name]
        if x.shape != y.shape or x.dtype != y.dtype or dict(x.attrs) != dict(y.attrs):
            diffs.append(f"{name}: shape/dtype/attributes differ")
            continue
        if name == "tas":
            n = x.shape[0]
            sels = [slice(max(0, n - tail), n), (slice(None), 100, 200), (slice(None), 0, 0),
                    slice(0, 1)]
        else:
            sels = [slice(None)]
        for sel in sels:
            u, v = x[sel], y[sel]
            if not np.array_equal(u, v, equal_nan=u.dtype.kind == "f"):
                diffs.append(f"{name}[{label(sel)}] differs")
            compared += u.size
            sums[f"{name}[{label(sel)}]"] = float(np.nansum(u.astype("f8")))
    emit(ok=not diffs, diffs=diffs, values_compared=int(compared), arrays=names,
         steps=int(a["tas"].shape[0]),
         commits=[len(list(ra.ancestry(branch="main"))), len(list(rb.ancestry(branch="main")))],
         checksums={k: round(v, 3) for k, v in sums.items() if k.startswith("tas")})
    if diffs:
        sys.exit(1)


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) == 4 and argv[0] == "icechunk":
        run_icechunk(argv[1], argv[2], argv[3])
    elif len(argv) == 3 and argv[0] == "virtualizarr":
        run_virtualizarr(argv[1], argv[2])
    elif len(argv) == 4 and argv[0] == "check-day":
        check_day(argv[1], argv[2], int(argv[3]))
    elif len(argv) == 5 and argv[0] == "compare" and argv[3] == "--tail":
        compare(argv[1], argv[2], int(argv[4]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
