"""The GPU child's entry point, `python -m gate.runner`: what it imports and how it refuses a bad request."""

import subprocess
import sys

from gate.domain.child_protocol import ExitCode


def test_the_child_entry_imports_no_web_database_or_settings_code():
    code = ("import sys, gate.runner.__main__, gate.pipeline.run, gate.compiling.static, gate.verdict.decide;"
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
