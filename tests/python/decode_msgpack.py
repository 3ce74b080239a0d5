#!/usr/bin/env python3
"""Decodes one CXP packet's MessagePack form (stdin) with the `msgpack` package, a
decoder independent of ours, and prints it as JSON: every field as decoded, the
payload frame's kind (`k`), compression flag (`z`) and length (`n`), and the payload's
text when it is an uncompressed JSON payload (`payload_text`)."""

import json
import sys

import msgpack

doc = msgpack.unpackb(sys.stdin.buffer.read(), raw=False)
frame = doc.pop("payload")
doc["payload_frame"] = {"k": frame["k"], "z": frame["z"], "n": frame["n"]}
if frame["k"] == 0 and not frame["z"]:
    doc["payload_text"] = bytes(frame["d"]).decode("utf-8")
print(json.dumps(doc))
