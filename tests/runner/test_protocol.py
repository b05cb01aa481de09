import json
import subprocess
import sys

import pytest

from gate.domain.job import ProgressEvent
from gate.runner.protocol import ExitCode, ProtocolError, error_line, event_line, parse_line


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


def test_the_child_entry_imports_no_web_database_or_settings_code():
    code = ("import sys, gate.runner.__main__, gate.pipeline.run, gate.pipeline.static, gate.verdict.decide;"
            "print(sorted(m for m in ('fastapi','sqlalchemy','pydantic','pydantic_settings','httpx','starlette',"
            "'torch','gate.storage','gate.api','gate.config','gate.notify') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_child_refuses_a_bad_request_with_its_exit_code(tmp_path):
    request = tmp_path / "request.json"
    request.write_text("{not json")
    proc = subprocess.run([sys.executable, "-m", "gate.runner", str(request), str(tmp_path / "r.json")],
                          capture_output=True, text=True)
    assert proc.returncode == ExitCode.BAD_REQUEST
    assert "bad request" in proc.stderr
