"""The line protocol the parent and the GPU child share (gate/domain/child_protocol.py)."""

import json

import pytest

from gate.domain.job import ProgressEvent
from gate.domain.child_protocol import ExitCode, ProtocolError, error_line, event_line, parse_line


def test_progress_events_round_trip_through_a_line():
    event = ProgressEvent(stage="bench", side="joint", state="passed", detail="3 shapes")
    assert parse_line(event_line(event)) == ("progress", event)


def test_error_lines_carry_the_error_class_and_message():
    assert parse_line(error_line("ToolMissingError", "nvcc not found")) == (
        "error", ("ToolMissingError", "nvcc not found"))


@pytest.mark.parametrize("line", ["nvcc: warning", "[1/3] ninja", json.dumps({"type": "bogus"}),
                                  json.dumps({"stage": "x"}), json.dumps([1, 2])])
def test_stray_output_is_a_protocol_error(line):
    with pytest.raises(ProtocolError):
        parse_line(line)


def test_exit_codes_are_distinct_and_ok_is_zero():
    assert ExitCode.OK == 0
    assert len({int(c) for c in ExitCode}) == len(ExitCode)
