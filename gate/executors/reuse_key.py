"""The reuse keys of a job (docs/reuse.md: what they hash, and why), made by the parent before it
starts the GPU child: the lookup needs the database, which the child never imports, and a child that
stopped half-way to ask would cost a second torch import (~2 s) for every unchanged kernel. Hashing
files and asking three tools their version costs the parent well under a second.

`side_key`: what one side's build, static figures and profile depend on; its sources and headers are
the ones the manifest's own scan reads (`gate.manifest.module_name.read_files`, through the `-I` folders
of both flag lists). `job_keys`: both side keys and the rest of the request, where a new `JobRequest`
field counts unless `_NOT_MEASURING` names it.
Without a visible GPU every key is "" and nothing is reused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
from functools import cache
from pathlib import Path

import gate
from gate.domain.codec import to_json
from gate.domain.job import JobRequest, RunOptions
from gate.domain.manifest import KernelSpec
from gate.domain.names import Side
from gate.domain.reuse import ReuseKeys
from gate.manifest.module_name import read_files
from gate.nvidia.devices import Gpu, visible_gpus
from gate.nvidia.tools import tool_version

BUILT_IN_WORKLOADS = {"attention", "gemm"}
_MEASURING_CODE = ("pipeline", "runner", "compiling", "checking", "timing", "profiling", "nvidia")
# JobRequest fields that are not hashed as they are: the sides by content (the baseline's own build
# fields in its side key), the options by choice, the history's timing methods by comparison with the
# found job's (`domain.job.methods_agree`).
_NOT_MEASURING = ("candidate", "baseline", "artifacts_dir", "options", "kept_methods", "baseline_kernel")
# RunOptions fields that change what the child measures (paths and timeouts do not).
_MEASURING_OPTIONS = ("gpu_stages", "profile", "bench_budget_s", "target_rel_se_pct", "max_reruns",
                      "correctness_seeds", "ncu_clock_control", "clock_policy")


def _part(h: hashlib._Hash, label: str, data: bytes) -> None:
    """Feed `h` one length-prefixed part: no two different inputs make the same byte stream."""
    h.update(f"{label}:{len(data)}:".encode())
    h.update(data)


def side_inputs(spec: KernelSpec, root: Path, h: hashlib._Hash) -> None:
    """Feed `h` what one side's build and measurement read from the checkout at `root`."""
    root = Path(root).resolve()
    for name in spec.sources:
        if not (root / name).resolve().is_file():        # the build fails visibly; the key just says "absent"
            _part(h, "missing", name.encode())
    files = dict.fromkeys(read_files(spec, root))      # the build's own reading: both flags' -I folders
    if spec.workload not in BUILT_IN_WORKLOADS:
        files.update(dict.fromkeys(p.resolve() for p in sorted(root.rglob("*.py")) if ".git" not in p.parts))
    for path in sorted(files):
        _part(h, "name", path.relative_to(root).as_posix().encode())
        _part(h, "bytes", path.read_bytes())


def measuring_request(request: JobRequest) -> bytes:
    """The request as the key sees it: no checkout paths or shas (the sides are hashed by content),
    no options (`environment_inputs` takes the measuring ones), no gates."""
    fields = to_json(dataclasses.replace(request, kernel=dataclasses.replace(request.kernel, gates=None)))
    for name in _NOT_MEASURING:
        fields.pop(name)
    return json.dumps(fields, sort_keys=True).encode()


def _torch_version() -> str:
    try:
        return importlib.metadata.version("torch")     # the installed wheel, e.g. 2.9.0+cu128; no import
    except importlib.metadata.PackageNotFoundError:
        return ""


@cache
def measuring_code() -> str:
    """sha256 of the gate's own measuring modules: a new gate version measures anew."""
    h = hashlib.sha256()
    package = Path(gate.__file__).parent
    for folder in _MEASURING_CODE:
        for path in sorted((package / folder).rglob("*.py")):
            _part(h, path.relative_to(package).as_posix(), path.read_bytes())
    return h.hexdigest()


def environment_inputs(options: RunOptions, gpu: Gpu | None = None) -> str:
    """What of this machine the measurement depends on, as one text (of a slot's `gpu` alone: the
    other GPUs of its host do not measure it); '' when no GPU is visible."""
    gpus = visible_gpus(gpu)
    if not gpus:
        return ""
    measuring = {name: getattr(options, name) for name in _MEASURING_OPTIONS}
    return json.dumps({"gpus": gpus, "nvcc": tool_version(options.nvcc_path),
                       "ncu": tool_version(options.ncu_path), "torch": _torch_version(),
                       "options": measuring, "gate": measuring_code()}, sort_keys=True)


def side_key(spec: KernelSpec, root: Path, environment: str) -> str:
    """What one side's own measurements (build, static figures, profile) depend on: its sources and headers,
    the kernel's manifest entry less its gates, and the environment. A candidate's key equal to a later job's
    baseline's means that baseline's profile was measured already; '' without a GPU."""
    if not environment:
        return ""
    h = hashlib.sha256()
    _part(h, "environment", environment.encode())
    _part(h, "kernel", json.dumps(to_json(dataclasses.replace(spec, gates=None)), sort_keys=True).encode())
    side_inputs(spec, Path(root), h)
    return h.hexdigest()


def job_keys(request: JobRequest, environment: str) -> ReuseKeys:
    """The job's key (both sides' `side_key`, each of the kernel as that side is built, and the rest of the
    request: equal exactly when an earlier result may stand for it) and the two side keys; all '' without a GPU."""
    if not environment:
        return ReuseKeys()
    candidate = side_key(request.spec(Side.CANDIDATE), Path(request.candidate.path), environment)
    baseline = "" if request.baseline is None else side_key(request.spec(Side.BASELINE), Path(request.baseline.path),
                                                            environment)
    h = hashlib.sha256()
    _part(h, "request", measuring_request(request))
    _part(h, "candidate", candidate.encode())
    _part(h, "baseline", baseline.encode() if request.baseline is not None else b"none")
    return ReuseKeys(job=h.hexdigest(), candidate=candidate, baseline=baseline)
