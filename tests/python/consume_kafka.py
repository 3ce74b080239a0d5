#!/usr/bin/env python3
"""Reads an Orchestrata Kafka topic with confluent-kafka and decodes its records with
fastavro and nothing but schemas/avro/*.avsc: an independent consumer.

Every record but the epoch marker at offset 0 is Avro single-object encoded:
C3 01 + 8-byte little-endian CRC-64-AVRO fingerprint of the writer schema + Avro body.
The writer schema is picked by that fingerprint among the .avsc files, and among the
same schemas without the envelope field `principal`: the layout of records written
before attribution (they decode with principal None).

Prints one JSON object per event: {"offset", "sequence", "key", "schema", "record"}.
"""
import argparse
import glob
import json
import os
import struct
import sys

import fastavro
from confluent_kafka import Consumer, KafkaError, TopicPartition
from fastavro.schema import fingerprint, to_parsing_canonical_form

MAGIC = b"\xc3\x01"
MARKER_HEADER = "orchestrata-epoch-marker"


def load_schemas(directory):
    """Fingerprint -> (name, parsed schema) for every .avsc file.

    A schema file may reference named types defined in other files, so all files are
    parsed together with a shared named-schemas table (retrying until every file parses).
    """
    pending = {path: json.load(open(path)) for path in sorted(glob.glob(os.path.join(directory, "*.avsc")))}
    for path, raw in list(pending.items()):
        old = dict(raw, fields=[f for f in raw["fields"] if f["name"] != "principal"])
        if len(old["fields"]) < len(raw["fields"]):
            pending[path + "#before-principal"] = old
    named = {}
    parsed = {}
    while pending:
        progress = False
        for path, raw in list(pending.items()):
            try:
                schema = fastavro.parse_schema(raw, named_schemas=named)
            except Exception:  # unknown named type: parse after its definer
                continue
            parsed[path] = schema
            del pending[path]
            progress = True
        if not progress:
            raise SystemExit(f"cannot parse schemas: {sorted(pending)}")
    by_fp = {}
    for path, schema in parsed.items():
        canonical = to_parsing_canonical_form(schema)
        # fastavro prints the 64-bit fingerprint as hex; the header stores it little-endian.
        # Key by the header's 8 raw bytes (both byte orders, whichever fastavro used).
        raw = bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))
        name = os.path.basename(path.split("#")[0])
        by_fp[raw] = by_fp[raw[::-1]] = (name, schema)
    return by_fp


def decode(value, schemas):
    if value[:2] != MAGIC:
        raise ValueError(f"not Avro single-object encoded (starts {value[:2]!r})")
    fp = value[2:10]
    if fp not in schemas:
        (n,) = struct.unpack("<Q", fp)
        raise ValueError(f"unknown writer schema fingerprint {n:016x}")
    name, schema = schemas[fp]
    import io

    return name, fastavro.schemaless_reader(io.BytesIO(value[10:]), schema)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--schemas", default=os.path.join(os.path.dirname(__file__), "..", "..", "schemas", "avro"))
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args()
    schemas = load_schemas(args.schemas)
    consumer = Consumer({
        "bootstrap.servers": args.brokers,
        "group.id": "orchestrata-python-check",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
    })
    consumer.assign([TopicPartition(args.topic, 0, 0)])
    import time

    deadline = time.time() + args.timeout
    while True:
        if time.time() > deadline:
            print("timeout before end of partition", file=sys.stderr)
            return 2
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                break
            print(f"kafka error: {msg.error()}", file=sys.stderr)
            return 1
        headers = dict(msg.headers() or [])
        if MARKER_HEADER in headers:
            continue
        name, record = decode(msg.value(), schemas)
        out = {
            "offset": msg.offset(),
            "sequence": msg.offset() - 1,
            "key": (msg.key() or b"").decode(),
            "schema": name,
            "record": record,
        }
        print(json.dumps(out, default=str), flush=True)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
