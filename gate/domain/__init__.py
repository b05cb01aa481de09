"""Pure types shared by every part of the gate. Stdlib only: the GPU child imports this."""

from gate.domain.manifest import Gates, KernelSpec, Manifest, Shape
from gate.domain.results import (
    BenchResult,
    BuildResult,
    CorrectnessCase,
    CorrectnessResult,
    Fingerprint,
    FunctionResources,
    GpuWatch,
    JobResult,
    KernelMetrics,
    ProfileResult,
    ShapeTiming,
    SideResults,
    StageStatus,
    StaticResult,
    TimingSamples,
)
from gate.domain.names import Direction, Metric, Side, Stage
from gate.domain.rule_catalog import Rule
from gate.domain.verdict import RuleOutcome, RuleRow, Verdict, VerdictReport, worst_verdict

__all__ = [
    "BenchResult", "BuildResult", "CorrectnessCase", "CorrectnessResult", "Fingerprint",
    "FunctionResources", "Gates", "GpuWatch", "JobResult", "KernelMetrics", "KernelSpec", "Manifest",
    "ProfileResult", "RuleOutcome", "RuleRow", "Shape", "ShapeTiming", "SideResults",
    "StageStatus", "StaticResult", "TimingSamples", "Verdict", "VerdictReport",
    "Direction", "Metric", "Rule", "Side", "Stage", "worst_verdict",
]
