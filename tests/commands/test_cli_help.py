"""`gate --help` lists the exit codes, taken from the verdicts themselves."""

from gate.cli import build_parser
from gate.domain.verdict import Verdict


def test_help_lists_every_verdicts_exit_code():
    text = build_parser().format_help()
    assert "exit codes" in text
    for verdict in Verdict:
        line = next(line for line in text.splitlines() if verdict.value in line and line.strip()[:1].isdigit())
        assert line.strip().startswith(str(verdict.exit_code)), line
