#!/usr/bin/env python3
"""A second, independent implementation of the fno claims protocol's
read/write side, used by tests/protocol_interop.rs to check that claimtop and
another writer can share one claims root and one events log.

Written from the protocol description, not from claimtop's code:

- lockfile: <root>/.fno/claims/<urllib.parse.quote(key, safe="")>.lock
- record: a flat YAML mapping, fields in the order schema_version, key,
  holder, acquired_at, pid, host, expires_at, reason, harness, machine_id,
  metadata; an absent optional field is omitted, never written as null
- publish: write a temp file in the claims dir, then os.link() it into place
  (EEXIST means someone holds the key), then unlink the temp
- machine id: /etc/machine-id (or /var/lib/dbus/machine-id), ":" and the
  inode of /proc/self/ns/pid
- events: one json.dumps({"ts", "type", "source": "fno-loop", "data"}) per
  line of <events_dir>/.fno/events.jsonl, appended under the
  events.jsonl.lock.d mkdir mutex (owner token file, 120 s corpse steal)

Standard library only: CI has no extra Python packages. When PyYAML happens to
be installed, every record written or read here is also checked against it.
"""

import argparse
import json
import os
import re
import shutil
import socket
import sys
import time
import urllib.parse
from datetime import datetime, timezone

try:
    import yaml  # optional cross-check only
except ImportError:  # pragma: no cover - depends on the machine
    yaml = None

FIELDS = [
    "schema_version", "key", "holder", "acquired_at", "pid", "host",
    "expires_at", "reason", "harness", "machine_id", "metadata",
]
STALE_MUTEX_STEAL_S = 120
EXIT_HELD = 3
EXIT_MISSING = 4


def now_ms():
    return int(time.time() * 1000)


def encode_key(key):
    return urllib.parse.quote(key, safe="")


def claims_dir(root):
    return os.path.join(root, ".fno", "claims")


def claim_path(root, key):
    return os.path.join(claims_dir(root), encode_key(key) + ".lock")


def machine_id():
    base = ""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(path) as f:
                base = f.read().strip()
        except OSError:
            continue
        if base:
            break
    if not base:
        return ""
    try:
        return "%s:%d" % (base, os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return base


# ---------------------------------------------------------------------------
# A minimal YAML emitter and parser for the flat claim mapping
# ---------------------------------------------------------------------------

# Plain only when no YAML reader could take it for anything but a string: a
# letter first (no indicator, number, .inf or ~), and no ": " or " #" inside.
_PLAIN_OK = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./~:@-]*$")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}
_INT = re.compile(r"^-?[0-9]+$")


def emit_scalar(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (dict, list)):
        # JSON is a YAML flow collection.
        return json.dumps(v, ensure_ascii=False)
    s = str(v)
    if _PLAIN_OK.match(s) and s.lower() not in _RESERVED and not s.endswith(":"):
        return s
    if any(ord(c) < 0x20 for c in s):
        return json.dumps(s, ensure_ascii=False)
    return "'" + s.replace("'", "''") + "'"


def emit_record(rec, extra=None):
    lines = []
    for name in FIELDS:
        if name in rec:
            lines.append("%s: %s" % (name, emit_scalar(rec[name])))
    for name, value in (extra or {}).items():
        lines.append("%s: %s" % (name, emit_scalar(value)))
    return "\n".join(lines) + "\n"


def parse_scalar(text):
    t = text.strip()
    if t.startswith("'"):
        if not t.endswith("'") or len(t) < 2:
            raise ValueError("unterminated single-quoted scalar: %r" % t)
        return t[1:-1].replace("''", "'")
    if t.startswith('"'):
        return json.loads(t)
    if t.startswith("{") or t.startswith("["):
        return json.loads(t)
    if t in ("null", "~", ""):
        return None
    if t == "true":
        return True
    if t == "false":
        return False
    if _INT.match(t):
        return int(t)
    return t


def parse_record(text):
    """Top-level `name: value` lines; one nested level of `  name: value`
    lines under a `name:` line (the metadata block)."""
    out = {}
    current = None
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith("#") or raw == "---":
            continue
        if raw.startswith("  "):
            if current is None:
                raise ValueError("indented line outside a block: %r" % raw)
            name, sep, value = raw.strip().partition(":")
            if not sep or raw.startswith("   "):
                raise ValueError("unsupported nested YAML: %r" % raw)
            out[current][name] = parse_scalar(value)
            continue
        name, sep, value = raw.partition(":")
        if not sep:
            raise ValueError("not a mapping line: %r" % raw)
        if value.strip() == "":
            out[name] = {}
            current = name
        else:
            out[name] = parse_scalar(value)
            current = None
    return out


def cross_check(text, parsed):
    if yaml is None:
        return
    other = yaml.safe_load(text)
    if other != parsed:
        raise SystemExit("PyYAML disagrees with the hand parser:\n%r\n%r" % (other, parsed))


def read_record(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    rec = parse_record(text)
    cross_check(text, rec)
    return rec


# ---------------------------------------------------------------------------
# Atomic publish
# ---------------------------------------------------------------------------

def create_exclusive(path, content):
    """Temp file + link(2). Returns False when the key is already held."""
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, ".claim-tmp-py-%d-%d" % (os.getpid(), time.time_ns()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, content.encode("utf-8"))
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)


# ---------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------

def owner_token():
    return "%s:%d:%d" % (socket.gethostname(), os.getpid(), time.time_ns())


def read_owner(lock_dir):
    try:
        with open(os.path.join(lock_dir, "owner")) as f:
            return f.read()
    except OSError:
        return ""


def steal_if_stale(lock_dir):
    try:
        st = os.lstat(lock_dir)
    except FileNotFoundError:
        return True
    if time.time() - st.st_mtime <= STALE_MUTEX_STEAL_S:
        return False
    before = read_owner(lock_dir)
    reaped = "%s.reap.py.%d.%d" % (lock_dir, os.getpid(), time.time_ns())
    try:
        os.rename(lock_dir, reaped)
    except FileNotFoundError:
        return True
    after = read_owner(reaped)
    if after and after != before:
        os.rename(reaped, lock_dir)
        return False
    shutil.rmtree(reaped, ignore_errors=True)
    return True


def append_event(events_dir, type_name, data, budget_s=2.0):
    path = os.path.join(events_dir, ".fno", "events.jsonl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lock_dir = path + ".lock.d"
    deadline = time.monotonic() + budget_s
    while True:
        try:
            os.mkdir(lock_dir)
            break
        except FileExistsError:
            if steal_if_stale(lock_dir):
                continue
            if time.monotonic() >= deadline:
                raise SystemExit("events lock timeout: %s" % lock_dir)
            time.sleep(0.01)
    token = owner_token()
    with open(os.path.join(lock_dir, "owner"), "w") as f:
        f.write(token)
    try:
        line = json.dumps({
            "ts": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "type": type_name,
            "source": "fno-loop",
            "data": data,
        }) + "\n"
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)
    finally:
        if read_owner(lock_dir) == token:
            shutil.rmtree(lock_dir, ignore_errors=True)


def common(rec):
    return {
        "key": rec["key"],
        "holder": rec["holder"],
        "pid": rec["pid"],
        "host": rec["host"],
        "acquired_at": rec["acquired_at"],
        "expires_at": rec.get("expires_at"),
    }


_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def check_events(events_dir):
    path = os.path.join(events_dir, ".fno", "events.jsonl")
    types = {}
    count = 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith("\n"):
                raise SystemExit("line %d is not newline-terminated: %r" % (n, line))
            ev = json.loads(line)
            if list(ev.keys()) != ["ts", "type", "source", "data"]:
                raise SystemExit("line %d: envelope keys %r" % (n, list(ev.keys())))
            if ev["source"] != "fno-loop" or not _TS.match(ev["ts"]):
                raise SystemExit("line %d: bad source or ts: %r" % (n, line))
            if not isinstance(ev["type"], str) or not isinstance(ev["data"], dict):
                raise SystemExit("line %d: bad type or data: %r" % (n, line))
            types[ev["type"]] = types.get(ev["type"], 0) + 1
            count += 1
    return {"lines": count, "types": types}


# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------

def new_record(args, pid):
    acquired = args.acquired_at if args.acquired_at is not None else now_ms()
    rec = {
        "schema_version": 1,
        "key": args.key,
        "holder": args.holder,
        "acquired_at": acquired,
        "pid": pid,
        "host": args.host if args.host is not None else socket.gethostname(),
    }
    if args.expires_at is not None:
        rec["expires_at"] = args.expires_at
    elif args.ttl_ms is not None:
        rec["expires_at"] = acquired + args.ttl_ms
    if args.reason is not None:
        rec["reason"] = args.reason
    mid = args.machine_id if args.machine_id is not None else machine_id()
    if mid:
        rec["machine_id"] = mid
    if args.metadata:
        rec["metadata"] = json.loads(args.metadata)
    return rec


def prepare_claim(args, pid):
    rec = new_record(args, pid)
    if args.null_expires:
        # Older writers spelled "no TTL" as an explicit null; readers must
        # take it the same as absent.
        rec["expires_at"] = None
    extra = {}
    for item in args.extra or []:
        name, _, value = item.partition("=")
        extra[name] = parse_scalar(value)
    text = emit_record(rec, extra)
    if yaml is not None:
        expect = dict(rec)
        expect.update(extra)
        cross_check(text, expect)
    return rec, claim_path(args.root, args.key), text


def publish_claim(path, text):
    if not create_exclusive(path, text):
        print(json.dumps({"held": True, "file": os.path.basename(path)}))
        sys.exit(EXIT_HELD)


def write_claim(args, pid):
    rec, path, text = prepare_claim(args, pid)
    publish_claim(path, text)
    return rec, path, text


def cmd_write(args):
    rec, path, text = prepare_claim(args, args.pid)
    if args.start_at_ms is not None:
        # Line up with racers in other processes, with only the publish left.
        os.makedirs(os.path.dirname(path), exist_ok=True)
        time.sleep(max(0.0, (args.start_at_ms - now_ms()) / 1000.0))
    publish_claim(path, text)
    print(json.dumps({"record": rec, "file": os.path.basename(path), "text": text}))


def cmd_hold(args):
    rec, path, _ = write_claim(args, os.getpid())
    if args.events_dir:
        data = common(rec)
        if "reason" in rec:
            data["reason"] = rec["reason"]
        append_event(args.events_dir, "claim_acquired", data)
    print(json.dumps({"record": rec, "file": os.path.basename(path)}), flush=True)
    sys.stdin.read()  # hold until the test closes our stdin
    released = False
    try:
        cur = read_record(path)
    except FileNotFoundError:
        cur = None
    if cur is not None and cur.get("holder") == args.holder:
        os.unlink(path)
        released = True
        if args.events_dir:
            data = common(cur)
            data["duration_held_ms"] = max(0, now_ms() - cur["acquired_at"])
            append_event(args.events_dir, "claim_released", data)
    print(json.dumps({"released": released}), flush=True)


def cmd_read(args):
    path = claim_path(args.root, args.key)
    try:
        rec = read_record(path)
    except FileNotFoundError:
        print(json.dumps({"missing": os.path.basename(path)}))
        sys.exit(EXIT_MISSING)
    print(json.dumps({"record": rec, "file": os.path.basename(path)}))


def cmd_emit(args):
    data = json.loads(args.data)
    for i in range(args.count):
        d = dict(data)
        d["seq"] = i
        append_event(args.events_dir, args.type, d, budget_s=30.0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    e = sub.add_parser("encode", help="print a JSON list of encoded keys")
    e.add_argument("keys", nargs="*")
    sub.add_parser("machine-id", help="print this machine's id")

    for name in ("write", "hold"):
        w = sub.add_parser(name)
        w.add_argument("root")
        w.add_argument("key")
        w.add_argument("holder")
        if name == "write":
            w.add_argument("--pid", type=int, required=True)
            w.add_argument("--start-at-ms", type=int)
        else:
            w.add_argument("--events-dir")
        w.add_argument("--acquired-at", type=int)
        w.add_argument("--ttl-ms", type=int)
        w.add_argument("--expires-at", type=int)
        w.add_argument("--reason")
        w.add_argument("--host")
        w.add_argument("--machine-id")
        w.add_argument("--metadata")
        w.add_argument("--null-expires", action="store_true")
        w.add_argument("--extra", action="append")

    r = sub.add_parser("read")
    r.add_argument("root")
    r.add_argument("key")

    m = sub.add_parser("emit")
    m.add_argument("events_dir")
    m.add_argument("type")
    m.add_argument("data")
    m.add_argument("--count", type=int, default=1)

    c = sub.add_parser("check-events")
    c.add_argument("events_dir")

    args = p.parse_args()
    if args.cmd == "encode":
        print(json.dumps([encode_key(k) for k in args.keys]))
    elif args.cmd == "machine-id":
        print(machine_id())
    elif args.cmd == "write":
        cmd_write(args)
    elif args.cmd == "hold":
        cmd_hold(args)
    elif args.cmd == "read":
        cmd_read(args)
    elif args.cmd == "emit":
        cmd_emit(args)
    elif args.cmd == "check-events":
        print(json.dumps(check_events(args.events_dir)))


if __name__ == "__main__":
    main()
