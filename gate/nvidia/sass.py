"""SASS opcode histograms of a cubin, per kernel function, through cuobjdump (or nvdisasm).

The disassembler is looked up next to nvcc, on PATH, in `$CUDA_HOME/bin`, and in NVIDIA's PyPI wheels
(`nvidia-cuda-cuobjdump`, `nvidia-cuda-nvdisasm`: `site-packages/nvidia/cu*/bin`), so a CPU-only
machine gets SASS too. The base opcode is the mnemonic before its first `.`:
`HMMA.16816.F32` -> HMMA, `LDSM.16.M88.4` -> LDSM, `@!P0 BRA` -> BRA.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

DISASSEMBLERS = ("cuobjdump", "nvdisasm")
# Goes with every histogram the object cache keeps: a change to what `parse_sass` returns bumps it.
FORMAT = 1

# cuobjdump: "\t\tFunction : NAME"; nvdisasm: ".text.NAME:" label lines.
_FUNCTION = re.compile(r"^\s*(?:Function : (\S+)|\.text\.(\S+):)\s*$")
# "/*0040*/   @!P0 HMMA.16816.F32 R4, ..." -> HMMA. Predicates: @P0, @!PT, @UP1, @!UPT.
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:\{\s*)?(?:@!?U?P[0-9T]\s+)?([A-Z][A-Z0-9_]*)")


def _wheel_bin_dirs() -> list[Path]:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    dirs: list[Path] = []
    for location in spec.submodule_search_locations:
        dirs.extend(sorted(Path(location).glob("cu*/bin"), reverse=True))   # newest CUDA first
        dirs.extend(sorted(Path(location).glob("cuda_*/bin")))
    return dirs


def find_disassembler(nvcc: str | None = None) -> Path | None:
    """The first cuobjdump (else nvdisasm) found, or None: in the toolkit of the nvcc in use first (an
    older disassembler may not know a newer arch), then PATH, `$CUDA_HOME/bin` and NVIDIA's wheels."""
    first: list[Path] = []
    if nvcc and (nvcc_path := shutil.which(nvcc)):
        first.append(Path(nvcc_path).resolve().parent)
    later: list[Path] = []
    if os.environ.get("CUDA_HOME"):
        later.append(Path(os.environ["CUDA_HOME"]) / "bin")
    later.extend(_wheel_bin_dirs())
    for tool in DISASSEMBLERS:
        for directory in first:
            if (directory / tool).is_file() and os.access(directory / tool, os.X_OK):
                return directory / tool
        if on_path := shutil.which(tool):
            return Path(on_path)
        for directory in later:
            if (directory / tool).is_file() and os.access(directory / tool, os.X_OK):
                return directory / tool
    return None


def parse_sass(text: str) -> dict[str, dict[str, int]]:
    """Histogram of base opcodes per function from cuobjdump --dump-sass or nvdisasm output."""
    histograms: dict[str, Counter[str]] = {}
    current: Counter[str] | None = None
    for line in text.splitlines():
        if match := _FUNCTION.match(line):
            current = histograms.setdefault(match.group(1) or match.group(2), Counter())
        elif current is not None and (match := _INSTRUCTION.match(line)):
            current[match.group(1)] += 1
    return {name: dict(counts) for name, counts in histograms.items()}


def disassemble(tool: Path, cubin: Path, timeout_s: float = 120.0) -> dict[str, dict[str, int]]:
    """Opcode histograms of every function in `cubin`. Raises CalledProcessError on tool failure."""
    args = [str(tool), "--dump-sass", str(cubin)] if tool.name.startswith("cuobjdump") \
        else [str(tool), "-c", str(cubin)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, check=True)
    return parse_sass(proc.stdout)
