"""`-lineinfo` (in every gate compile, for the profile's per-line counters) leaves the SASS alone.

Each kernel is compiled to a cubin with the gate's own nvcc flags and again with `-lineinfo` taken
out; `cuobjdump -sass` of both must be the same instructions once addresses are stripped (and
the `## File "...", line N` comments a disassembler may print from the line table), while only the
`-lineinfo` cubin carries the line table (`.nv_debug_line_sass`). A flag that moved code
would make the profile's numbers describe a kernel the repository does not ship.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gate.compiling import toolchain
from gate.nvidia import sass
from tests.patience import HANG_S

pytestmark = [pytest.mark.nvcc,
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")]

ROOT = Path(__file__).resolve().parents[2]
# (source relative to ROOT, include directory relative to ROOT, arch): the demo's three kernels
# (wgmma.cu is sm_90a only) and the sample repository's WMMA GEMM. Each source once: wmma.cu at sm_90a
# as well compiled the same mma.sync code again for the Hopper back end, which wgmma.cu and the
# sample's GEMM already take through ptxas at sm_90a (and it cost 4-5 minutes of a loaded 2-core run).
CASES = [
    ("kernels/flashcore/wmma.cu", "kernels/flashcore", "sm_80"),
    ("kernels/flashcore/scalar.cu", "kernels/flashcore", "sm_80"),
    ("kernels/flashcore/wgmma.cu", "kernels/flashcore", "sm_90a"),
    ("tests/samples/wmma_gemm/kernels/wmma_gemm.cu", "tests/samples/wmma_gemm", "sm_90a"),
]
_ADDRESS = re.compile(r"/\*[0-9a-f]{4,}\*/")
_TRAILING_ENCODING = re.compile(r"/\* 0x[0-9a-f]{16} \*/")


def normalised_sass(text: str) -> list[str]:
    """The instructions of a `cuobjdump -sass` listing, without addresses, encodings' line
    breaks or line-information comments (`//## File "wmma.cu", line 120`)."""
    kept = []
    for line in text.splitlines():
        if "## File" in line or not line.strip():
            continue
        line = _TRAILING_ENCODING.sub("", _ADDRESS.sub("", line)).strip()
        if line and not line.startswith("/*"):
            kept.append(" ".join(line.split()))
    return kept


def cubin(source: str, include: str, arch: str, lineinfo: bool, out: Path) -> Path:
    flags = [f for f in toolchain.plain_nvcc_command("nvcc", [arch])[1:] if lineinfo or f != "-lineinfo"]
    flags = [f for f in flags if not f.startswith("-gencode")]   # one arch, device code only
    target = out / f"{Path(source).stem}-{arch}-{'li' if lineinfo else 'plain'}.cubin"
    number = arch.removeprefix("sm_")
    cmd = ["nvcc", *[f for f in flags if f not in ("-Xcompiler", "-fPIC,-fvisibility=hidden")],
           f"-I{include}", "-cubin", f"-gencode=arch=compute_{number},code=sm_{number}", source,
           "-o", str(target)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert run.returncode == 0, run.stderr
    return target


def test_normalising_keeps_instructions_and_drops_line_comments():
    listing = """
        Function : kernel
\t/*0000*/                   LDC R1, c[0x0][0x28] ;      /* 0x00000a00ff017b82 */
\t                                                       /* 0x000fe20000000800 */
\t//## File "kernels/flashcore/wmma.cu", line 120
\t/*0010*/                   HMMA.16816.F32 R4, R12, R18, R4 ;  /* 0x000000120c04723c */
"""
    assert normalised_sass(listing) == ["Function : kernel", "LDC R1, c[0x0][0x28] ;",
                                        "HMMA.16816.F32 R4, R12, R18, R4 ;"]


def test_the_gate_compiles_with_line_information():
    assert "-lineinfo" in toolchain.plain_nvcc_command("nvcc", ["sm_80"])


@pytest.mark.parametrize(("source", "include", "arch"), CASES, ids=[f"{Path(s).name}-{a}" for s, _, a in CASES])
def test_lineinfo_does_not_change_the_sass(tmp_path, source, include, arch):
    tool = sass.find_disassembler("nvcc")
    if tool is None or tool.name != "cuobjdump":
        pytest.skip("cuobjdump is not installed")
    listings = {}
    # Both compiles at once: on two cores they take the time of one (wgmma.cu: a minute each).
    with ThreadPoolExecutor(2) as pool:
        made = pool.map(lambda lineinfo: cubin(source, include, arch, lineinfo, tmp_path), (False, True))
        cubins = dict(zip((False, True), made))
    for lineinfo, path in cubins.items():
        dump = subprocess.run([str(tool), "-sass", str(path)], capture_output=True, text=True, timeout=120)
        assert dump.returncode == 0, dump.stderr
        listings[lineinfo] = dump.stdout
        elf = subprocess.run([str(tool), "-elf", str(path)], capture_output=True, text=True, timeout=120)
        # the flag did something: only the -lineinfo cubin carries the SASS line table
        assert (".nv_debug_line_sass" in elf.stdout) is lineinfo
    plain, with_lines = normalised_sass(listings[False]), normalised_sass(listings[True])
    assert sum(ln.count(";") for ln in plain) > 50     # real code was compared, not two empty dumps
    assert plain == with_lines


def test_the_flag_is_part_of_the_object_cache_key(tmp_path):
    """An object cached before -lineinfo was added is not reused for a profile that needs lines."""
    from gate.compiling.build_cache import Toolchain
    from gate.compiling.objects import key_of

    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    versions = Toolchain(torch_version="none", cuda_version="none", compiler_version="nvcc 13.0")
    with_lines = toolchain.plain_nvcc_command("nvcc", ["sm_80"])
    without = [f for f in with_lines if f != "-lineinfo"]
    assert key_of(tmp_path / "k.cu", "k.cu", with_lines, versions, tmp_path) != \
        key_of(tmp_path / "k.cu", "k.cu", without, versions, tmp_path)
