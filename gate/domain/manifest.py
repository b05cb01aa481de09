"""The manifest's types (`gate.toml`), and the bound it sets for a rule. Validation lives in `gate.manifest.load`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from gate.domain.rule_catalog import CATALOG, SETTINGS, Kind, RuleSpec


ShapeValue = int | float | bool | str


@dataclass(frozen=True)
class Shape:
    """One problem size of a workload, e.g. attention {b, h, s, d, causal} or gemm {m, n, k}; a custom
    workload's may also carry floats (a softmax scale, an epsilon) and strings (a layout name)."""

    params: dict[str, ShapeValue]

    @property
    def label(self) -> str:
        """Stable, readable key: `b1_h8_s512_d64` (+ `_causal`); gemm `m2048_n2048_k1024`; a float or a
        string reads `eps1e-05`, `layoutbshd`."""
        parts = [f"{k}{v}" for k, v in self.params.items() if not isinstance(v, bool)]
        flags = [k for k, v in self.params.items() if v is True]
        return "_".join(parts + flags)

    @property
    def toml(self) -> str:
        """As the manifest writes it: `{b = 2, s = 1000, causal = true, layout = "bshd"}`."""
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in self.params.items()) + "}"

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.params.items())))


def _toml_value(value: ShapeValue) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def _field(spec: RuleSpec) -> tuple[str, Any, Any]:
    """A SASS row's key lists opcodes; any other's is a number, None (off) unless the row has a default."""
    if spec.kind is Kind.SASS:
        return spec.key, list[str], field(default_factory=list)
    number = int if spec.integer else float
    return spec.key, number if spec.default is not None else number | None, spec.default


Gates = dataclasses.make_dataclass(
    "Gates", [_field(s) for s in CATALOG if s.key] + [(k, list[str], field(default_factory=list)) for k in SETTINGS],
    namespace={"__module__": __name__, "__doc__": "Accept/reject thresholds: a field per manifest key of the rule "
               "catalogue, typed and defaulted by its row, then the settings. `None` switches a rule off."})


def threshold_of(spec: RuleSpec, gates: Gates) -> float | int | list[str] | None:
    """The manifest's bound for `spec`; None (or []) when the rule is off or has no key."""
    return getattr(gates, spec.key) if spec.key is not None else None


def profile_rules_set(gates: Gates) -> bool:
    """Whether a rule reads the Nsight Compute profile: without one, the profile stage is optional."""
    return any(threshold_of(s, gates) is not None for s in CATALOG if s.kind in (Kind.NCU_ABSOLUTE, Kind.NCU_RELATIVE))


@dataclass
class KernelSpec:
    """One `[[kernel]]` table of the manifest. Paths are relative to the repository root."""

    name: str
    sources: list[str]
    function: str = "forward"
    workload: str = "attention"      # "attention", "gemm", or "module:callable" inside the repo
    arch: list[str] = field(default_factory=lambda: ["sm_80", "sm_90"])
    shapes: list[Shape] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=lambda: ["float16"])
    gates: Gates = field(default_factory=Gates)
    profile: bool = True             # run the Nsight Compute stage
    timeout_s: float = 600.0         # the whole job's child process
    nvcc_flags: list[str] = field(default_factory=list)   # after the gate's and torch's (compile_flags.py)
    cxx_flags: list[str] = field(default_factory=list)
    module: str = ""                 # the extension's import name; "" = the sources' PyInit_<name>, or derived
    kernels: list[str] = field(default_factory=list)      # globs of the judged kernels; [] = the launched ones
    own_process: bool = False        # load the baseline's build in a process of its own, even when the gate
                                     # cannot see that the build registers torch ops

    @property
    def cuda_sources(self) -> list[str]:
        return [s for s in self.sources if s.endswith(".cu")]

    @property
    def flags(self) -> dict[str, list[str]]:
        """The manifest's compile flags by key, as the static delta names them (`nvcc_flags: + -O0`)."""
        return {key: list(getattr(self, key)) for key in FLAG_KEYS}


FLAG_KEYS = ("nvcc_flags", "cxx_flags")
# What builds a side, read from that side's own manifest: each revision is built as it was committed.
# The rest (shapes, dtypes, workload, archs, gates, timeout) is what the job measures: the candidate's.
BUILD_FIELDS = ("sources", "function", "module", "nvcc_flags", "cxx_flags", "own_process")


def built_as(measured: KernelSpec, own: KernelSpec) -> KernelSpec:
    """`measured` (the candidate's kernel) with the build fields of `own` (the baseline's declaration)."""
    return dataclasses.replace(measured, **{name: getattr(own, name) for name in BUILD_FIELDS})


@dataclass
class Manifest:
    kernels: list[KernelSpec]
    path: str = "gate.toml"

    def kernel(self, name: str) -> KernelSpec:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(name)
