"""The GPU child: `python -m gate.runner [--spare] REQUEST.json RESULT.json`.

Reads a `JobRequest`, runs `gate.pipeline.run.measure`, prints progress events on the event channel,
and writes the `JobResult` after every stage (the parent keeps what was measured before a crash).

`--spare`: a child started before its job (`gate.executors.spare`) warms up (`run.warm_up`), then waits
for one line on stdin: `go` (the request is written), or the end of stdin (no job came: exit quietly).
Nothing of a submission's exists in its box before the go.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import TextIO

from gate.domain.child_protocol import SPARE_OPTIONS_NAME, ExitCode, error_line, event_line, read_request, write_result
from gate.domain.job import ProgressEvent
from gate.domain.results import JobResult
from gate.errors import GateError


def _event_channel() -> TextIO:
    """Keep the original stdout for events and point fd 1 at stderr: compilers and torch's ninja build
    write to file descriptor 1 directly (NCU-FACTS.md §5), which would interleave with the events."""
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    sys.stdout.flush()
    os.dup2(2, 1)
    return channel


GO = "go"


def _wait_for_go(folder: Path) -> bool:
    """Warm up for the options the parent left in `folder`, then wait: go (True) or the end of stdin."""
    from gate.domain.codec import from_json
    from gate.domain.job import RunOptions
    from gate.pipeline.run import warm_up

    options = from_json(RunOptions, json.loads((folder / SPARE_OPTIONS_NAME).read_text()))
    warm_up(options, folder)
    return sys.stdin.readline().strip() == GO


def main(argv: list[str]) -> int:
    spare = argv[:1] == ["--spare"]
    argv = argv[1:] if spare else argv
    if len(argv) != 2:
        print("usage: python -m gate.runner [--spare] REQUEST.json RESULT.json", file=sys.stderr)
        return ExitCode.USAGE
    channel = _event_channel()
    request_path, result_path = Path(argv[0]), Path(argv[1])
    if spare and not _wait_for_go(request_path.parent):
        return ExitCode.OK
    try:
        request = read_request(request_path)
    except (OSError, ValueError, TypeError) as exc:
        print(f"gate.runner: bad request {request_path}: {exc}", file=sys.stderr)
        return ExitCode.BAD_REQUEST

    from gate.pipeline.run import measure   # after the channel is set up: stages may print on import

    def emit(event: ProgressEvent) -> None:
        channel.write(event_line(event) + "\n")
        channel.flush()

    def checkpoint(result: JobResult) -> None:
        write_result(result_path, result)

    try:
        result = measure(request, emit, checkpoint=checkpoint)
    except GateError as exc:
        channel.write(error_line(type(exc).__name__, str(exc)) + "\n")
        channel.flush()
        return ExitCode.GATE_ERROR
    except Exception:   # a bug in the gate: the traceback on stderr is the parent's evidence
        traceback.print_exc()
        return ExitCode.INTERNAL
    write_result(result_path, result)
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(int(main(sys.argv[1:])))
