"""The manifest's types (`gate.toml`). Validation lives in `gate.manifest.load`."""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass
class Gates:
    """Accept/reject thresholds. `None` switches a rule off."""

    max_latency_regression_pct: float | None = None   # candidate/baseline median, significant only
    min_tensor_pipe_pct: float | None = None           # sm__pipe_tensor_*cycles_active, % of peak
    max_bank_conflict_pct: float | None = None         # shared ld/st conflicts / wavefronts, %
    min_warps_active_pct: float | None = None          # sm__warps_active, % of peak
    min_dram_pct: float | None = None                  # gpu__dram_throughput, % of peak
    max_registers: int | None = None                   # ptxas, per thread
    max_spill_bytes: int | None = None                 # ptxas spill stores + loads
    max_smem_bytes: int | None = None                  # per block: ptxas static, and static + dynamic per launch
    max_registers_increase: int | None = None          # registers per thread above the baseline's
    max_spill_bytes_increase: int | None = None        # spill bytes above the baseline's
    max_smem_bytes_increase: int | None = None         # static shared memory above the baseline's
    require_sass: list[str] = field(default_factory=list)   # opcodes that must appear, e.g. HMMA
    max_tensor_pipe_drop_pct: float | None = None      # relative: points below the baseline's
    max_bank_conflict_increase_pct: float | None = None  # relative: points above the baseline's
    max_global_sectors_per_request: float | None = None  # l1tex global-load sectors / requests
    absolute_shapes: list[str] = field(default_factory=list)  # shape labels for min_* rules; [] = all
    max_error_ratio: float = 4.0                       # error <= k x PyTorch's own low-precision error


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
    own_process: bool = False        # load the baseline's build in a process of its own, even when no source
                                     # shows a TORCH_LIBRARY (e.g. one registered from a header)

    @property
    def cuda_sources(self) -> list[str]:
        return [s for s in self.sources if s.endswith(".cu")]


@dataclass
class Manifest:
    kernels: list[KernelSpec]
    path: str = "gate.toml"

    def kernel(self, name: str) -> KernelSpec:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(name)
