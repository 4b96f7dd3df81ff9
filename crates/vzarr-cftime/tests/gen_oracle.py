#!/usr/bin/env python3
"""Generates tests/oracle.json: reference results of Python cftime for vzarr-cftime.

Regenerate (from the workspace root, with the interop venv that has cftime 1.6.6.1):

    .venv-interop/bin/python crates/vzarr-cftime/tests/gen_oracle.py

The output is deterministic (fixed random seed); commit tests/oracle.json together with any
change to this script. tests/oracle.rs reads it and checks every case.

For a larger one-off check (not committed), write elsewhere with more random values per units
and point the Rust test at it:

    .venv-interop/bin/python crates/vzarr-cftime/tests/gen_oracle.py --out /tmp/big.json --random 400
    VZARR_CFTIME_ORACLE=/tmp/big.json CARGO_TARGET_DIR=target-cft \
        cargo test -p vzarr-cftime --test oracle -- --nocapture

For each calendar and each source units string the oracle holds a few dozen values (integers,
fractions, negative values, sub-microsecond float noise, spans of centuries to millennia,
values around the 1582 Julian/Gregorian switch and around leap days) with
  * cftime.num2date(value, units, calendar) as (year, month, day, hour, minute, second, microsecond),
  * cftime.date2num(that date, target, calendar) for a few target units of the same calendar.
Only results with years in -4000..=10000 are kept. A list of units/calendar pairs that cftime
refuses is recorded too (the Rust crate must refuse them as well).

Units spellings cftime does not know (us, usec) and time-zone forms cftime silently ignores
(" -6") are not used here; the Rust unit tests cover them.
"""

import argparse
import json
import math
import os
import random
import sys
import warnings

import cftime

warnings.simplefilter("ignore")

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "oracle.json")
MIN_YEAR, MAX_YEAR = -4000, 10000

CALENDARS = [
    "standard",
    "gregorian",
    "proleptic_gregorian",
    "julian",
    "noleap",
    "365_day",
    "all_leap",
    "366_day",
    "360_day",
]

# Alternative names of calendars that appear above under their canonical name.
ALIASES = {"gregorian", "365_day", "366_day"}

# Source units valid in (almost) every calendar; ones cftime refuses for a calendar are skipped.
COMMON_UNITS = [
    "days since 1850-01-01",
    "days since 1-1-1",
    "hours since 1900-01-01 00:00:00",
    "seconds since 1970-01-01T00:00:00Z",
    "minutes since 2000-01-01 12:30:00 +01:00",
    "msec since 2000-02-28 23:59:59.5",
    "microseconds since 1999-12-31 23:00:00-0600",
    "days since -1000-03-01",
    "hours since 1582-10-15 00:00:00",
    "days since 2000-02-29",
    "Days since 9000-06-15T06:00:00",
    "d since 1600-03-01 00:00:00 -03:30",
    "secs since 1582-10-01 00:00:00.25",
]
EXTRA_UNITS = {
    "360_day": ["months since 2000-01-01", "months since 1582-10-15 00:00:00"],
    "noleap": ["common_years since 1800-01-01"],
    "365_day": ["common_years since 1800-01-01"],
    "proleptic_gregorian": ["days since 0000-01-01", "hours since -3999-01-01 00:00:00"],
}
TARGETS = {
    "default": [
        "days since 1970-01-01",
        "hours since 1582-10-15 00:00:00",
        "seconds since 2000-01-01 00:00:00 +05:30",
    ],
    "360_day": [
        "days since 1970-01-01",
        "months since 2000-01-01",
        "seconds since 2000-01-01 00:00:00 +05:30",
    ],
    "noleap": [
        "days since 1970-01-01",
        "common_years since 2000-01-01",
        "microseconds since 1900-01-01 00:00:00",
    ],
}

# Units/calendar pairs that cftime refuses; the crate must refuse them too.
ERROR_CASES = [
    ("months since 2000-01-01", "standard"),
    ("months since 2000-01-01", "noleap"),
    ("common_years since 2000-01-01", "standard"),
    ("common_years since 2000-01-01", "360_day"),
    ("days since 0000-01-01", "standard"),
    ("days since 0000-01-01", "julian"),
    ("days since 2001-02-29", "standard"),
    ("days since 1900-02-29", "proleptic_gregorian"),
    ("days since 2000-02-29", "noleap"),
    ("days since 2000-01-31", "360_day"),
    ("days since 1582-10-10", "standard"),
    ("days since 2000-13-01", "standard"),
    ("fortnights since 2000-01-01", "standard"),
    ("days after 2000-01-01", "standard"),
    ("days since 2000-01-01", "none"),
    ("days since 2000-01-01", "tai_calendar"),
    ("days since 2000-01-01 25:00:00", "standard"),
]

UNIT_DAYS = {
    "microseconds": 1 / 86400e6,
    "milliseconds": 1 / 86400e3,
    "msec": 1 / 86400e3,
    "seconds": 1 / 86400,
    "secs": 1 / 86400,
    "minutes": 1 / 1440,
    "hours": 1 / 24,
    "days": 1.0,
    "d": 1.0,
    "months": 30.0,
    "common_years": 365.0,
}


def unit_days(units):
    return UNIT_DAYS[units.split()[0].lower()]


def values_for(units, calendar, rng, n_random):
    """A few dozen values in `units`: special ones plus random spans."""
    per_day = 1.0 / unit_days(units)
    vals = [0.0, 1.0, -1.0, 0.5, -1.5, 59.0, 60.0, 366.0, -1461.0]
    # Whole days, fractions of days and float noise (1/24, 1/3 of a day as stored in files).
    vals += [per_day * k for k in (1, -1, 0.25, 1 / 24, 2 / 3, 1234 + 1 / 24)]
    vals += [per_day * 0.1, per_day * 17.041666666666668, -per_day * 3.7]
    if per_day >= 86400:
        # Sub-microsecond noise around whole seconds (cftime snaps these, issue #187).
        s = per_day / 86400
        vals += [s * (1 + 6e-7), s * (1 - 6e-7), s * 12.3456789, -s * (5 + 1.4e-6)]
    # Around the Julian/Gregorian switch and around leap days, relative to the reference.
    try:
        ref = cftime.num2date(0, units, calendar)
        for target in ((1582, 10, 4), (1582, 10, 15), (2000, 2, 29), (1900, 3, 1), (1500, 2, 29)):
            try:
                d = cftime.datetime(*target, calendar=calendar)
            except ValueError:
                continue
            delta_days = cftime.date2num(d, "days since 1970-01-01", calendar) - cftime.date2num(
                ref, "days since 1970-01-01", calendar
            )
            for off in (-1.0, -0.25, 0.0, 1.0):
                vals.append((delta_days + off) * per_day)
    except Exception:
        pass
    # Random spans of up to a few thousand years, integer and fractional.
    for k in range(n_random):
        span_days = rng.choice([30, 400, 4000, 40000, 400000, 1400000])
        v = rng.uniform(-span_days, span_days) * per_day
        if k % 3 == 0:
            v = float(round(v))
        elif k % 3 == 1:
            v = round(v, rng.choice([1, 2, 3, 6]))
        vals.append(v)
    out = []
    seen = set()
    for v in vals:
        v = float(v)
        if math.isfinite(v) and v not in seen:
            seen.add(v)
            out.append(v)
    return out


def as_tuple(d):
    return [d.year, d.month, d.day, d.hour, d.minute, d.second, d.microsecond]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=OUT, help="output path (default: tests/oracle.json)")
    ap.add_argument("--random", type=int, default=6, help="random values per units (default 6)")
    ap.add_argument("--seed", type=int, default=20240607)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    groups = []
    ncases = 0
    for cal in CALENDARS:
        base = "noleap" if cal == "365_day" else cal
        targets = TARGETS.get(base, TARGETS["default"])
        all_units = COMMON_UNITS + EXTRA_UNITS.get(cal, [])
        if cal in ALIASES:
            all_units = all_units[:2]  # aliases only need a smoke test
        for units in all_units:
            try:
                cftime.num2date(0.0, units, cal)
            except Exception:
                continue  # e.g. a leap day or 1582-10-04 12:00 that the calendar lacks
            cases = []
            for v in values_for(units, cal, rng, args.random):
                try:
                    d = cftime.num2date(v, units, cal)
                except Exception:
                    continue
                if not (MIN_YEAR <= d.year <= MAX_YEAR):
                    continue
                nums = [float(cftime.date2num(d, t, cal)) for t in targets]
                cases.append([v, as_tuple(d), nums])
            ncases += len(cases)
            groups.append({"calendar": cal, "units": units, "targets": targets, "cases": cases})
    errors = []
    for units, cal in ERROR_CASES:
        try:
            cftime.num2date(0.0, units, cal)
        except Exception as e:  # noqa: BLE001 - any refusal counts
            errors.append({"calendar": cal, "units": units, "cftime_error": str(e)[:200]})
        else:
            sys.exit(f"cftime accepts {units!r} ({cal}); remove it from ERROR_CASES")
    doc = {
        "generator": "crates/vzarr-cftime/tests/gen_oracle.py",
        "cftime_version": cftime.__version__,
        "case_count": ncases,
        "groups": groups,
        "errors": errors,
    }
    with open(args.out, "w") as f:
        f.write("{\n")
        for key in ("generator", "cftime_version", "case_count"):
            f.write(f"{json.dumps(key)}: {json.dumps(doc[key])},\n")
        f.write('"groups": [\n')
        for i, g in enumerate(groups):
            f.write(json.dumps(g, separators=(",", ":")))
            f.write(",\n" if i + 1 < len(groups) else "\n")
        f.write("],\n")
        f.write(f'"errors": {json.dumps(errors, indent=1)}\n')
        f.write("}\n")
    print(f"wrote {args.out}: {len(groups)} groups, {ncases} cases, {len(errors)} error cases")


if __name__ == "__main__":
    main()
