"""Static stage: compile each CUDA source per target arch with `ptxas -v`, read its resource figures,
and disassemble the cubin into a SASS opcode histogram per function. No GPU needed.

A compile error is the kernel's fault (`FAILED` with the log); a missing nvcc is the gate's
(`ToolMissingError`). ptxas lines are read with independent regexes because their fields vary by
CUDA version (12.x prints no "used N barriers"; sm_90a omits cmem) — see NCU-FACTS.md §4.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from gate.domain.manifest import KernelSpec
from gate.domain.results import FunctionResources, StageStatus, StaticResult
from gate.errors import ToolMissingError
from gate.pipeline import box, sass

COMPILE_TIMEOUT_S = 600.0
LOG_NAME = "ptxas.log"

_ENTRY = re.compile(r"Compiling entry function '(\S+)' for '(sm_\w+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_REGISTERS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_STACK = re.compile(r"(\d+) bytes stack frame")
_SPILL_STORES = re.compile(r"(\d+) bytes spill stores")
_SPILL_LOADS = re.compile(r"(\d+) bytes spill loads")


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


def gencode(arch: str) -> str:
    """`sm_90a` -> `arch=compute_90a,code=sm_90a` (arch-specific features need the `a` virtual arch)."""
    number = arch.removeprefix("sm_")
    return f"arch=compute_{number},code=sm_{number}"


def _find_nvcc(nvcc: str) -> str:
    found = shutil.which(nvcc)
    if found is None:
        raise ToolMissingError(f"nvcc not found ({nvcc!r}); set GATE_NVCC_PATH or put nvcc on PATH")
    return found


def compile_command(nvcc: str, source: Path, src_dir: Path, arch: str, cubin: Path) -> list[str]:
    return [nvcc, "-cubin", "-gencode", gencode(arch), "-std=c++17", "-O3", "-lineinfo",
            "-Xptxas", "-v", "-I", str(src_dir), "-I", str(source.parent), "-o", str(cubin), str(source)]


def run_static(kernel: KernelSpec, src_dir: Path, out_dir: Path, nvcc: str = "nvcc") -> StaticResult:
    """Compile every `.cu` source of `kernel` for every manifest arch, in sequence (cores are shared)."""
    started = time.monotonic()
    nvcc_path = _find_nvcc(nvcc)
    out_dir.mkdir(parents=True, exist_ok=True)
    disassembler = sass.find_disassembler(nvcc_path)
    logs: list[str] = []
    functions: list[FunctionResources] = []
    sass_ok = disassembler is not None
    failure = ""
    for source_name in kernel.cuda_sources:
        source = src_dir / source_name
        for arch in kernel.arch:
            cubin = out_dir / f"{Path(source_name).stem}.{arch}.cubin"
            cmd = compile_command(nvcc_path, source, src_dir, arch, cubin)
            logs.append(f"$ {' '.join(cmd)}")
            try:
                proc = box.run(box.for_compile(cmd, src_dir), cmd, cwd=src_dir, timeout_s=COMPILE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                failure = f"nvcc timed out after {COMPILE_TIMEOUT_S:.0f} s on {source_name} ({arch})"
                break
            logs.append(proc.stdout + proc.stderr)
            if proc.returncode != 0:
                failure = f"compile error ({arch}): {_first_error(proc.stderr, src_dir)}"
                break
            found = parse_ptxas(proc.stdout + proc.stderr)
            if sass_ok:
                try:
                    histograms = sass.disassemble(disassembler, cubin)
                except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
                    logs.append(f"disassembler failed on {cubin.name}: {exc}")
                    sass_ok = False
                else:
                    for fn in found:
                        fn.sass_opcodes = histograms.get(fn.function, {})
            functions.extend(found)
        if failure:
            break
    log = "\n".join(logs)
    (out_dir / LOG_NAME).write_text(log, encoding="utf-8")
    elapsed = time.monotonic() - started
    if failure:
        return StaticResult(StageStatus.FAILED, reason=failure, duration_s=elapsed, functions=functions,
                            sass_available=sass_ok, log=log)
    if not sass_ok:
        functions = [_without_sass(fn) for fn in functions]
    names = len({fn.function for fn in functions})
    reason = (f"{names} function(s) x {len(kernel.arch)} arch(s)"
              + (f", SASS via {disassembler.name}" if sass_ok else "; no SASS disassembler found"))
    return StaticResult(StageStatus.PASSED, reason=reason, duration_s=elapsed, functions=functions,
                        sass_available=sass_ok, log=log)


def _without_sass(fn: FunctionResources) -> FunctionResources:
    fn.sass_opcodes = {}
    return fn


def _first_error(stderr: str, src_dir: Path) -> str:
    """The first line nvcc marks as an error, for the one-line reason (the whole log is kept)."""
    stderr = stderr.replace(f"{src_dir}/", "")
    for line in stderr.splitlines():
        if "error" in line.lower():
            return line.strip()[:200]
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines[0].strip()[:200] if lines else "nvcc exited with an error"
