"""Pure types shared by every part of the gate. Stdlib only: the GPU child imports this."""

from gate.domain.manifest import Gates, KernelSpec, Manifest, Shape
from gate.domain.results import (
    BenchResult,
    BuildResult,
    CorrectnessCase,
    CorrectnessResult,
    Fingerprint,
    FunctionResources,
    JobResult,
    KernelMetrics,
    ProfileResult,
    ShapeTiming,
    SideResults,
    StageName,
    StageStatus,
    StaticResult,
    TimingSamples,
)
from gate.domain.verdict import RuleOutcome, RuleRow, Verdict, VerdictReport

__all__ = [
    "BenchResult", "BuildResult", "CorrectnessCase", "CorrectnessResult", "Fingerprint",
    "FunctionResources", "Gates", "JobResult", "KernelMetrics", "KernelSpec", "Manifest",
    "ProfileResult", "RuleOutcome", "RuleRow", "Shape", "ShapeTiming", "SideResults", "StageName",
    "StageStatus", "StaticResult", "TimingSamples", "Verdict", "VerdictReport",
]
