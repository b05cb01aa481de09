"""`gate submit --wait` exit codes and its table (pure functions of the revision JSON)."""

import io

from gate.commands.submit import exit_code, follow, verdict_table


def _rev(*verdicts, error=None):
    jobs = [{"id": i, "kernel": f"k{i}", "gpu_kind": "any", "state": "done", "progress": "done",
             "verdict": {"verdict": v, "reason": f"because {v}", "gpu_kind": "H100"}} for i, v in enumerate(verdicts)]
    return {"status": "done", "error": error, "jobs": jobs}


def test_worst_verdict_decides_the_exit_code():
    assert exit_code(_rev("accept", "accept")) == 0
    assert exit_code(_rev("accept", "incomplete")) == 3
    assert exit_code(_rev("inconclusive", "reject")) == 1
    assert exit_code(_rev("reject", "error")) == 2


def test_a_revision_that_could_not_be_planned_exits_2():
    assert exit_code(_rev(error="cannot resolve sha 'x'")) == 2
    assert exit_code(_rev()) == 2


def test_table_lists_each_kernel_with_its_verdict():
    table = verdict_table(_rev("accept", "reject"))
    assert table.splitlines()[1].split()[:3] == ["k0", "H100", "accept"]
    assert "because reject" in table


def test_table_says_whose_figures_a_reused_job_took():
    rev = _rev("accept", "accept")
    rev["jobs"][1]["reused_from"] = "reused from 1a2b3c4d5e6f job 42, 2026-11-25 23:10 UTC"
    lines = verdict_table(rev).splitlines()
    assert lines[2].endswith("because accept (reused from 1a2b3c4d5e6f job 42, 2026-11-25 23:10 UTC)")
    assert lines[1].endswith("because accept")


def test_follow_prints_each_progress_change_once():
    states = [
        {"status": "running", "jobs": [{"id": 1, "kernel": "k", "state": "running", "progress": "candidate build started"}]},
        {"status": "running", "jobs": [{"id": 1, "kernel": "k", "state": "running", "progress": "candidate build started"}]},
        {"status": "done", "jobs": [{"id": 1, "kernel": "k", "state": "done", "progress": "done: accept"}]},
    ]

    class Client:
        def get(self, url):
            body = states.pop(0)

            class R:
                def raise_for_status(self): ...
                def json(self): return body
            return R()

    out = io.StringIO()
    follow(Client(), "/x", poll_s=0, out=out)
    assert out.getvalue().splitlines() == ["[k] running: candidate build started", "[k] done: accept"]
