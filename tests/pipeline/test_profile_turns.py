"""Both sides' profiles (gate/pipeline/run.py `_profile_sides`): one side under ncu at a time, the
candidate first, and the candidate's report read while the baseline runs. The ncu runs are stood in
by functions that record when they hold the GPU; `tests/gpu` runs the real ones."""

from __future__ import annotations

import threading
import time

from gate.domain import KernelSpec, ProfileResult, StageStatus
from gate.domain.job import Checkout, JobRequest
from gate.domain.names import Side
from gate.domain.results import BuildResult, JobResult, SideResults
from gate.errors import ProfilerError
from gate.pipeline.run import _profile_sides
from gate.profiling.profile import Turns


class NoAhead:
    def session(self, side):
        return None


def job(tmp_path) -> tuple[JobRequest, JobResult]:
    request = JobRequest(kernel=KernelSpec(name="k", sources=["k.cu"]), candidate=Checkout("c" * 40, str(tmp_path)),
                         baseline=Checkout("b" * 40, str(tmp_path)), artifacts_dir=str(tmp_path / "art"),
                         profile_baseline=True)
    built = BuildResult(status=StageStatus.PASSED, module_path="k.so")
    result = JobResult(kernel="k", candidate=SideResults(sha="c" * 40, build=built),
                       baseline=SideResults(sha="b" * 40, build=built))
    return request, result


def test_the_candidates_report_is_read_while_the_baseline_runs_under_ncu(tmp_path):
    request, result = job(tmp_path)
    log: list[str] = []
    baseline_ran = threading.Event()

    def fake_profile(kernel, module_path, src_dir, out_dir, options, *, session, turn, workload_dir=None):
        side = out_dir.parent.name
        with turn:
            log.append(f"{side} run")
            time.sleep(0.05)
            log.append(f"{side} run done")
        if side == Side.CANDIDATE:
            assert baseline_ran.wait(10), "the baseline's run waited for the candidate's report"
        else:
            baseline_ran.set()
        log.append(f"{side} read")
        return ProfileResult(status=StageStatus.PASSED, reason=side)

    events, saves = [], []
    _profile_sides(request, result, events.append, lambda r: saves.append(1), fake_profile, NoAhead())
    assert log.index("candidate run done") < log.index("baseline run") < log.index("candidate read")
    assert result.candidate.profile.reason == "candidate" and result.baseline.profile.reason == "baseline"
    assert sorted((e.side, e.state) for e in events) == [
        ("baseline", "passed"), ("baseline", "started"), ("candidate", "passed"), ("candidate", "started")]
    assert len(saves) == 2


def test_a_side_that_fails_before_its_turn_does_not_hold_up_the_next(tmp_path):
    request, result = job(tmp_path)

    def fake_profile(kernel, module_path, src_dir, out_dir, options, *, session, turn, workload_dir=None):
        if out_dir.parent.name == Side.CANDIDATE:
            raise ProfilerError("ncu could not start")          # its turn never taken
        with turn:
            return ProfileResult(status=StageStatus.PASSED, reason="ran")

    _profile_sides(request, result, lambda e: None, lambda r: None, fake_profile, NoAhead())
    assert result.candidate.profile.status is StageStatus.ERROR and "ncu could not start" in result.candidate.profile.reason
    assert result.baseline.profile.reason == "ran"


def test_turns_let_their_holders_in_by_number():
    turns, order = Turns(), []

    def take(number: int) -> None:
        with turns.turn(number):
            order.append(number)

    threads = [threading.Thread(target=take, args=(n,)) for n in (2, 1, 0)]
    for thread in threads:
        thread.start()
        time.sleep(0.02)            # the later numbers ask first
    for thread in threads:
        thread.join(10)
    assert order == [0, 1, 2]


def test_a_sides_stage_time_leaves_out_its_wait_for_the_turn(tmp_path, monkeypatch):
    from contextlib import contextmanager
    from types import SimpleNamespace

    from gate.domain.job import RunOptions
    from gate.profiling import profile

    clock = [1000.0]

    class Session:
        def run(self, *args):
            clock[0] += 3.0         # its own ncu run
            return 0, ""

        def cancel(self):
            pass

    @contextmanager
    def turn_after_the_other_side():
        clock[0] += 100.0           # the other side's ncu run
        yield

    monkeypatch.setattr(profile, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(profile, "_profiled", lambda session, src, rc, out, start: clock[0] - start)
    own_s = profile.profile(KernelSpec(name="k", sources=["k.cu"]), "k.so", tmp_path, tmp_path, RunOptions(),
                            session=Session(), turn=turn_after_the_other_side())
    assert own_s == 3.0
