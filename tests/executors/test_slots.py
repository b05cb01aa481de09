"""One slot per GPU (issue 42): on a host with two GPUs (a stand-in nvidia-smi, /dev and sysfs:
tests/fakes/gpu_host.py) the embedded executor runs two jobs at once, each child in its box seeing
its own GPU alone (CUDA_VISIBLE_DEVICES is its UUID, the box binds its node and the shared ones) on
the cores near it, and each job records and shows which GPU ran it."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import threading
import time

from service_fakes import FakeOutcome, FakeSources, job_result

from gate.domain import KernelSpec, Verdict, VerdictReport
from gate.domain.job import Checkout, JobRequest, RunOptions
from gate.executors.base import JobEnvironment
from gate.executors.child import run_child
from gate.executors.local import LocalExecutor
from gate.services.submissions import plan_revision, submit_revision
from gate.storage.models import Revision
from gate.storage.unit import Store, UnitOfWork
from tests.fakes.gpu_host import GPUS, SHARED_NODES, two_gpu_host

# What the boxed child sees, handed back as a note of its result.
PROBE = textwrap.dedent("""
    import json, os, sys
    dev = sys.argv[1]
    seen = {"visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "cores": sorted(os.sched_getaffinity(0)),
            "nodes": sorted(os.listdir(dev)) if os.path.isdir(dev) else []}
    json.dump({"kernel": "k", "candidate": {"sha": "c"}, "notes": ["probe " + json.dumps(seen)]},
              open("result.json", "w"))
""")


class ProbePipeline:
    """A `gate_job` whose child is the probe; both jobs must be running at once (two slots)."""

    def __init__(self, dev, checkout):
        self.dev, self.checkout = dev, checkout
        self.together = threading.Barrier(2, timeout=60)
        self.seen: dict[str, tuple] = {}

    def __call__(self, order, context):
        request = JobRequest(kernel=KernelSpec(name=order.kernel, sources=["k.cu"]),
                             candidate=Checkout(order.sha, str(self.checkout)),
                             artifacts_dir=str(context.data_dir / "box"), options=RunOptions())
        self.together.wait()
        result = run_child(request, 60, command=[sys.executable, "-c", PROBE, str(self.dev)],
                           hidden=(context.data_dir,), gpu=context.gpu)
        probe = next(json.loads(n.removeprefix("probe ")) for n in result.notes if n.startswith("probe "))
        slot = next(n for n in result.notes if n.startswith("slot: "))
        self.seen[order.kernel] = (context.gpu, probe, slot)
        return FakeOutcome(job_result(order.kernel, order.sha, order.base_sha),
                           VerdictReport(Verdict.ACCEPT, "all rules pass", []))


def test_two_gpus_give_two_slots_whose_children_see_different_devices(session_factory, tmp_path, monkeypatch):
    host = two_gpu_host(tmp_path, monkeypatch)
    (tmp_path / "checkout").mkdir()
    with session_factory() as s:
        rev_id = submit_revision(UnitOfWork(s), repo="/src/flash", sha="HEAD")
        plan_revision(UnitOfWork(s), rev_id, sources=FakeSources(kernels=("a", "b")))
    pipeline = ProbePipeline(host.dev, tmp_path / "checkout")
    env = JobEnvironment(store=Store(session_factory.kw["bind"]), gate_job=pipeline, data_dir=tmp_path / "data",
                         options=RunOptions(), heartbeat_s=0.2)
    executor = LocalExecutor(env, poll_s=0.05)
    assert [slot.gpu.uuid for slot in executor._slots()] == list(host.uuids)
    executor.start()
    try:
        deadline = time.monotonic() + 120
        while len(pipeline.seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        executor.stop()
    assert len(pipeline.seen) == 2, "both jobs did not run at once on their own slots"
    cores = sorted(os.sched_getaffinity(0))
    near = {GPUS[0][1]: cores[:1], GPUS[1][1]: cores[1:] or cores}
    for gpu, probe, slot in pipeline.seen.values():
        minor = next(g[5] for g in GPUS if g[1] == gpu.uuid)       # the driver's node for this UUID
        assert probe["visible"] == gpu.uuid
        assert probe["nodes"] == sorted([f"nvidia{minor}", *SHARED_NODES])
        if len(cores) > 1:
            assert probe["cores"] == near[gpu.uuid]
        assert slot.startswith(f"slot: GPU {gpu.index} ({gpu.uuid}, NVIDIA H200); its child ran on ")
        assert "the other GPUs: idle" in slot
    assert {gpu.uuid for gpu, _, _ in pipeline.seen.values()} == set(host.uuids)
    with session_factory() as s:
        jobs = s.get(Revision, rev_id).jobs
        assert {(j.gpu_index, j.gpu_uuid) for j in jobs} == {(0, GPUS[0][1]), (1, GPUS[1][1])}
        assert all(j.verdict.verdict == "accept" for j in jobs)
        shown = UnitOfWork(s).revisions.detail(rev_id).jobs
        assert {(j.gpu_index, j.gpu_uuid) for j in shown} == {(0, GPUS[0][1]), (1, GPUS[1][1])}
        assert all(f"GPU {j.gpu_index}" in e.detail for j in jobs for e in j.events if e.state == "claimed")


def test_a_job_that_failed_before_its_gpu_stages_still_names_the_slots_gpu():
    """Issue 42: jobs rejected at a compile read "no GPU (CPU only ...)" on a GPU host."""
    from gate.domain.results import Fingerprint
    from gate.executors.job import named_gpu
    from gate.nvidia.devices import Gpu

    gpu = Gpu(1, GPUS[1][1], "NVIDIA H200", GPUS[1][2], "580.95.05")
    failed = job_result("k")
    failed.fingerprint = Fingerprint(host="h")            # what the child records when no GPU stage ran
    named = named_gpu(failed, gpu)
    assert (named.fingerprint.gpu_kind, named.fingerprint.driver) == ("NVIDIA H200", "580.95.05")
    measured = job_result("k")
    measured.fingerprint = Fingerprint(gpu_name="NVIDIA H100", driver="570")
    assert named_gpu(measured, gpu).fingerprint.gpu_name == "NVIDIA H100"   # the child's own word stands
    assert named_gpu(failed, None).fingerprint.gpu_kind == "cpu"            # no slot, no GPU


def test_a_worker_for_a_gpu_takes_only_that_gpu(tmp_path, monkeypatch, session_factory):
    two_gpu_host(tmp_path, monkeypatch)
    from gate.nvidia.devices import slot_gpus

    env = JobEnvironment(store=Store(session_factory.kw["bind"]), gate_job=None, data_dir=tmp_path,
                         options=RunOptions())
    (slot,) = LocalExecutor(env, gpus=slot_gpus([GPUS[1][1]]))._slots()
    assert (slot.gpu.index, slot.kinds) == (1, ["any", "NVIDIA H200"]) and slot.worker.endswith(":gpu1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert [s.gpu.index for s in LocalExecutor(env)._slots()] == [0]
    assert [s.kinds for s in LocalExecutor(env, kind="h200-pool")._slots()] == [["any", "h200-pool"]]
