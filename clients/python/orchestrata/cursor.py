"""A position in a topic, kept in a file so that a restarted agent resumes.

The file is JSON ``{"volk", "topic", "epoch", "sequence"}``: every event of the topic
up to and including ``sequence`` (in that ``epoch`` of the log) has been handled. It is
replaced atomically (write a temporary file, flush it to disk, rename), so a crash
leaves either the old position or the new one, never a torn file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Position:
    epoch: str | None = None
    sequence: int | None = None


class CursorFile:
    def __init__(self, path: str | os.PathLike[str], volk: str, topic: str = "cxp.traffic", fsync: bool = True):
        self.path = Path(path)
        self.volk = volk
        self.topic = topic
        self.fsync = fsync

    def load(self) -> Position:
        """The saved position; an empty one when there is no file yet."""
        try:
            doc = json.loads(self.path.read_text())
        except FileNotFoundError:
            return Position()
        if not isinstance(doc, dict) or doc.get("volk") != self.volk or doc.get("topic") != self.topic:
            raise ValueError(f"{self.path} is the cursor of another Volk or topic: {doc!r}")
        epoch, sequence = doc.get("epoch"), doc.get("sequence")
        if not isinstance(epoch, str) or not isinstance(sequence, int) or sequence < 0:
            raise ValueError(f"{self.path}: malformed cursor {doc!r}")
        return Position(epoch, sequence)

    def save(self, position: Position) -> None:
        if position.epoch is None or position.sequence is None:
            return
        doc = {"volk": self.volk, "topic": self.topic, "epoch": position.epoch, "sequence": position.sequence}
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            f.write(json.dumps(doc))
            if self.fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
