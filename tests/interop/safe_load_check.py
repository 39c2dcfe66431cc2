#!/usr/bin/env python3
"""Judge lockfile texts with PyYAML, as the Python side of the protocol reads
and writes them.

Reads one JSON document on stdin: a list of cases, each
{"record": MAPPING, "ours": TEXT, "seed": TEXT}, where MAPPING is the claim
record as JSON, OURS the bytes claimtop writes for it and SEED the bytes the
seed's writer (serde_yaml_ng) writes for it. Prints one JSON line per case:

  {"ours_reads_back": bool, "seed_reads_back": bool, "safe_dump": TEXT}

where *_reads_back says whether ``yaml.safe_load`` of that text gives the
record back exactly (same strings, no bool, int, float, date or merge key in
their place; any failure to load counts as no), and SAFE_DUMP is
``yaml.safe_dump(record, sort_keys=False)``, the bytes a Python writer
writes for the same mapping.
"""

import json
import sys

import yaml


def reads_back(text, record):
    try:
        loaded = yaml.safe_load(text)
    except Exception:  # noqa: BLE001 - e.g. `0x_` fails in int() itself
        return False
    return same(loaded, record)


def same(a, b):
    # Type-exact: True == 1 and 1 == 1.0 in Python, but a holder read as a
    # bool or a number is exactly the misreading this looks for.
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a.keys()) == list(b.keys()) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def main():
    for case in json.load(sys.stdin):
        record = case["record"]
        print(
            json.dumps(
                {
                    "ours_reads_back": reads_back(case["ours"], record),
                    "seed_reads_back": reads_back(case["seed"], record),
                    "safe_dump": yaml.safe_dump(record, sort_keys=False),
                }
            )
        )


if __name__ == "__main__":
    main()
