"""Sample kernel repositories with a real git history, for pipeline tests here and GPU tests there.

    repo, shas = make_repo(tmp_path, "wmma_gemm", ["bank_conflicts", "slower"])
    shas["base"]            the correct kernel (branch main, checked out)
    shas["bank_conflicts"]  one commit on top of base, on branch variant/bank_conflicts

`torch_gemm` is a repository in the most common foreign layout (the kernel's `.cu` includes
`<torch/types.h>` and defines the host function; `main.cpp` holds the PYBIND11_MODULE); it has no
variants.

Every variant is one commit whose parent is the base, so gating it against its parent compares it
with the correct kernel. Variants (edits of `kernels/wmma_gemm.cu`, each anchored on exact text):
    unwritten_tile   one 16x16 output tile (block 0, warp 0) is never stored: correctness must fail
    bank_conflicts   C is staged through unpadded shared memory and read column-wise (32-way conflicts)
    compile_error    an undefined identifier: the static stage must fail with nvcc's log
    slower           N dependent FMAs per K step on a dummy register ("slower:N", default 8): more
                     arithmetic, identical memory traffic and layout (calibrate N on the GPU)
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

SAMPLES_DIR = Path(__file__).parent
KERNEL_FILE = "kernels/wmma_gemm.cu"
_GIT_ID = ["-c", "user.name=Gate Tests", "-c", "user.email=gate-tests@example.invalid",
           "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *_GIT_ID, *args], cwd=repo, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def _replace(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ValueError(f"variant anchor not found exactly once: {old[:60]!r}")
    return text.replace(old, new)


def unwritten_tile(source: str) -> str:
    return _replace(source, "if (r < p.m && c < p.n)   //",
                    "if (r < p.m && c < p.n && !(blockIdx.x == 0 && blockIdx.y == 0 && warp == 0 && i == 0"
                    " && j == 0))   // skips one tile;")


def bank_conflicts(source: str) -> str:
    old_start = "    for (int i = 0; i < 2; ++i) {\n        for (int j = 0; j < 2; ++j) {\n            const int r ="
    head, rest = source.split(old_start, 1) if source.count(old_start) == 1 else (None, None)
    if head is None:
        raise ValueError("variant anchor not found exactly once: the epilogue")
    tail = rest.split("}  // namespace wmma_gemm_sample", 1)[1]
    epilogue = """    // C goes through unpadded shared memory and is read column-wise: the 32 lanes of a warp read
    // addresses 64 floats (256 bytes) apart, all in one bank, so every load is a 32-way conflict.
    __shared__ float c_s[kTile][kTile];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&c_s[warp_row + i * 16][warp_col + j * 16], acc[i][j], kTile,
                                    wmma::mem_row_major);
    __syncthreads();
    for (int idx = threadIdx.x; idx < kTile * kTile; idx += kThreads) {
        const int r = idx % kTile;
        const int c = idx / kTile;
        if (row0 + r < p.m && col0 + c < p.n) p.c[(size_t)(row0 + r) * p.n + col0 + c] = c_s[r][c];
    }
}

"""
    return head + epilogue + "}  // namespace wmma_gemm_sample" + tail


def compile_error(source: str) -> str:
    return _replace(source, "wmma::fill_fragment(acc[i][j], 0.0f);", "wmma::fill_fragment(acc[i][j], zero_value);")


def slower(source: str, extra_fma: int = 8) -> str:
    source = _replace(source, "    for (int k0 = 0; k0 < p.k; k0 += kStep) {\n",
                      "    float extra = static_cast<float>(threadIdx.x);   // dummy work: registers only\n"
                      "    for (int k0 = 0; k0 < p.k; k0 += kStep) {\n"
                      f"#pragma unroll\n        for (int e = 0; e < {extra_fma}; ++e) extra = fmaf(extra, 0.999f, 1.0f);\n")
    return _replace(source, "    for (int i = 0; i < 2; ++i) {\n        for (int j = 0; j < 2; ++j) {\n            const int r =",
                    "    if (extra == -1.0f) p.c[0] = extra;   // never true; keeps the FMAs alive\n"
                    "    for (int i = 0; i < 2; ++i) {\n        for (int j = 0; j < 2; ++j) {\n            const int r =")


VARIANTS: dict[str, Callable[..., str]] = {
    "unwritten_tile": unwritten_tile, "bank_conflicts": bank_conflicts,
    "compile_error": compile_error, "slower": slower,
}


def apply_variant(source: str, variant: str) -> str:
    """`slower:16` passes 16 to `slower`; other variants take no argument."""
    name, _, arg = variant.partition(":")
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})")
    return VARIANTS[name](source, int(arg)) if arg else VARIANTS[name](source)


def commit_files(repo: Path, files: dict[str, str | None], message: str) -> str:
    """Write (or, with None, delete) files and commit them on the current branch; the new sha."""
    for rel, text in files.items():
        path = repo / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def make_repo(tmp_path: Path, sample: str = "wmma_gemm", variants: list[str] | tuple[str, ...] = ()
              ) -> tuple[Path, dict[str, str]]:
    """A git repository of `sample` at `tmp_path/sample`: base commit + one commit per variant."""
    repo = Path(tmp_path) / sample
    shutil.copytree(SAMPLES_DIR / sample, repo)
    _git(repo, "init", "-q")
    shas = {"base": commit_files(repo, {}, f"{sample}: the correct kernel")}
    base_source = (repo / KERNEL_FILE).read_text(encoding="utf-8") if variants else ""
    for variant in variants:
        _git(repo, "checkout", "-q", "-b", f"variant/{variant.replace(':', '-')}", shas["base"])
        shas[variant] = commit_files(repo, {KERNEL_FILE: apply_variant(base_source, variant)},
                                     f"{sample}: variant {variant}")
    _git(repo, "checkout", "-q", "main")
    return repo, shas
