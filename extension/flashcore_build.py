"""Build a FlashCore kernel (one kernel .cu + the shared binding) as a torch extension.

Shared by tests/gpu/test_flashcore_kernels.py, bench/flashcore_latency.py and
scripts/kernels-device.sh. The build directory is keyed by kernel, arch and a hash of the sources
and flags, so a prebuild (``python3 extension/flashcore_build.py``) is reused by later processes:
ninja finds the outputs up to date and only the import remains.

Run as a script it builds every kernel in parallel processes and prints ptxas's resource report.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent
BINDING = REPO_ROOT / "extension" / "flashcore_binding.cpp"
KERNELS: dict[str, Path] = {
    "flashcore_scalar": REPO_ROOT / "kernels" / "flashcore" / "scalar.cu",
    "flashcore_wmma": REPO_ROOT / "kernels" / "flashcore" / "wmma.cu",
    "flashcore_wgmma": REPO_ROOT / "kernels" / "flashcore" / "wgmma.cu",
}
# Kernels that use arch-specific instructions (wgmma, setmaxnreg) build only for that target and
# run only on its GPUs: kernel -> (the device arch it needs, the target it is built for).
ARCH_SPECIFIC: dict[str, tuple[str, str]] = {
    "flashcore_wgmma": ("sm_90", "sm_90a"),
}


def kernel_arch(name: str, arch: str) -> str | None:
    """The target to build kernel `name` for on a device of `arch` (``sm_XY``), or None if it cannot run there."""
    if name not in ARCH_SPECIFIC:
        return arch
    device_arch, target = ARCH_SPECIFIC[name]
    return target if arch in (device_arch, target) else None


def kernels_for(arch: str) -> list[str]:
    """The kernels that build and run on a device of `arch`, sorted."""
    return sorted(name for name in KERNELS if kernel_arch(name, arch) is not None)


def default_arch() -> str:
    """``sm_XY`` of the current CUDA device (needs a GPU), or $FLASHCORE_ARCH."""
    if os.environ.get("FLASHCORE_ARCH"):
        return os.environ["FLASHCORE_ARCH"]
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def cuda_flags(arch: str) -> list[str]:
    num = arch.removeprefix("sm_")  # "90a" for sm_90a: arch=compute_90a,code=sm_90a
    return ["-O3", f"-gencode=arch=compute_{num},code=sm_{num}", "-Xptxas", "-v", "-lineinfo"]


def sources_digest(kernel: Path, binding: Path, arch: str) -> str:
    """12 hex digits naming one build: the kernel, the binding, the headers beside the kernel, the flags."""
    h = hashlib.sha256()
    for src in (kernel, binding, *sorted(kernel.parent.glob("*.h"))):
        h.update(src.read_bytes())
    h.update(" ".join(cuda_flags(arch)).encode())
    return h.hexdigest()[:12]


def build_dir(name: str, arch: str, kernel: Path | None = None, binding: Path = BINDING) -> Path:
    """The build directory of kernel `name` (its source: `kernel`, default this checkout's)."""
    digest = sources_digest(kernel or KERNELS[name], binding, arch)
    root = Path(os.environ.get("FLASHCORE_BUILD_ROOT", Path(tempfile.gettempdir()) / "flashcore-build"))
    path = root / f"{name}-{arch}-{digest}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_sources(name: str, kernel: Path, binding: Path, arch: str, verbose: bool = False) -> ModuleType:
    """Build (or reuse) and import extension `name` from one kernel .cu and a binding, for `arch`."""
    from torch.utils.cpp_extension import load

    return load(
        name=name,
        sources=[str(kernel), str(binding)],
        extra_cuda_cflags=cuda_flags(arch),
        build_directory=str(build_dir(name, arch, kernel, binding)),
        verbose=verbose,
    )


def load_kernel(name: str, arch: str | None = None, verbose: bool = False) -> ModuleType:
    """Build (or reuse) and import the extension for kernel `name`; returns the module."""
    device_arch = arch or default_arch()
    arch = kernel_arch(name, device_arch)
    if arch is None:
        raise RuntimeError(f"{name} needs a {ARCH_SPECIFIC[name][0]} GPU (built for {ARCH_SPECIFIC[name][1]}), not {device_arch}")
    return load_sources(name, KERNELS[name], BINDING, arch, verbose)


def ptxas_summary(log: str) -> list[str]:
    """One line per (kernel, arch) from `-Xptxas -v` output: registers, smem, stack, spills."""
    rows, cur = [], None
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '(\S+)' for '(sm_\w+)'", line):
            cur = {"fn": m.group(1), "arch": m.group(2)}
        elif cur is not None and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)):
            cur.update(stack=m.group(1), spill_st=m.group(2), spill_ld=m.group(3))
        elif cur is not None and (m := re.search(r"Used (\d+) registers", line)):
            smem = re.search(r"(\d+) bytes smem", line)
            rows.append(
                f"{cur['arch']} regs={m.group(1):>3} smem={smem.group(1) if smem else 0:>5} stack={cur.get('stack')} "
                f"spill_st={cur.get('spill_st')} spill_ld={cur.get('spill_ld')} {cur['fn']}"
            )
            cur = None
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", choices=sorted(KERNELS), help="build one kernel (default: all, in parallel)")
    ap.add_argument("--arch", default=None, help="sm_XY (default: the current GPU's)")
    args = ap.parse_args()
    arch = args.arch or default_arch()
    if args.kernel:
        load_kernel(args.kernel, arch, verbose=True)  # ninja's output (ptxas -v) goes to fd 1
        return 0
    procs = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--kernel", name, "--arch", arch],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name in kernels_for(arch)
    }
    rc = 0
    for name, proc in procs.items():
        out, _ = proc.communicate()
        print(f"==== build {name} ({arch}): exit {proc.returncode}")
        print(out)
        print(f"==== ptxas {name}")
        print("\n".join(ptxas_summary(out)))
        rc |= proc.returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
