"""Compares the yardstick's runs (see ``run``): which of VirtualiZarr's tests fail with vzarr's
parser, grouped by reason, and whether each is a known failure (known-failures.txt).

    compare.py THEIRS.jsonl OURS.jsonl --known known-failures.txt
    compare.py - OURS.jsonl --known known-failures.txt   # no baseline run: every failure

Each input has one JSON object a line: {"test", "outcome", "reason"} (vzarr_substitute.py).
known-failures.txt lists test ids under ``## <reason>`` headings; a line ``ID @a,b`` lists the
test for the readers ``a`` and ``b`` only (``--reader``). Exit status 1 when a test fails with
vzarr's parser that the list does not name; with ``--strict`` also when a listed test passes
(the list is out of date) or the run recorded no test. The same serves xarray's suite
(tests/xarray/run).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict


def outcomes(path: str) -> dict[str, tuple[str, str]]:
    """Test id -> (outcome, reason) of one run."""
    got = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                # A failed set-up after a passed call cannot happen; a failed teardown is
                # not recorded. The worst outcome of a test wins.
                if got.get(r["test"], ("",))[0] != "failed":
                    got[r["test"]] = (r["outcome"], r["reason"])
    return got


def known_failures(path: str, reader: str | None = None) -> dict[str, str]:
    """Test id -> the reason it is listed under (for ``reader``, when a line names readers)."""
    known, reason = {}, "unlabelled"
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("## "):
                reason = line[3:].strip()
            elif line.strip() and not line.startswith("#"):
                test, _, readers = line.strip().partition(" @")
                if not readers or reader is None or reader in readers.split(","):
                    known[test.strip()] = reason
    return known


def short(reason: str) -> str:
    """A failure's message with paths, addresses and numbers blurred, to group alike ones."""
    reason = re.sub(r"(/[\w.\-]+)+", "<path>", reason)
    reason = re.sub(r"0x[0-9a-f]+", "<addr>", reason)
    return re.sub(r"\d+", "N", reason)[:160]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("theirs", help="outcomes with VirtualiZarr's parsers, or - for none")
    ap.add_argument("ours", help="outcomes with vzarr's parser")
    ap.add_argument("--known", required=True, help="known-failures.txt")
    ap.add_argument("--reader", help="the reader substituted (selects lines ID @readers)")
    ap.add_argument("--theirs-name", default="VirtualiZarr's parsers")
    ap.add_argument("--ours-name", default="vzarr's parser")
    ap.add_argument("--strict", action="store_true",
                    help="also fail when a listed test passes or no test was recorded")
    a = ap.parse_args()
    ours = outcomes(a.ours)
    known = known_failures(a.known, a.reader)
    failed = {t: r for t, (o, r) in ours.items() if o == "failed"}
    if a.theirs != "-":
        theirs = outcomes(a.theirs)
        passing = {t for t, (o, _) in theirs.items() if o == "passed"}
        print(f"{len(passing)} tests pass with {a.theirs_name}; "
              f"{len(passing & failed.keys())} of them fail with {a.ours_name} "
              f"({len(ours)} run with {a.ours_name}: "
              f"{sum(o == 'passed' for o, _ in ours.values())} pass, {len(failed)} fail)")
        regressions = {t: failed[t] for t in sorted(passing & failed.keys())}
        elsewhere = {t: failed[t] for t in sorted(failed.keys() - passing)}
    else:
        print(f"{len(ours)} tests run with {a.ours_name}: "
              f"{sum(o == 'passed' for o, _ in ours.values())} pass, {len(failed)} fail")
        regressions, elsewhere = dict(sorted(failed.items())), {}
    groups: dict[str, list[str]] = defaultdict(list)
    for t, r in regressions.items():
        groups[known.get(t) or f"NEW: {short(r)}"].append(t)
    for label, tests in sorted(groups.items(), key=lambda g: (not g[0].startswith("NEW"),
                                                              -len(g[1]), g[0])):
        print(f"\n{len(tests):3d}  {label}")
        for t in tests:
            print(f"       {t}" + (f"\n         {regressions[t]}" if label.startswith("NEW")
                                   else ""))
    if elsewhere:
        print(f"\n{len(elsewhere)} fail with {a.ours_name} and did not pass with "
              f"{a.theirs_name} (not counted):")
        for t in elsewhere:
            print(f"       {t}  [{known.get(t, short(elsewhere[t]))}]")
    unknown = [t for t in regressions if t not in known]
    fixed = [t for t in known if ours.get(t, ("",))[0] == "passed"]
    if fixed:
        print(f"\n{len(fixed)} listed in {a.known} pass now (take them out):")
        for t in fixed:
            print(f"       {t}")
    if unknown:
        print(f"\n{len(unknown)} failures not in {a.known}", file=sys.stderr)
        return 1
    if a.strict and fixed:
        print(f"\n{len(fixed)} listed in {a.known} pass now", file=sys.stderr)
        return 1
    if a.strict and not ours:
        print(f"\n{a.ours}: no test recorded", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
