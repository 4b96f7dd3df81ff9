"""Checks a benches/scale results file: every read (step, point, yearquarter) gives the same
values through every path (checksum, NaN count and shape equal). Prints one line a read;
exits 1 when a path disagrees, so a fast wrong read cannot count.

    python check.py results-3650.jsonl
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    reads: dict[str, list[dict]] = {}
    with open(sys.argv[1]) as f:
        for line in f:
            r = json.loads(line)
            if r.get("what") == "read":
                reads.setdefault(r["read"], []).append(r)
    bad = 0
    for read, rows in reads.items():
        want = (rows[0]["checksum"], rows[0].get("nans"), rows[0].get("shape"))
        odd = [f"{r['via']}/{r['pipeline']}" for r in rows
               if (r["checksum"], r.get("nans"), r.get("shape")) != want]
        paths = sorted({f"{r['via']}/{r['pipeline']}" for r in rows})
        status = "agree" if not odd else f"DISAGREE: {', '.join(odd)}"
        print(f"check {read}: checksum {want[0]!r}, {want[1]} NaN, shape {want[2]}; "
              f"{len(paths)} paths {status}")
        bad += bool(odd)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
