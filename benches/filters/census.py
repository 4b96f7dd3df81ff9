#!/usr/bin/env python3
"""Per HDF5 filter, the arrays of a corpus that `vzarr inspect` leaves out because of a filter,
and the arrays it virtualises with the codec of a third-party filter (issue 31).

Usage: benches/filters/census.py VZARR_BINARY DIR [--list]

Runs `vzarr inspect --json` on every file below DIR (HDF5/NetCDF files; others are errors and
are skipped). An array is left out for a filter when its reason names one ("unsupported
filter NAME (HDF5 filter id N)" or the refusal of a filter's parameters); it is virtualised
with a filter when its codec labels include one of the third-party filters' codecs. Before
issue 31 every one of the latter was left out: the sum of both columns per filter is what
main left out.
"""

import collections
import json
import re
import subprocess
import sys
from pathlib import Path

# Codec labels of `vzarr inspect` (vzarr_core::Codec::label) -> the HDF5 filter.
LABELS = {"bz2": "bzip2 (307)", "lzf": "LZF (32000)", "lz4h5": "LZ4 (32004)",
          "bitshuffle": "bitshuffle (32008)", "zfp": "zfp (32013)", "szip": "szip (4)",
          "blosc2": "blosc2 (32026)", "lzo": "LZO (305)",
          "jpegls": "FCIDECOMP (JPEG-LS) (32018)", "htj2k": "HTJ2K (32033)"}
NAMED = re.compile(r"filter (.+?) \(HDF5 filter id (\d+)\)")


def main():
    vzarr, root = sys.argv[1], Path(sys.argv[2])
    listing = "--list" in sys.argv
    left, virtualised = collections.Counter(), collections.Counter()
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    for p in files:
        r = subprocess.run([vzarr, "inspect", str(p), "--json"], capture_output=True, text=True)
        if r.returncode:
            continue
        d = json.loads(r.stdout)
        for s in d["skipped"]:
            reason = s["reason"]
            if "filter" not in reason:
                continue
            m = NAMED.search(reason)
            name = f"{m.group(1)} ({m.group(2)})" if m else reason.split(" filter")[0] + " (refused)"
            left[name] += 1
            if listing:
                print(f"left out: {p.relative_to(root)} {s['path']}: {reason}")
        for a in d["arrays"]:
            for label in {c.split("(")[0] for c in a.get("codecs", [])}:
                if label in LABELS:
                    virtualised[LABELS[label]] += 1
    print(f"{len(files)} files")
    for name in sorted(set(left) | set(virtualised)):
        print(f"{name:28} left out {left[name]:4}   virtualised {virtualised[name]:4}")
    print(f"{'total':28} left out {sum(left.values()):4}   virtualised {sum(virtualised.values()):4}")


if __name__ == "__main__":
    main()
