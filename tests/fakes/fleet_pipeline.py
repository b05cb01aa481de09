"""A `gate_job` for processes the tests start (`GATE_TEST_PIPELINE=tests.fakes.fleet_pipeline:gate_job`,
with the repository and tests/ on PYTHONPATH): it takes FLEET_JOB_S seconds (default 1), accepts, and
says in its reason which slot's GPU ran it. A kernel named `wrong*` is rejected by its correctness."""

from __future__ import annotations

import os
import time

from service_fakes import FakeOutcome, job_result

from gate.domain import Verdict, VerdictReport
from gate.domain.verdict import RuleOutcome, RuleRow


def gate_job(order, context):  # noqa: ANN001, ANN201 (the executor's JobOrder and JobContext)
    time.sleep(float(os.environ.get("FLEET_JOB_S", "1")))
    where = f"GPU {context.gpu.index}" if context.gpu is not None else "no GPU"
    wrong = order.kernel.startswith("wrong")
    row = RuleRow(rule="correctness", outcome=RuleOutcome.FAIL if wrong else RuleOutcome.PASS, reason=where,
                  decisive=wrong)
    verdict = Verdict.REJECT if wrong else Verdict.ACCEPT
    return FakeOutcome(job_result(order.kernel, order.sha, order.base_sha),
                       VerdictReport(verdict, f"{verdict.value}: correctness: ran on {where}", [row]))
