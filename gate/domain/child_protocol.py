"""What the parent and the GPU child share: exit codes, event lines, and the JSON files.

Both sides import it: the parent (`gate.executors.child`, `gate.executors.spare`) and the child
(`gate.runner`). So it lives in the domain, standard library and domain types only, and neither side
reaches into the other's package for it.

The child prints one JSON object per line on its *event channel* (its original stdout): a
`ProgressEvent` as `{"type": "progress", ...}` or, before exiting on an infrastructure fault,
`{"type": "error", "error": "<GateError subclass>", "message": ...}`. Everything else a stage prints
(nvcc, ninja, CUDA) goes to stderr, which the parent keeps as evidence.
"""

from __future__ import annotations

import json
import os
from enum import IntEnum
from pathlib import Path
from typing import Any

from gate.domain.codec import from_json, to_json
from gate.domain.job import JobRequest, ProgressEvent
from gate.domain.results import JobResult

REQUEST_NAME = "request.json"
RESULT_NAME = "result.json"
SPARE_OPTIONS_NAME = "spare-options.json"   # beside the request: the options a spare child was started for


class ExitCode(IntEnum):
    """The child's exit status. Values follow BSD sysexits.h; a kernel crash shows up as a signal."""

    OK = 0              # the result file is complete (kernel faults are inside it as data)
    USAGE = 64          # EX_USAGE: wrong command line
    BAD_REQUEST = 65    # EX_DATAERR: the request JSON is unreadable or does not fit JobRequest
    GATE_ERROR = 69     # EX_UNAVAILABLE: a GateError (tool missing, ncu not permitted); see the error event
    INTERNAL = 70       # EX_SOFTWARE: a bug in the gate's own code (traceback on stderr)


class ProtocolError(ValueError):
    """A line or file from the other side does not follow the protocol."""


def event_line(event: ProgressEvent) -> str:
    return json.dumps({"type": "progress", **to_json(event)})


def error_line(error: str, message: str) -> str:
    return json.dumps({"type": "error", "error": error, "message": message})


def parse_line(line: str) -> tuple[str, Any]:
    """`("progress", ProgressEvent)` or `("error", (error_name, message))`."""
    try:
        data = json.loads(line)
        kind = data.pop("type")
    except (ValueError, KeyError, AttributeError, TypeError) as exc:
        raise ProtocolError(f"not an event line: {line[:200]!r}") from exc
    if kind == "progress":
        try:
            return kind, from_json(ProgressEvent, data)
        except (TypeError, ValueError) as exc:
            raise ProtocolError(str(exc)) from exc
    if kind == "error":
        return kind, (str(data.get("error", "GateError")), str(data.get("message", "")))
    raise ProtocolError(f"unknown event type {kind!r}")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file (even after a crash)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def write_request(path: Path, request: JobRequest) -> None:
    write_json_atomic(path, to_json(request))


def read_request(path: Path) -> JobRequest:
    return from_json(JobRequest, json.loads(path.read_text(encoding="utf-8")))


def write_result(path: Path, result: JobResult) -> None:
    write_json_atomic(path, to_json(result))
