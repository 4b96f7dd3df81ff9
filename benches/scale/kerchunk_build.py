"""kerchunk's references of the benches/scale catalog, built as kerchunk's documents show:
`SingleHdf5ToZarr` per file, `MultiZarrToZarr` over them (concatenated along `time`), written
as JSON and as Parquet (`kerchunk.df.refs_to_dataframe`). Runs in .venv-bench (kerchunk 0.2.10).

    python kerchunk_build.py CATALOG_DIR --json OUT.json --parquet OUT.parq [--limit N]

`--limit N` builds from the first N files only (to extrapolate a build that would take too
long). Prints one JSON line: files, seconds per phase (scan, combine, JSON write, Parquet
write), peak RSS (MiB).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("catalog")
    ap.add_argument("--json", required=True)
    ap.add_argument("--parquet", required=True)
    ap.add_argument("--limit", type=int)
    a = ap.parse_args()

    import fsspec
    from kerchunk.combine import MultiZarrToZarr
    from kerchunk.df import refs_to_dataframe
    from kerchunk.hdf import SingleHdf5ToZarr

    files = sorted(str(p.resolve()) for p in Path(a.catalog).glob("*.nc"))
    if a.limit:
        files = files[: a.limit]
    t0 = time.perf_counter()
    singles = []
    for f in files:
        with fsspec.open(f, "rb") as h:
            singles.append(SingleHdf5ToZarr(h, f).translate())
    t_scan = time.perf_counter() - t0
    t0 = time.perf_counter()
    combined = MultiZarrToZarr(singles, concat_dims=["time"],
                               identical_dims=["lat", "lon"]).translate()
    t_combine = time.perf_counter() - t0
    del singles
    t0 = time.perf_counter()
    with open(a.json, "w") as f:
        json.dump(combined, f)
    t_json = time.perf_counter() - t0
    t0 = time.perf_counter()
    shutil.rmtree(a.parquet, ignore_errors=True)
    refs_to_dataframe(combined, a.parquet)
    t_parq = time.perf_counter() - t0
    print(json.dumps({
        "files": len(files), "scan_s": round(t_scan, 1), "combine_s": round(t_combine, 1),
        "json_s": round(t_json, 1), "parquet_s": round(t_parq, 1),
        "rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
