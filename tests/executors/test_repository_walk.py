"""Issue 41's reading figure, kept executable: follow a job's repository (the order's `repo`, the
address the submitter gave) through the parent's calls of one `gate_job`, and count the places it
visits (gate functions handed it, or a value holding it), the modules they are in, and the climbs
back up (a return to a module the walk had already left). The child is a stand-in: it is another
process, reached through one place (`run_child`), whatever it does inside."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from gate.domain import JobResult, SideResults
from gate.domain.job import JobOrder, RunOptions
from gate.executors import job
from gate.sources.mirror import Mirror
from tests.samples.build import make_repo

MOST_PLACES, MOST_MODULES, MOST_CLIMBS = 15, 8, 3


def _holds(value: object, address: str, depth: int = 0) -> bool:
    """Whether `value` is the address, or a dataclass or sequence holding it (two levels down)."""
    if isinstance(value, (str, Path)):
        return str(value) == address
    if depth < 2 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_holds(getattr(value, f.name, None), address, depth + 1) for f in dataclasses.fields(value))
    if depth < 2 and isinstance(value, (list, tuple)):
        return any(_holds(item, address, depth + 1) for item in value[:8])
    return False


def walk(address: str, run: object) -> list[tuple[str, str]]:
    """(module, function) of every gate function called with the address among its arguments, in
    order, while `run()` runs. Generated dataclass methods are not places."""
    trail: list[tuple[str, str]] = []

    def seen(frame, event, _arg):  # noqa: ANN001, ANN202 (sys.setprofile's hook)
        module, code = frame.f_globals.get("__name__", ""), frame.f_code
        if event != "call" or not module.startswith("gate.") or "__create_fn__" in code.co_qualname:
            return
        arguments = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if any(_holds(frame.f_locals.get(name), address) for name in arguments if name != "self"):
            trail.append((module, code.co_qualname))

    sys.setprofile(seen)
    try:
        run()
    finally:
        sys.setprofile(None)
    return trail


def figures(trail: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[str], int]:
    """The distinct places, the distinct modules, and the climbs back up."""
    places = list(dict.fromkeys(trail))
    modules = list(dict.fromkeys(module for module, _ in trail))
    visits = [module for i, (module, _) in enumerate(trail) if i == 0 or trail[i - 1][0] != module]
    return places, modules, sum(1 for i, module in enumerate(visits) if module in visits[:i])


def test_a_jobs_repository_visits_few_places_in_few_modules_and_rarely_climbs_back(tmp_path, monkeypatch):
    repo, shas = make_repo(tmp_path, "wmma_gemm", ["slower"])
    address = str(repo)

    def child(request, **_):  # noqa: ANN001, ANN202 (run_child's signature)
        job_result = JobResult("wmma_gemm", SideResults(shas["slower"]), SideResults(shas["base"]))
        return job_result

    monkeypatch.setattr(job, "run_child", child)
    order = JobOrder(repo=address, sha=shas["slower"], base_sha=shas["base"], kernel="wmma_gemm")
    context = job.JobContext(data_dir=tmp_path / "data", options=RunOptions(), mirror=Mirror(tmp_path / "mirrors"))
    trail = walk(address, lambda: job.gate_job(order, context))
    places, modules, climbs = figures(trail)
    said = "\n".join(f"  {module}: {name}" for module, name in places)
    print(f"\n{len(places)} places in {len(modules)} modules, {climbs} climbs back up:\n{said}")
    assert ("gate.executors.job", "gate_job") in places and ("gate.sources.mirror", "Mirror.checkout") in places
    assert len(places) <= MOST_PLACES, said
    assert len(modules) <= MOST_MODULES, modules
    assert climbs <= MOST_CLIMBS, [module for module, _ in trail]


def test_the_walk_counts_a_return_to_a_module_already_left_as_a_climb():
    trail = [("gate.a", "f"), ("gate.b", "g"), ("gate.b", "h"), ("gate.a", "f2"), ("gate.c", "k"), ("gate.b", "g")]
    places, modules, climbs = figures(trail)
    assert (len(places), modules, climbs) == (5, ["gate.a", "gate.b", "gate.c"], 2)
