"""The side host's wire: length-prefixed JSON messages over a pair of pipes (issue 26).

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON. Pipes of their own, not
stdout: a built extension may print to file descriptor 1. JSON, not pickle: the host runs submitted
code, and what it sends back is only numbers, names and messages.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

_HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 16 << 20     # far over any message here; a larger length is a broken stream


class WireError(ValueError):
    """The other end sent something that is not a frame of this protocol."""


def send(fd: int, message: dict[str, Any]) -> None:
    data = json.dumps(message).encode()
    _write_all(fd, _HEADER.pack(len(data)) + data)


def receive(fd: int) -> dict[str, Any] | None:
    """The next message, or None when the other end closed the pipe between frames (it ended)."""
    header = _read_exactly(fd, _HEADER.size)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise WireError(f"a frame of {length} bytes")
    body = _read_exactly(fd, length)
    if body is None:
        raise WireError("the pipe closed inside a frame")
    message = json.loads(body)
    if not isinstance(message, dict):
        raise WireError(f"a message must be an object, got {type(message).__name__}")
    return message


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            if left == size and size:
                return None
            raise WireError("the pipe closed inside a frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
