#!/usr/bin/env python3
"""Write claim records the way Python writers do: with PyYAML's own
``yaml.safe_dump`` (field order kept), one file per record, into OUT_DIR.

Usage: safe_dump_records.py OUT_DIR PID HOST ACQUIRED_AT_MS

The shapes are the ones a reader is most tempted to refuse: anchors and
aliases (safe_dump writes ``&id001`` / ``*id001`` for any object referenced
twice), non-ASCII text, long strings folded onto continuation lines, deep
and wide metadata, big files. A few records the seed itself refuses are
mixed in, so that the comparison is not one-sided. Prints one JSON line per
file: {"file": NAME, "shape": WHAT}.
"""

import json
import os
import sys

import yaml


ACQUIRED_AT = 1764460000000


def base(n, pid, host, **extra):
    rec = {
        "schema_version": 1,
        "key": "diff:%03d" % n,
        "holder": "py:%03d" % n,
        "acquired_at": ACQUIRED_AT + n,
        "pid": pid,
        "host": host,
    }
    rec.update(extra)
    return rec


def nested(depth, leaf):
    node = leaf
    for i in range(depth):
        node = [node] if i % 2 else {"d%d" % i: node}
    return node


def shapes(pid, host):
    shared = {"branch": "fix/flaky-retry", "files": ["a.rs", "b.rs"]}
    lst = [1, 2, 3]
    yield "one shared object", {"x": shared, "y": shared}
    yield "a shared list thrice", {"a": lst, "b": lst, "c": {"again": lst}}
    yield "300 aliases", {"k%d" % i: shared for i in range(300)}
    yield "aliases in a file over 64 KiB", {
        "pad": "p" * 70000,
        "one": shared,
        "two": shared,
    }
    yield "many aliases in a file over 64 KiB", {
        "rows": [{"id": i, "tag": "t%d" % i} for i in range(3000)],
        "refs": [shared] * 40,
    }
    yield "unicode everywhere", {
        "naïve": "café ☕ — Grüße, 日本語, emoji 🚀",
        "ключ": ["значение", "ü"],
    }
    yield "a long folded string", {"note": " ".join(["word"] * 3000)}
    yield "a long line without spaces", {"blob": "x" * 20000}
    yield "multi-line text", {"log": "line one\nline two: [x, *y]\n  indented # not a comment\n"}
    yield "nesting 60 deep", {"deep": nested(60, "leaf")}
    yield "nesting 100 deep", {"deep": nested(100, "leaf")}
    yield "nesting 125 deep", {"deep": nested(125, 7)}
    yield "nesting 140 deep (past the seed's limit)", {"deep": nested(140, 7)}
    yield "brackets and stars in text", {"r": "[[[[{{{{ *a *b &c ! | > #"}
    yield "numbers and booleans", {
        "i": -12,
        "big": 2**63 + 5,
        "f": 1.5,
        "t": True,
        "n": None,
        "s": "007",
        "y": "yes",
    }


def records(pid, host):
    n = 0
    for shape, meta in shapes(pid, host):
        for flow in (False, None):
            n += 1
            rec = base(n, pid, host, reason="parity: %s" % shape, metadata=meta)
            yield "%s (default_flow_style=%s)" % (shape, flow), rec, dict(
                default_flow_style=flow, allow_unicode=(n % 2 == 0)
            )
    n += 1
    yield "a TTL record with a unicode reason", base(
        n, pid, host, expires_at=ACQUIRED_AT + 3600000, reason="räpid — fix", harness="codex"
    ), {}
    n += 1
    yield "over 1 MiB", base(n, pid, host, metadata={"pad": ["x" * 100] * 12000}), {}
    # Records the seed refuses as well.
    n += 1
    yield "newer schema (refused by both)", base(n, pid, host, schema_version=2), {}
    n += 1
    yield "empty holder (refused by both)", dict(base(n, pid, host), holder=""), {}
    n += 1
    yield "metadata is a list (refused by both)", base(n, pid, host, metadata=[1, 2]), {}
    n += 1
    yield "pid is text (refused by both)", dict(base(n, pid, host), pid="four"), {}


def main():
    global ACQUIRED_AT
    out_dir, pid, host = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    ACQUIRED_AT = int(sys.argv[4])
    for i, (shape, rec, opts) in enumerate(records(pid, host)):
        name = "r%03d.yaml" % i
        text = yaml.safe_dump(rec, sort_keys=False, **opts)
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(text)
        print(json.dumps({"file": name, "shape": shape}))


if __name__ == "__main__":
    main()
