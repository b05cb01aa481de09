"""Build stage: compile a kernel's sources as a PyTorch C++/CUDA extension, through an object cache.

Each source is compiled on its own (`objects.compile_object`, shared with the static stage) into the
object cache; the `.so` is linked from those. A revision that changes one `.cu` recompiles it alone:
the binding's object (torch's headers, ~10 s) is a hit.
Why not ccache: the gate must *report* hits per object, which ccache gives only as global counters
that concurrent jobs disturb, and the key here is explicit, tested and relative to the checkout.
A compile or link error, or a compile past the kernel's timeout, is `FAILED` with the log; one the
machine ended (`ToolRun.fault`) is `ERROR`; a missing compiler or torch raises `ToolMissingError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import struct
import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from gate.compiling import objects
from gate.compiling import toolchain as tc
from gate.compiling import torch_pch
from gate.compiling.build_cache import ObjectCache
from gate.compiling.compile_pool import CompilePool
from gate.domain import BuildResult, KernelSpec, StageStatus
from gate.errors import ManifestError, ToolMissingError
from gate.manifest import module_name
from gate.nvidia import compiler

# Sources, or headers they include, that register torch ops (`module_name.registering_file`).
registers_torch_ops = module_name.registers_torch_ops
# Symbols torch/library.h's registration macros define (static `TORCH_LIBRARY_init_<ns>`,
# `TORCH_LIBRARY_FRAGMENT_init_<ns>_<uid>`, `TORCH_LIBRARY_IMPL_init_<ns>_<key>_<uid>`, and the
# `TORCH_LIBRARY_static_init_...` objects that run them at load): local symbols, kept in `.symtab`
# however the registration was spelt (a macro, a header, a library of the repository's own).
_REGISTRATION_SYMBOL = re.compile(rb"TORCH_LIBRARY(?:_FRAGMENT|_IMPL)?_(?:static_)?init_")


def module_registers_ops(module_path: str | Path) -> bool:
    """Whether the built extension registers torch ops, from its ELF symbol names before it is loaded."""
    try:
        strtab = elf_section(Path(module_path).read_bytes(), b".strtab")
    except (OSError, ValueError, struct.error):
        return False
    return bool(_REGISTRATION_SYMBOL.search(strtab))


def elf_section(data: bytes, name: bytes) -> bytes:
    """The section `name` of a 64-bit little-endian ELF file (b"" when none; `ValueError` for no such
    file). Offsets: System V ABI, "Sections" (e_shoff at 0x28, e_shentsize..e_shstrndx at 0x3a)."""
    if data[:6] != b"\x7fELF\x02\x01":
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * entsize) for i in range(count)]
    names = headers[names_index]
    for name_at, _type, _flags, _addr, offset, size in headers:
        end = data.index(b"\0", names[4] + name_at)
        if data[names[4] + name_at:end] == name:
            return data[offset:offset + size]
    return b""


def compile_jobs(kernel: KernelSpec, src_dir: Path, tools: tc.Tools,
                 archs: list[str] | None) -> list[tuple[str, list[str], str]]:
    """(source, command, key) of every object: `.cu` for `archs` (None: host sources only), `.cpp`."""
    name = objects.extension_name(kernel, src_dir)
    jobs = []
    for rel in kernel.sources:
        path = (src_dir / rel).resolve()
        if not path.is_relative_to(src_dir):
            raise ManifestError(f"source {rel!r} leaves the repository", key="sources")
        if not path.is_file():
            raise ManifestError(f"source {rel!r} does not exist", key="sources")
        if path.suffix == ".cu" and archs is not None:
            jobs.append((rel, *objects.cu_job(path, rel, src_dir, archs, name, kernel.nvcc_flags, tools.nvcc, tools)))
        elif path.suffix != ".cu":
            command = tools.cxx_command(name, kernel.cxx_flags)
            jobs.append((rel, command, objects.key_of(path, rel, command, tools.versions, src_dir)))
    return jobs


def prefetch(kernel: KernelSpec, src_dir: Path, cache_dir: Path, out_dir: Path, pool: CompilePool, *,
             nvcc: str = "nvcc", pch_dir: Path | None = None) -> None:
    """Start compiling the build's host sources (the slow `.cpp` binding) in `pool` now; the build joins
    those compiles. A manifest the build will reject is left to the build."""
    src_dir = Path(src_dir).resolve()
    try:
        tools = tc.discover(nvcc, pch_dir)      # torch's saved facts lie beside its headers
        jobs = compile_jobs(kernel, src_dir, tools, None)
    except (ManifestError, ToolMissingError):
        return
    cache = ObjectCache(Path(cache_dir))
    pch = _precompiled(pch_dir, tools)
    for rel, command, key in jobs:
        pool.submit(key, lambda rel=rel, command=command, key=key: objects.compile_object(
            rel, command, key, src_dir, out_dir, cache, kernel.timeout_s, pch), for_the_build=True)


def _precompiled(pch_dir: Path | None, tools: tc.Tools) -> torch_pch.Precompiled | None:
    """The precompiled torch headers a host compile may use (`torch_pch`); None: compile without."""
    return torch_pch.Precompiled(Path(pch_dir).resolve(), tools.versions) if pch_dir else None


def build_extension(kernel: KernelSpec, src_dir: Path, cache_dir: Path, out_dir: Path, *,
                    nvcc: str = "nvcc", pool: CompilePool | None = None, pch_dir: Path | None = None) -> BuildResult:
    """Compile `kernel.sources` and link `out_dir/<name>.so`, in the job's `pool` when given (shared
    with the static stage and `prefetch`); `pch_dir`: precompiled torch headers for its host sources."""
    start = time.perf_counter()
    src_dir, out_dir = Path(src_dir).resolve(), Path(out_dir)
    tools = tc.discover(nvcc, pch_dir)
    name = objects.extension_name(kernel, src_dir)
    cache = ObjectCache(Path(cache_dir))
    out_dir.mkdir(parents=True, exist_ok=True)   # the link writes here even when every object is a hit
    archs = tc.target_archs(kernel.arch)
    jobs = compile_jobs(kernel, src_dir, tools, archs)
    pch = _precompiled(pch_dir, tools)

    def compile_one(job: tuple[str, list[str], str]) -> objects.CompiledObject:
        host = not job[0].endswith(".cu")
        return objects.compile_object(*job, src_dir, out_dir, cache, kernel.timeout_s, pch if host else None)

    with contextlib.ExitStack() as stack:
        if pool is None:
            pool = stack.enter_context(CompilePool(max(1, min(len(jobs), os.cpu_count() or 1))))
        flights = [(job[2], *pool.submit(job[2], lambda job=job: compile_one(job))) for job in jobs]
        results = [replace(future.result(), hit=True) if pool.made_elsewhere(key, started_here) else future.result()
                   for key, future, started_here in flights]

    log = "\n".join(f"== {r.source} ({_provenance(r)})\n{r.log}".rstrip() for r in results)
    hits = sum(r.hit for r in results)
    misses = len(results) - hits
    failed = [r.source for r in results if not r.ok]
    if failed and all(r.limit for r in results if not r.ok):
        return BuildResult(StageStatus.ERROR, f"{failed[0]}: {next(r.limit for r in results if not r.ok)}",
                           time.perf_counter() - start, hits, misses, "", log)
    if failed:
        return BuildResult(StageStatus.FAILED, f"compile error in {', '.join(failed)}",
                           time.perf_counter() - start, hits, misses, "", log)

    so_path = out_dir / f"{name}.so"
    object_paths = [str(r.obj) for r in results if r.obj is not None]
    link = compiler.run_tool(tools.link_command(object_paths, str(so_path)), cwd=src_dir,
                             timeout_s=kernel.timeout_s)
    log += f"\n== link\n{link.output}".rstrip()
    if not link.ok:
        status, reason = (StageStatus.ERROR, f"link: {link.limit}") if link.fault else (StageStatus.FAILED,
                                                                                       "link error")
        return BuildResult(status, reason, time.perf_counter() - start, hits, misses, "", log)
    return BuildResult(StageStatus.PASSED, f"built for {','.join(archs)}: {hits} cached, {misses} compiled",
                       time.perf_counter() - start, hits, misses, str(so_path), log)


def _provenance(compiled: objects.CompiledObject) -> str:
    if not compiled.hit:
        return f"compiled, {compiled.pch}" if compiled.pch else "compiled"
    return "cache hit" if compiled.ok else "cached compile failure"


_LOADED: dict[str, ModuleType] = {}


def load_module(path: str | Path) -> ModuleType:
    """Import a built extension from its `.so` path (once per path and process).

    Two revisions of one kernel share the module name, and pybind11 (3.x) caches modules by import
    name: the baseline would silently get the candidate's module. So each file is imported as
    `gate_build_<hash>.<stem>` (CPython takes `PyInit_<stem>` from the last component), out of
    `sys.modules`."""
    path = str(Path(path).resolve())
    if path not in _LOADED:
        import torch  # noqa: F401  (loads libtorch, which the extension links against)

        unique = hashlib.sha256(path.encode()).hexdigest()[:16]
        spec = importlib.util.spec_from_file_location(f"gate_build_{unique}.{Path(path).stem}", path)
        if not path.endswith(".so") or spec is None or spec.loader is None:
            raise ImportError(f"cannot load extension {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADED[path] = module
    return _LOADED[path]
