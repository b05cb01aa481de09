"""One source into one cached object: the compile step the static and build stages share, with one
command line and one key, so the static stage's figures describe the very object the build links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gate.compiling import toolchain as tc
from gate.compiling import torch_pch
from gate.compiling.build_cache import ObjectCache, Toolchain, local_includes, object_key
from gate.manifest import compile_flags, module_name
from gate.nvidia import compiler

# Headers only a torch install provides: a source that reaches one through its includes needs the
# torch flags (and cannot compile where torch is not importable).
_TORCH_HEADER = re.compile(rb'^\s*#\s*include\s*[<"](torch/|ATen/|c10/|pybind11/)', re.MULTILINE)


@dataclass
class CompiledObject:
    source: str                   # path relative to the checkout
    ok: bool
    hit: bool                     # taken from the cache, not compiled now
    obj: Path | None
    log: str                      # compiler output: ptxas -v lines for a .cu
    limit: str = ""               # the machine's limit that stopped it (`compiler.ToolRun.limit`), not the source
    pch: str = ""                 # a precompiled torch header offered to this compile, or why not (`torch_pch`)


# The extension's import name: the manifest's `module`, the sources' `PyInit_<name>`, or derived.
extension_name = module_name.extension_name


def repo_include_dirs(flags: list[str], root: Path) -> list[Path]:
    """The root and every relative `-I` directory of `flags`: where an object's includes are looked up."""
    dirs = [d for d in map(compile_flags.include_dir, flags) if d is not None and not Path(d).is_absolute()]
    return list(dict.fromkeys([root, *(root / d for d in dirs)]))


def uses_torch(path: Path, root: Path, flags: list[str] | None = None) -> bool:
    """Whether `path`, or a local header it includes, includes a torch/ATen/c10/pybind11 header."""
    found = local_includes(path, repo_include_dirs(flags or [], root), root)
    return any(_TORCH_HEADER.search(p.read_bytes()) for p in [path, *found])


def key_of(path: Path, rel: str, command: list[str], versions: Toolchain, src_dir: Path) -> str:
    """The cache key of `rel` compiled by `command` (both stages must agree on it)."""
    return object_key(path, [*portable(command, src_dir), rel], versions, repo_include_dirs(command, src_dir),
                      src_dir)


# An absolute path, alone or after a flag that takes one (`-I/x/torch/include`, `-isystem`, `-L`).
_ABSOLUTE = re.compile(r"^(-I|-isystem|-L)?(/.*)$")


def portable(command: list[str], src_dir: Path) -> list[str]:
    """`command` as an object's key reads it: each absolute path outside the checkout by its last two
    parts, `.../torch/include`. What they hold is keyed by the toolchain's versions, and the paths
    moved between runs of one unchanged side (another venv, another link), so an object was compiled
    again (issue 43)."""
    out = []
    for arg in command:
        match = _ABSOLUTE.match(arg)
        if match is None or Path(match.group(2)).is_relative_to(src_dir):
            out.append(arg)
            continue
        out.append((match.group(1) or "") + ".../" + "/".join(Path(match.group(2)).parts[-2:]))
    return out


def cu_job(path: Path, rel: str, src_dir: Path, archs: list[str], name: str, flags: list[str], nvcc: str,
           tools: tc.Tools | None) -> tuple[list[str], str]:
    """The command line and cache key of one `.cu` for `archs`. A source that includes no torch header
    is compiled and keyed without torch (needs no `tools`), so it compiles while the child still
    imports torch, and where torch is missing."""
    if not uses_torch(path, src_dir, flags):
        command = tc.plain_nvcc_command(nvcc, archs, flags)
        return command, key_of(path, rel, command, tc.nvcc_versions(nvcc), src_dir)
    if tools is None:
        raise ValueError(f"{rel} includes torch headers: its command needs torch's flags")
    command = tools.nvcc_command(archs, name, True, flags)
    return command, key_of(path, rel, command, tools.versions, src_dir)


def compile_object(rel: str, command: list[str], key: str, src_dir: Path, out_dir: Path, cache: ObjectCache,
                   timeout_s: float, pch: torch_pch.Precompiled | None = None) -> CompiledObject:
    """`command -c rel` in `src_dir`, or the cached object (or failure) of `key`, with its log. `pch`:
    precompiled torch headers it may use (the key and the object are the same either way)."""
    cached = cache.get(key)
    if cached is not None:
        return CompiledObject(rel, True, True, cached, cache.log(key))
    if (failed_log := cache.failure(key)) is not None:
        return CompiledObject(rel, False, True, None, failed_log)
    tmp_obj = out_dir / "obj" / f"{key}.o"
    tmp_obj.parent.mkdir(parents=True, exist_ok=True)
    offered = pch.offer(command, src_dir / rel, src_dir) if pch is not None else torch_pch.Offer(command)
    # Relative source path and cwd = checkout: no absolute checkout path ends up in the object.
    run = compiler.run_tool([*offered.command, "-c", rel, "-o", str(tmp_obj)], cwd=src_dir, timeout_s=timeout_s)
    if not run.ok and offered.command != command and not (run.timed_out or run.fault):
        # A failure is stored and judged as the source's: it must not rest on the precompiled header.
        run = compiler.run_tool([*command, "-c", rel, "-o", str(tmp_obj)], cwd=src_dir, timeout_s=timeout_s)
        offered = torch_pch.Offer(command, f"{offered.note}; the compile failed, and failed again without it"
                                  if not run.ok else f"{offered.note}; the compile failed with it, not without")
    if not run.ok:
        if not (run.timed_out or run.fault):   # only a diagnostic about the source is a fact about it
            cache.put_failure(key, run.output)
        return CompiledObject(rel, False, False, None, run.output, limit=run.limit, pch=offered.note)
    return CompiledObject(rel, True, False, cache.put(key, tmp_obj, run.output), run.output, pch=offered.note)
