"""Which compiled functions the static rules judge: the kernels the workload launches.

A monorepo's extension compiles every template instance its sources declare (causal-conv1d: 1,080
functions), most never launched by the workload; their spills (11,872 B in one case) are no fact
about the kernel under test. So the static rules judge the functions the manifest's `kernels` globs
match (`fnmatchcase` over `symbols.match_key`, the whole name: `*conv1d_fwd<*>`); else those the
candidate's profile saw launched, each by its mangled name (ptxas's own) as it is, with anonymous
namespaces made canonical (nvcc hashes the file into them), or by `match_key`; a launch without one
(a profile stored before it was read), or whose name matches nothing, by `match_key` of the
demangled name; if no launch matched at all, by the names without template arguments; else every
function, and says so: judging too much is a loud mistake, judging too little a silent one. The rest
are counted as not judged in the static stage's row.

`aligned` names the baseline's functions as the candidate's, so the static delta pairs a kernel
across builds; `unpaired` names the judged functions of one revision only, each side chosen by its
own launches (`baseline_scope`). Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase
from dataclasses import dataclass, field, replace

from gate.domain.names import Side
from gate.domain.results import FunctionResources, ProfileResult, SideResults, StageStatus, StaticResult
from gate.nvidia.symbols import canonical_anonymous, match_key


@dataclass(frozen=True)
class Launched:
    """A kernel the profile saw launched, by the names a compiled function is matched with."""

    key: str                     # `match_key` of Nsight Compute's demangled name
    mangled: str = ""            # its mangled name ("" in profiles stored before it was read)


@dataclass(frozen=True)
class StaticScope:
    judged: list[FunctionResources] = field(default_factory=list)
    not_judged: list[FunctionResources] = field(default_factory=list)
    basis: str = ""              # how `judged` was chosen, for the static row's reason
    by_launches: bool = False    # `judged` are the kernels a profile saw launched


@dataclass(frozen=True)
class Unpaired:
    """A judged function of one revision whose name and arch the other revision does not judge."""

    function: FunctionResources
    side: Side                   # the revision that judges it
    compiled_by_other: bool      # the other revision compiles it, but its workload did not launch it


def launched_names(profile: ProfileResult | None) -> set[Launched]:
    """Every kernel the profile saw launched (none without a passed profile)."""
    if profile is None or profile.status is not StageStatus.PASSED:
        return set()
    return {Launched(match_key(k.demangled or k.kernel), k.mangled) for k in profile.kernels}


def static_scope(static: StaticResult, launched: set[Launched], patterns: list[str]) -> StaticScope:
    """Split `static.functions` into those the static rules judge and the rest (see the module doc)."""
    functions = static.functions
    if patterns:
        judged = [f for f in functions if any(fnmatchcase(match_key(f.function), p) for p in patterns)]
        return _split(functions, judged, f"the manifest's kernels ({', '.join(patterns)})")
    if launched:
        judged = _launched(functions, launched)
        if not judged:   # names that differ in form: fall back to the name without template arguments
            bases = {_base(launch.key) for launch in launched}
            judged = [f for f in functions if _base(match_key(f.function)) in bases]
        if judged:
            return replace(_split(functions, judged, "the kernels the workload launched"), by_launches=True)
        return StaticScope(list(functions), [], "every compiled function (no launched kernel matched one)")
    return StaticScope(list(functions), [], "every compiled function (no launch record)")


def baseline_scope(base: StaticResult, base_profile: ProfileResult | None, cand_scope: StaticScope,
                   launched: set[Launched], patterns: list[str]) -> StaticScope:
    """The functions of the baseline the static delta reads beside the candidate's judged ones: where
    the candidate's were chosen by its launches, the baseline's are chosen by its own profile's
    launches when they match any of its functions; else by the candidate's `launched`, under the
    same rules as the candidate's (so, without profiles, both sides judge every function)."""
    if cand_scope.by_launches:
        own = static_scope(base, launched_names(base_profile), patterns)
        if own.by_launches:
            return own
    return static_scope(base, launched, patterns)


def unpaired(cand: StaticResult | None, cand_scope: StaticScope | None, base: SideResults | None,
             launched: set[Launched], patterns: list[str]) -> list[Unpaired]:
    """The judged functions of each revision that the other does not judge, by `match_key` and arch,
    the baseline's chosen by `baseline_scope`: a kernel whose template arguments changed
    (`k<16, 16>` -> `k<16, 4>`) is one of each side. None without both sides' static figures."""
    if cand is None or cand_scope is None or base is None or base.static is None:
        return []
    base_scope = baseline_scope(base.static, base.profile, cand_scope, launched, patterns)

    def keys(functions: list[FunctionResources]) -> set[tuple[str, str]]:
        return {(match_key(f.function), f.arch) for f in functions}

    out: list[Unpaired] = []
    for side, mine, other, other_scope in ((Side.CANDIDATE, cand_scope, base.static, base_scope),
                                           (Side.BASELINE, base_scope, cand, cand_scope)):
        judged, compiled = keys(other_scope.judged), keys(other.functions)
        out += [Unpaired(f, side, key in compiled) for f in mine.judged
                if (key := (match_key(f.function), f.arch)) not in judged]
    return out


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


def _launched(functions: list[FunctionResources], launched: set[Launched]) -> list[FunctionResources]:
    """The functions the launches name, each launch by its most exact name that matches any."""
    forms = (str, canonical_anonymous, match_key)            # most exact first
    indexes = [_index(functions, form) for form in forms]
    ids: set[int] = set()
    for launch in launched:
        names = [form(launch.mangled) for form in forms] if launch.mangled else []
        hits = next((index[name] for index, name in zip(indexes, names) if name in index),
                    indexes[-1].get(launch.key, []))        # else by the demangled name
        ids |= {id(f) for f in hits}
    return [f for f in functions if id(f) in ids]


def _index(functions: list[FunctionResources], form: Callable[[str], str]) -> dict[str, list[FunctionResources]]:
    out: dict[str, list[FunctionResources]] = {}
    for f in functions:
        out.setdefault(form(f.function), []).append(f)
    return out


def _split(functions: list[FunctionResources], judged: list[FunctionResources], basis: str) -> StaticScope:
    ids = {id(f) for f in judged}
    return StaticScope(judged, [f for f in functions if id(f) not in ids], basis)


def _base(key: str) -> str:
    """`ns::k<Cfg<4>>` -> `ns::k`."""
    return key.split("<", 1)[0]
