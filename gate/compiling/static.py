"""Static stage: compile each CUDA source per target arch as the build does (same flags, torch
include paths and defines, same object cache: `objects.py`), read the resource figures from the
`ptxas -v` lines of that compile, and disassemble the object into a SASS opcode histogram per
function. No GPU needed; torch is needed for sources that include its headers.

A compile error is the kernel's fault (`FAILED` with the log); a missing nvcc is the gate's
(`ToolMissingError`), so is a compile stopped by the gate's memory limit (`ERROR`, naming the limit), and so is a missing torch (the stage is `NOT_RUN`, see `run_static`). ptxas lines are read with independent regexes because their fields vary by
CUDA version (12.x prints no "used N barriers"; sm_90a omits cmem) — see NCU-FACTS.md §4.
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
    figures: dict[str, int] = field(default_factory=dict)


def parse_ptxas(log: str) -> list[FunctionResources]:
    """Per entry function and arch: registers, static smem, stack, spill stores/loads.

    "Function properties" blocks of non-entry (device) functions are skipped: their stack lines
    would otherwise be charged to the kernel compiled before them.
    """
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
    return [
        FunctionResources(function=e.function, arch=e.arch,
                          registers=e.figures.get("registers", 0), smem_bytes=e.figures.get("smem_bytes", 0),
                          stack_bytes=e.figures.get("stack_bytes", 0),
                          spill_store_bytes=e.figures.get("spill_store_bytes", 0),
                          spill_load_bytes=e.figures.get("spill_load_bytes", 0))
        for e in entries.values()
    ]


def run_static(kernel: KernelSpec, src_dir: Path, out_dir: Path, nvcc: str = "nvcc",
               cache_dir: Path | None = None, on_compiled: Callable[[str], None] | None = None,
               pool: CompilePool | None = None, facts: Path | None = None) -> StaticResult:
    """Compile every `.cu` source of `kernel` for every manifest arch, in `pool` (shared by both sides
    of a job; default: one of this call's own), with the build's command line into the build's object
    cache (`cache_dir`; default: a private one under `out_dir`), and read the figures from those objects.

    `on_compiled` hears, from this thread, of every object compiled now (not taken from the cache):
    a large extension's first compile runs for minutes, and `gate run` shows each source as it lands.
    `facts`: where torch's saved facts may lie (`toolchain.discover`), for sources that include torch.

    Where torch is not importable, a source that includes torch headers cannot be compiled as the
    build would: it is left to the build, and the stage is NOT_RUN (so the verdict is at most
    incomplete), never FAILED for the gate's own limitation.
    """
    started = time.monotonic()
    nvcc_path = compiler.find_nvcc(nvcc)
    src_dir = Path(src_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = ObjectCache(Path(cache_dir) if cache_dir else out_dir / "objects")
    name = objects.extension_name(kernel, src_dir)
    disassembler = sass.find_disassembler(nvcc_path)
    logs: list[str] = []
    functions: list[FunctionResources] = []
    deferred: list[str] = []
    sass_ok = disassembler is not None
    failure = ""
    gate_limit = ""                                  # a compile the gate's own limit stopped
    tools: tc.Tools | None = None
    no_torch = ""
    jobs: list[tuple[str, str, list[str], str]] = []   # (source, arch, command, key)

    def read(job: tuple[str, str, list[str], str]) -> _Read:
        source_name, arch, command, key = job
        started = time.monotonic()
        future, started_here = pool.submit(key, lambda: objects.compile_object(
            source_name, command, key, src_dir, out_dir, cache, kernel.timeout_s))
        compiled = future.result()
        if not started_here:                       # the other side compiled it: a hit here
            compiled = replace(compiled, hit=True)
        got = _Read(compiled, seconds=time.monotonic() - started)
        if disassembler is not None and compiled.ok and compiled.obj is not None:
            try:
                got.histograms = _histograms(disassembler, compiled.obj, key, cache)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
                got.sass_error = f"disassembler failed on {source_name} ({arch}): {exc}"
        return got

    torch_needed = {s: objects.uses_torch(src_dir / s, src_dir, kernel.nvcc_flags) for s in kernel.cuda_sources}
    reads: dict[int, _Read] = {}
    with contextlib.ExitStack() as stack:
        if pool is None:
            pool = stack.enter_context(CompilePool(max(1, min(len(torch_needed) * len(kernel.arch),
                                                              compile_workers()))))
        readers = stack.enter_context(ThreadPoolExecutor(max_workers=max(1, len(torch_needed) * len(kernel.arch)),
                                                         thread_name_prefix="static-read"))
        futures: dict[Future, int] = {}

        def add(source_name: str) -> None:
            for arch in kernel.arch:
                command, key = objects.cu_job(src_dir / source_name, source_name, src_dir, [arch], name,
                                              kernel.nvcc_flags, nvcc_path, tools)
                jobs.append((source_name, arch, command, key))
                futures[readers.submit(read, jobs[-1])] = len(jobs) - 1

        # Sources without torch headers first: they compile while torch is imported for the rest.
        for source_name in [s for s, needs in torch_needed.items() if not needs]:
            add(source_name)
        if with_torch := [s for s, needs in torch_needed.items() if needs]:
            try:
                tools = tc.discover(nvcc_path, facts)
            except ToolMissingError as exc:   # torch (or the host compiler) missing: left to the build
                no_torch = str(exc)
                deferred.extend(with_torch)
            else:
                for source_name in with_torch:
                    add(source_name)
        for future in as_completed(futures):       # in the order they finish: progress as it lands
            i = futures[future]
            got = reads[i] = future.result()
            if on_compiled is not None and not got.compiled.hit:
                outcome = "compiled" if got.compiled.ok else "compile error"
                on_compiled(f"{jobs[i][0]} for {jobs[i][1]}: {outcome} in {got.seconds:.0f} s "
                            f"({len(reads)} of {len(jobs)})")
    for i, (source_name, arch, command, _) in enumerate(jobs):
        compiled, histograms, sass_error = reads[i].compiled, reads[i].histograms, reads[i].sass_error
        cached = (" (object cache hit)" if compiled.ok else " (cached compile failure)") if compiled.hit else ""
        logs.append(f"$ {' '.join([*command, '-c', source_name])}" + cached)
        logs.append(compiled.log)
        if not compiled.ok and tools and (missing := _missing_under_torch(compiled.log, tools.torch.includes)):
            if source_name not in deferred:   # e.g. c10/cuda headers in a CPU-only torch
                deferred.append(source_name)
            no_torch = (f"torch's headers include {missing}, which is not installed (a CPU-only torch, or a CUDA "
                        "toolkit without its library headers)")
            continue
        if not compiled.ok and compiled.limit:
            gate_limit = gate_limit or f"{source_name} ({arch}): {compiled.limit}"
            continue
        if not compiled.ok:
            failure = failure or f"compile error ({arch}): {_first_error(compiled.log, src_dir)}"
            continue
        found = parse_ptxas(compiled.log)
        if sass_error:
            logs.append(sass_error)
            sass_ok = False
        elif histograms is not None:
            for fn in found:
                fn.sass_opcodes = histograms.get(fn.function, {})
        functions.extend(found)
    log = "\n".join(logs)
    (out_dir / LOG_NAME).write_text(log, encoding="utf-8")
    elapsed = time.monotonic() - started
    if failure:
        return StaticResult(StageStatus.FAILED, reason=failure, duration_s=elapsed, functions=functions,
                            sass_available=sass_ok, log=log)
    if gate_limit:
        return StaticResult(StageStatus.ERROR, reason=gate_limit, duration_s=elapsed, functions=functions,
                            sass_available=sass_ok, log=log)
    if not sass_ok:
        functions = [_without_sass(fn) for fn in functions]
    if deferred:
        reason = (f"figures come from the build: {', '.join(deferred)} include(s) torch headers, and "
                  f"{no_torch.split(':')[0]} here (README: torch on a CPU machine)")
        return StaticResult(StageStatus.NOT_RUN, reason=reason, duration_s=elapsed, functions=functions,
                            sass_available=sass_ok, log=log)
    names = len({fn.function for fn in functions})
    reason = (f"{names} function(s) x {len(kernel.arch)} arch(s)"
              + (f", SASS via {disassembler.name}" if sass_ok else "; no SASS disassembler found"))
    return StaticResult(StageStatus.PASSED, reason=reason, duration_s=elapsed, functions=functions,
                        sass_available=sass_ok, log=log)


def _histograms(disassembler: Path, obj: Path, key: str, cache: ObjectCache) -> dict[str, dict[str, int]]:
    """The object's SASS histograms: from the cache when this disassembler and parser stored them for
    its key (equal keys, equal bytes), else disassembled now and stored."""
    stamp = f"{disassembler.name} format {sass.FORMAT}"
    if (stored := cache.sass(key, stamp)) is not None:
        return stored
    histograms = sass.disassemble(disassembler, obj)
    cache.put_sass(key, stamp, histograms)
    return histograms


def _without_sass(fn: FunctionResources) -> FunctionResources:
    fn.sass_opcodes = {}
    return fn


def _missing_under_torch(log: str, torch_includes: tuple[str, ...]) -> str:
    """The header that stopped the compile when a file *inside torch's include tree* included it
    ('' otherwise): the install's gap, not the kernel's error. It may be torch's own (c10's
    `cuda_cmake_macros.h` in a CPU-only build) or a CUDA library's (`cusparse.h`, which ATen's
    `CUDAContextLight.h` includes and a minimal toolkit lacks)."""
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
