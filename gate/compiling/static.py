"""Static stage: compile each CUDA source per target arch as the build does (`objects.py`: same command
line, same object cache), read the resource figures from its `ptxas -v` lines, and disassemble the
object into a SASS opcode histogram per function. No GPU needed.

A compile error is the kernel's fault (`FAILED`); a missing nvcc (`ToolMissingError`), a compile the
machine stopped (`ERROR`) and a missing torch (`NOT_RUN`) are the gate's. ptxas lines are read with
independent regexes because their fields vary by CUDA version (12.x prints no "used N barriers";
sm_90a omits cmem) — see NCU-FACTS.md §4.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

from gate.compiling import objects
from gate.compiling import toolchain as tc
from gate.compiling.build_cache import ObjectCache
from gate.compiling.compile_pool import CompilePool, compile_workers
from gate.domain.manifest import KernelSpec
from gate.domain.results import FunctionResources, StageStatus, StaticResult
from gate.errors import ToolMissingError
from gate.nvidia import compiler, sass

LOG_NAME = "ptxas.log"

_ENTRY = re.compile(r"Compiling entry function '(\S+)' for '(sm_\w+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_REGISTERS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_STACK = re.compile(r"(\d+) bytes stack frame")
_SPILL_STORES = re.compile(r"(\d+) bytes spill stores")
_SPILL_LOADS = re.compile(r"(\d+) bytes spill loads")
# gcc/nvcc: "/path/CUDAMacros.h:9:10: fatal error: c10/cuda/impl/x.h: No such file or directory"
_MISSING_HEADER = re.compile(r"^(\S+?):\d+:\d+: fatal error: (\S+): No such file or directory", re.MULTILINE)


@dataclass
class _Read:
    """One object of the static stage: compiled (or from the cache), and its SASS histograms."""
    compiled: objects.CompiledObject
    seconds: float
    histograms: dict[str, dict[str, int]] | None = None
    sass_error: str = ""


@dataclass
class _Entry:
    function: str
    arch: str
    figures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("registers", "smem_bytes", "stack_bytes", "spill_store_bytes", "spill_load_bytes"), 0))


def parse_ptxas(log: str) -> list[FunctionResources]:
    """Per entry function and arch: registers, static smem, stack, spill stores/loads. Device functions'
    "Function properties" are skipped: their stack lines would be charged to the kernel before them."""
    entries: dict[tuple[str, str], _Entry] = {}
    current: _Entry | None = None      # the entry whose "Used N registers" line comes next
    properties: _Entry | None = None   # the entry whose stack/spill line comes next
    for line in log.splitlines():
        if match := _ENTRY.search(line):
            key = (match.group(1), match.group(2))
            current = entries.setdefault(key, _Entry(*key))
            properties = None
            continue
        if match := _PROPERTIES.search(line):
            properties = current if current and current.function == match.group(1) else None
            continue
        targets = {"stack_bytes": (_STACK, properties), "spill_store_bytes": (_SPILL_STORES, properties),
                   "spill_load_bytes": (_SPILL_LOADS, properties), "registers": (_REGISTERS, current),
                   "smem_bytes": (_SMEM, current)}
        for name, (pattern, entry) in targets.items():
            if entry is not None and (match := pattern.search(line)):
                entry.figures[name] = int(match.group(1))
    return [FunctionResources(function=e.function, arch=e.arch, **e.figures) for e in entries.values()]


def run_static(kernel: KernelSpec, src_dir: Path, out_dir: Path, nvcc: str = "nvcc",
               cache_dir: Path | None = None, on_compiled: Callable[[str], None] | None = None,
               pool: CompilePool | None = None, facts: Path | None = None) -> StaticResult:
    """Compile every `.cu` source of `kernel` for every manifest arch in `pool` (shared by both sides of
    a job) into the build's object cache (`cache_dir`; default: under `out_dir`), and read the figures.
    `on_compiled` hears of every object compiled now: a large extension's first compile runs for
    minutes. `facts`: torch's saved facts (`toolchain.discover`). Where torch is not importable, a
    source that includes its headers is left to the build and the stage is NOT_RUN, never FAILED
    for the gate's own limitation."""
    started = time.monotonic()
    nvcc_path = compiler.find_nvcc(nvcc)
    src_dir = Path(src_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = ObjectCache(Path(cache_dir) if cache_dir else out_dir / "objects")
    name = objects.extension_name(kernel, src_dir)
    disassembler = sass.find_disassembler(nvcc_path)
    torch_needed = {s: objects.uses_torch(src_dir / s, src_dir, kernel.nvcc_flags) for s in kernel.cuda_sources}
    with contextlib.ExitStack() as stack:
        if pool is None:
            pool = stack.enter_context(CompilePool(max(1, min(len(torch_needed) * len(kernel.arch),
                                                              compile_workers()))))
        setting = _Setting(kernel, src_dir, out_dir, cache, name, nvcc_path, disassembler, pool)
        compiled = _compile_all(setting, torch_needed, facts, on_compiled)
    tally = _tally(setting, compiled)
    log = "\n".join(tally.logs)
    (out_dir / LOG_NAME).write_text(log, encoding="utf-8")
    return _result(kernel, tally, log, time.monotonic() - started, disassembler)


@dataclass(frozen=True)
class _Setting:
    """What every compile of one static stage shares."""
    kernel: KernelSpec
    src_dir: Path
    out_dir: Path
    cache: ObjectCache
    name: str                              # the extension's import name (`TORCH_EXTENSION_NAME`)
    nvcc: str
    disassembler: Path | None
    pool: CompilePool


@dataclass(frozen=True)
class _Job:
    source: str
    arch: str
    command: list[str]
    key: str


@dataclass
class _Compiled:
    """Every object of the stage, compiled or taken from the cache, in the order they were asked for."""
    jobs: list[_Job] = field(default_factory=list)
    reads: dict[int, _Read] = field(default_factory=dict)      # by the job's index, as they finish
    tools: tc.Tools | None = None          # torch's compilers, once a source that includes torch asked
    deferred: list[str] = field(default_factory=list)           # sources left to the build
    no_torch: str = ""                     # why those are left to it


@dataclass
class _Tally:
    """The stage's log and figures, and what decides its status."""
    deferred: list[str]
    no_torch: str
    sass_ok: bool
    logs: list[str] = field(default_factory=list)
    functions: list[FunctionResources] = field(default_factory=list)
    failure: str = ""                      # the first compile error: the kernel's fault
    gate_limit: str = ""                   # a compile the gate's own limit stopped


def _compile_all(setting: _Setting, torch_needed: dict[str, bool], facts: Path | None,
                 on_compiled: Callable[[str], None] | None) -> _Compiled:
    """Every source for every arch, read as it lands; those without torch headers first (they compile
    while torch is imported for the rest)."""
    kernel, done = setting.kernel, _Compiled()
    with ThreadPoolExecutor(max_workers=max(1, len(torch_needed) * len(kernel.arch)),
                            thread_name_prefix="static-read") as readers:
        futures: dict[Future, int] = {}

        def add(source_name: str) -> None:
            for arch in kernel.arch:
                command, key = objects.cu_job(setting.src_dir / source_name, source_name, setting.src_dir, [arch],
                                              setting.name, kernel.nvcc_flags, setting.nvcc, done.tools)
                done.jobs.append(_Job(source_name, arch, command, key))
                futures[readers.submit(_read, setting, done.jobs[-1])] = len(done.jobs) - 1

        for source_name in [s for s, needs in torch_needed.items() if not needs]:
            add(source_name)
        if with_torch := [s for s, needs in torch_needed.items() if needs]:
            try:
                done.tools = tc.discover(setting.nvcc, facts)
            except ToolMissingError as exc:   # torch (or the host compiler) missing: left to the build
                done.no_torch = str(exc)
                done.deferred.extend(with_torch)
            else:
                for source_name in with_torch:
                    add(source_name)
        for future in as_completed(futures):       # in the order they finish: progress as it lands
            i = futures[future]
            got = done.reads[i] = future.result()
            if on_compiled is not None and not got.compiled.hit:
                on_compiled(f"{done.jobs[i].source} for {done.jobs[i].arch}: {_outcome(got.compiled, done.tools)} "
                            f"in {got.seconds:.0f} s ({len(done.reads)} of {len(done.jobs)})")
    return done


def _outcome(compiled: objects.CompiledObject, tools: tc.Tools | None) -> str:
    """A compile's progress word: a toolchain's missing header or the gate's limit is no compile error."""
    if compiled.ok:
        return "compiled"
    if tools is not None and (missing := _missing_under_torch(compiled.log, tools.torch.includes)):
        return f"not compiled here: torch's headers include {missing}, which is not installed"
    return "not compiled (the machine's fault)" if compiled.limit else "compile error"


def _read(setting: _Setting, job: _Job) -> _Read:
    """One object, compiled in the pool (joined: a hit here), and its SASS histograms."""
    started = time.monotonic()
    future, started_here = setting.pool.submit(job.key, lambda: objects.compile_object(
        job.source, job.command, job.key, setting.src_dir, setting.out_dir, setting.cache,
        setting.kernel.timeout_s))
    compiled = future.result()
    if not started_here:
        compiled = replace(compiled, hit=True)
    got = _Read(compiled, seconds=time.monotonic() - started)
    if setting.disassembler is not None and compiled.ok and compiled.obj is not None:
        try:
            got.histograms = _histograms(setting.disassembler, compiled.obj, job.key, setting.cache)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            got.sass_error = f"disassembler failed on {job.source} ({job.arch}): {exc}"
    return got


def _tally(setting: _Setting, done: _Compiled) -> _Tally:
    """The log of every compile in the order asked, and each object's figures, or why it has none."""
    tally = _Tally(deferred=done.deferred, no_torch=done.no_torch, sass_ok=setting.disassembler is not None)
    for i, job in enumerate(done.jobs):
        read = done.reads[i]
        compiled = read.compiled
        cached = (" (object cache hit)" if compiled.ok else " (cached compile failure)") if compiled.hit else ""
        tally.logs += [f"$ {' '.join([*job.command, '-c', job.source])}" + cached, compiled.log]
        if not compiled.ok and done.tools and (missing := _missing_under_torch(compiled.log,
                                                                                done.tools.torch.includes)):
            if job.source not in tally.deferred:   # e.g. c10/cuda headers in a CPU-only torch
                tally.deferred.append(job.source)
            tally.no_torch = (f"torch's headers include {missing}, which is not installed (a CPU-only torch, or a "
                              "CUDA toolkit without its library headers)")
        elif not compiled.ok and compiled.limit:
            tally.gate_limit = tally.gate_limit or f"{job.source} ({job.arch}): {compiled.limit}"
        elif not compiled.ok:
            first = _first_error(compiled.log, setting.src_dir)
            tally.failure = tally.failure or f"compile error ({job.arch}): {first}"
        else:
            tally.functions.extend(_figures(compiled.log, read, tally))
    return tally


def _figures(log: str, read: _Read, tally: _Tally) -> list[FunctionResources]:
    """One object's functions from its ptxas lines, with their SASS histograms where it was read."""
    found = parse_ptxas(log)
    if read.sass_error:
        tally.logs.append(read.sass_error)
        tally.sass_ok = False
    elif read.histograms is not None:
        for fn in found:
            fn.sass_opcodes = read.histograms.get(fn.function, {})
    return found


def _result(kernel: KernelSpec, tally: _Tally, log: str, elapsed: float, disassembler: Path | None) -> StaticResult:
    """The stage's status and reason: FAILED, ERROR (the gate's limit), NOT_RUN (left to the build)."""
    def result(status: StageStatus, reason: str, functions: list[FunctionResources]) -> StaticResult:
        return StaticResult(status, reason=reason, duration_s=elapsed, functions=functions,
                            sass_available=tally.sass_ok, log=log, flags=kernel.flags)

    if tally.failure:
        return result(StageStatus.FAILED, tally.failure, tally.functions)
    if tally.gate_limit:
        return result(StageStatus.ERROR, tally.gate_limit, tally.functions)
    functions = tally.functions if tally.sass_ok else [replace(fn, sass_opcodes={}) for fn in tally.functions]
    if tally.deferred:
        reason = (f"figures come from the build: {', '.join(tally.deferred)} include(s) torch headers, and "
                  f"{tally.no_torch.split(':')[0]} here (README: torch on a CPU machine)")
        return result(StageStatus.NOT_RUN, reason, functions)
    names = len({fn.function for fn in functions})
    reason = (f"{names} function(s) x {len(kernel.arch)} arch(s)"
              + (f", SASS via {disassembler.name}" if tally.sass_ok and disassembler
                 else "; no SASS disassembler found"))
    return result(StageStatus.PASSED, reason, functions)


def _histograms(disassembler: Path, obj: Path, key: str, cache: ObjectCache) -> dict[str, dict[str, int]]:
    """The object's SASS histograms, from the cache when stored for its key and stamp, else made now."""
    stamp = f"{disassembler.name} format {sass.FORMAT}"
    if (stored := cache.sass(key, stamp)) is not None:
        return stored
    histograms = sass.disassemble(disassembler, obj)
    cache.put_sass(key, stamp, histograms)
    return histograms


def _missing_under_torch(log: str, torch_includes: tuple[str, ...]) -> str:
    """The header that stopped the compile when a file *inside torch's include tree* included it ('' if
    not): the install's gap (c10's `cuda_cmake_macros.h` in a CPU torch, `cusparse.h` in a minimal
    toolkit), not the kernel's error."""
    match = _MISSING_HEADER.search(log)
    if match and any(match.group(1).startswith(f"{root.rstrip('/')}/") for root in torch_includes):
        return match.group(2)
    return ""


def _first_error(stderr: str, src_dir: Path) -> str:
    """The first line nvcc marks as an error, for the one-line reason (the whole log is kept)."""
    stderr = stderr.replace(f"{src_dir}/", "")
    for line in stderr.splitlines():
        if "error" in line.lower():
            return line.strip()[:200]
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines[0].strip()[:200] if lines else "nvcc exited with an error"
