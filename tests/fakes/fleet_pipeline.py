"""A `gate_job` for processes the tests start (`GATE_TEST_PIPELINE=tests.fakes.fleet_pipeline:gate_job`,
with the repository and tests/ on PYTHONPATH): it takes FLEET_JOB_S seconds (default 1) and says in
its reason which slot's GPU ran it. It judges a revision of bench/fleet.py's subject as the real gate
would, by its commit message: "+N % arithmetic" is rejected by the latency rule, "wrong output" by
correctness, everything else (and a revision that is no commit) accepted."""

from __future__ import annotations

import os
import subprocess
import time

from service_fakes import FakeOutcome, job_result

from gate.domain import Verdict, VerdictReport
from gate.domain.verdict import RuleOutcome, RuleRow


def _message(repo: str, sha: str) -> str:
    found = subprocess.run(["git", "-C", repo, "log", "-1", "--format=%s", sha], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else ""


def gate_job(order, context):  # noqa: ANN001, ANN201 (the executor's JobOrder and JobContext)
    time.sleep(float(os.environ.get("FLEET_JOB_S", "1")))
    where = f"GPU {context.gpu.index}" if context.gpu is not None else "no GPU"
    message = _message(order.repo, order.sha)
    rule = "max_latency_regression_pct" if message.endswith("% arithmetic") else \
        "correctness" if message == "wrong output" else ""
    verdict = Verdict.REJECT if rule else Verdict.ACCEPT
    row = RuleRow(rule=rule or "correctness", outcome=RuleOutcome.FAIL if rule else RuleOutcome.PASS, reason=where,
                  decisive=bool(rule))
    return FakeOutcome(job_result(order.kernel, order.sha, order.base_sha),
                       VerdictReport(verdict, f"{verdict.value}: {rule or 'correctness'}: ran on {where}", [row]))
