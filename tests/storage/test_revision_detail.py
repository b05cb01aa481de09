"""The revision read model holds the domain's types, decoded once from the stored JSON."""

from __future__ import annotations

from service_fakes import FakeOutcome, job_result

from gate.domain import Verdict, VerdictReport
from gate.domain.names import Side
from gate.domain.results import BenchResult, Fingerprint, StaticResult
from gate.domain.verdict import RuleOutcome, RuleRow
from gate.storage import claims
from gate.storage.models import Job, Repository, Revision, StageRecord
from gate.storage.outcomes import store_outcome
from gate.storage.queries import Revisions

RULE = RuleRow("max_registers", RuleOutcome.FAIL, "200 > 128", value=200, threshold=128, decisive=True)


def _stored_job(session_factory, tmp_path, result=None) -> tuple[int, int]:  # noqa: ANN001
    with session_factory() as s:
        job = Job(revision=Revision(repository=Repository(name="octo/flash", url="https://x/octo/flash.git"),
                                    sha="c" * 40, base_sha="a" * 40), kernel="k0")
        s.add(job)
        s.commit()
        job_id, rev_id = job.id, job.revision_id
        attempt = claims.Claims(s).claim(job_id, worker="w")
    result = result or job_result("k0")
    result.fingerprint = Fingerprint(gpu_name="NVIDIA H100 80GB HBM3", driver="570.86")
    with session_factory() as s:
        store_outcome(s, job_id, attempt, FakeOutcome(result, VerdictReport(Verdict.REJECT, "max_registers", [RULE])),
                      tmp_path)
    return rev_id, job_id


def test_rules_fingerprint_and_stage_results_come_back_typed(session_factory, tmp_path):
    rev_id, _ = _stored_job(session_factory, tmp_path)
    with session_factory() as s:
        (job,) = Revisions(s).detail(rev_id).jobs
    assert job.verdict.rules == [RULE] and job.verdict.rules[0].outcome is RuleOutcome.FAIL
    assert job.verdict.fingerprint == Fingerprint(gpu_name="NVIDIA H100 80GB HBM3", driver="570.86")
    assert isinstance(job.bench, BenchResult) and job.bench.shapes[0].candidate.median_us == 50.0
    assert isinstance(job.static, StaticResult) and job.static.functions[0].sass_opcodes == {"HMMA": 64}
    assert job.profile(Side.CANDIDATE).kernels[0].tensor_pipe_pct == 60.0
    assert job.profile(Side.BASELINE) is None and job.correctness is None


def test_a_stage_payload_that_no_longer_decodes_reads_as_no_result_with_the_reason(session_factory, tmp_path):
    rev_id, job_id = _stored_job(session_factory, tmp_path)
    with session_factory() as s:
        s.add(StageRecord(job_id=job_id, side="candidate", stage="correctness", status="passed",
                          payload={"status": "passed", "cases": [{"shape": "s"}]}))     # a case without its fields
        s.commit()
    with session_factory() as s:
        (job,) = Revisions(s).detail(rev_id).jobs
    stage = job.stage(Side.CANDIDATE, "correctness")
    assert stage.result is None and job.correctness is None
    assert stage.unreadable.startswith("candidate correctness: ") and "'dtype'" in stage.unreadable
    assert job.bench is not None                                # the others still read


def test_a_launchs_mangled_name_is_stored_and_a_profile_stored_before_it_still_reads(session_factory, tmp_path):
    result = job_result("k0")
    result.candidate.profile.kernels[0].mangled = "_Z5fwd_aPf"
    rev_id, job_id = _stored_job(session_factory, tmp_path, result)
    with session_factory() as s:
        record = s.query(StageRecord).filter_by(job_id=job_id, side="candidate", stage="profile").one()
        kernels = record.payload["kernels"]
        assert [k["mangled"] for k in kernels] == ["_Z5fwd_aPf", ""]
        record.payload = {**record.payload, "kernels": [{n: v for n, v in k.items() if n != "mangled"}
                                                        for k in kernels]}          # as stored before the field
        s.commit()
    with session_factory() as s:
        (job,) = Revisions(s).detail(rev_id).jobs
    assert [k.mangled for k in job.profile(Side.CANDIDATE).kernels] == ["", ""]
    assert job.profile(Side.CANDIDATE).kernels[0].tensor_pipe_pct == 60.0
