#!/usr/bin/env python3
"""Decodes what `kcat -C -e -f '%o %S %h\\n%s'` printed for one Orchestrata topic, with
fastavro and nothing but schemas/avro/*.avsc (the schema loader of consume_kafka.py).

Reads kcat's output on stdin: per record a line "OFFSET SIZE HEADERS" then SIZE raw value
bytes. Prints one JSON object per record: {"offset", "schema", "record"}; the epoch marker
at offset 0 is a kernel.events.EpochMarked event like any other (only a marker written
before that, the bare UUID text, prints as {"offset", "marker"}). A record that does not
decode is an error (exit 1) naming its offset.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from consume_kafka import MARKER_HEADER, decode, load_schemas  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--schemas", default=os.path.join(os.path.dirname(__file__), "..", "..", "schemas", "avro"))
    args = ap.parse_args()
    schemas = load_schemas(args.schemas)
    data = sys.stdin.buffer.read()
    at = 0
    while at < len(data):
        end = data.index(b"\n", at)
        fields = data[at:end].decode().split(" ", 2)
        offset, size = int(fields[0]), int(fields[1])
        headers = fields[2] if len(fields) > 2 else ""
        value = data[end + 1:end + 1 + size]
        at = end + 1 + size
        if MARKER_HEADER in headers and not value.startswith(b"\xc3\x01"):
            # An epoch marker written before it became an event: the bare UUID text.
            print(json.dumps({"offset": offset, "marker": value.decode(errors="replace")}), flush=True)
            continue
        try:
            name, record = decode(value, schemas)
        except Exception as e:  # noqa: BLE001
            print(f"offset {offset}: {e}", file=sys.stderr)
            return 1
        print(json.dumps({"offset": offset, "schema": name, "record": record}, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
