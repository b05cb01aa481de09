"""Which compiled functions the static rules judge: the kernels the workload launches.

A monorepo's extension compiles every template instance its sources declare (causal-conv1d: 1,080
functions), and most are never launched by the workload; their spills (11,872 B in one case) are no
fact about the kernel under test. So the static rules judge:

1. the functions the manifest's `kernels` globs match (`fnmatchcase` over `symbols.match_key`, the
   whole name: `*conv1d_fwd<*>`), when it sets them;
2. else the functions the candidate's profile saw launched (Nsight Compute's demangled names, matched
   by `match_key`: namespaces and template arguments kept, anonymous namespaces dropped);
3. else, with no profile or no launch that matches a compiled function, every function, and says so:
   judging too much is a loud mistake, judging too little a silent one.

The rest are listed as not judged, with a count, in the static stage's row. `aligned` names the
baseline's functions as the candidate's, so the static delta pairs a kernel across builds. Pure.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from dataclasses import dataclass, field, replace

from gate.domain.results import FunctionResources, ProfileResult, StageStatus, StaticResult
from gate.nvidia.symbols import match_key


@dataclass(frozen=True)
class StaticScope:
    judged: list[FunctionResources] = field(default_factory=list)
    not_judged: list[FunctionResources] = field(default_factory=list)
    basis: str = ""              # how `judged` was chosen, for the static row's reason


def launched_names(profile: ProfileResult | None) -> set[str]:
    """`match_key` of every kernel the profile saw launched (none without a passed profile)."""
    if profile is None or profile.status is not StageStatus.PASSED:
        return set()
    return {match_key(k.demangled or k.kernel) for k in profile.kernels}


def static_scope(static: StaticResult, launched: set[str], patterns: list[str]) -> StaticScope:
    """Split `static.functions` into those the static rules judge and the rest (see the module doc)."""
    functions = static.functions
    if patterns:
        judged = [f for f in functions if any(fnmatchcase(match_key(f.function), p) for p in patterns)]
        return _split(functions, judged, f"the manifest's kernels ({', '.join(patterns)})")
    if launched:
        judged = [f for f in functions if match_key(f.function) in launched]
        if not judged:   # names that differ in form: fall back to the name without template arguments
            bases = {_base(name) for name in launched}
            judged = [f for f in functions if _base(match_key(f.function)) in bases]
        if judged:
            return _split(functions, judged, "the kernels the workload launched")
        return StaticScope(list(functions), [], "every compiled function (no launched kernel matched one)")
    return StaticScope(list(functions), [], "every compiled function (no launch record)")


def scoped(static: StaticResult | None, scope: StaticScope | None) -> StaticResult | None:
    """`static` with only the judged functions, for the rules that read it."""
    if static is None or scope is None:
        return static
    keys = {(match_key(f.function), f.arch) for f in scope.judged}
    return replace(static, functions=[f for f in static.functions if (match_key(f.function), f.arch) in keys])


def aligned(base: StaticResult | None, cand: StaticResult | None) -> StaticResult | None:
    """`base` with each function named as the candidate's function of the same `match_key` and arch.

    nvcc hashes the file into an anonymous namespace's mangled name, so one kernel has two mangled
    names in two builds and a delta keyed by mangled name found no pair. Renamed here, the delta rows
    pair them as they pair every other kernel."""
    if base is None or cand is None:
        return base
    names = {(match_key(f.function), f.arch): f.function for f in cand.functions}
    return replace(base, functions=[replace(f, function=names.get((match_key(f.function), f.arch), f.function))
                                    for f in base.functions])


def _split(functions: list[FunctionResources], judged: list[FunctionResources], basis: str) -> StaticScope:
    ids = {id(f) for f in judged}
    return StaticScope(judged, [f for f in functions if id(f) not in ids], basis)


def _base(key: str) -> str:
    """`ns::k<Cfg<4>>` -> `ns::k`."""
    return key.split("<", 1)[0]
