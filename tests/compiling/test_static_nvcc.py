"""The static stage with the real nvcc on the sample kernel (one arch each, to keep it quick)."""

import re
import shutil
from pathlib import Path

import pytest

from gate.compiling.static import LOG_NAME, run_static
from gate.domain import KernelSpec, StageStatus
from gate.errors import ToolMissingError
from gate.nvidia import sass
from tests.samples.build import KERNEL_FILE, SAMPLES_DIR, apply_variant

pytestmark = [pytest.mark.nvcc,
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")]


def sample(tmp_path: Path, variant: str | None = None) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(SAMPLES_DIR / "wmma_gemm", repo)
    if variant:
        source = repo / KERNEL_FILE
        source.write_text(apply_variant(source.read_text(), variant))
    return repo


def spec(arch: str = "sm_90a") -> KernelSpec:
    return KernelSpec(name="wmma_gemm", sources=[KERNEL_FILE, "extension/gemm_binding.cpp"], arch=[arch])


def test_static_stage_reads_registers_smem_and_hmma_for_sm_90a(tmp_path):
    res = run_static(spec(), sample(tmp_path), tmp_path / "out")
    assert res.status is StageStatus.PASSED
    (fn,) = res.functions
    assert (fn.arch, fn.smem_bytes, fn.spill_bytes) == ("sm_90a", 0, 0)   # fragments straight from global
    assert fn.registers > 0
    if res.sass_available:
        assert fn.sass_opcodes["HMMA"] > 0 and fn.sass_opcodes["LDG"] > 0 and "LDSM" not in fn.sass_opcodes
    assert "Used" in (tmp_path / "out" / LOG_NAME).read_text()


def test_bank_conflict_variant_adds_the_unpadded_c_tile_to_static_smem(tmp_path):
    res = run_static(spec("sm_80"), sample(tmp_path, "bank_conflicts"), tmp_path / "out")
    assert res.functions[0].smem_bytes == 64 * 64 * 4


def test_smem_staged_variant_stages_a_and_b_through_padded_shared_memory(tmp_path):
    # timing_drift's subject: the sample before a343f93, two 64 x (32 + 8) half tiles
    res = run_static(spec("sm_90"), sample(tmp_path, "smem_staged"), tmp_path / "out")
    (fn,) = res.functions
    assert (fn.smem_bytes, fn.spill_bytes) == (2 * 64 * 40 * 2, 0)
    if res.sass_available:
        assert fn.sass_opcodes["HMMA"] > 0 and fn.sass_opcodes["STS"] > 0 and fn.sass_opcodes["BAR"] > 0


def test_a_compile_error_is_a_failed_stage_with_the_log(tmp_path):
    res = run_static(spec("sm_80"), sample(tmp_path, "compile_error"), tmp_path / "out")
    assert res.status is StageStatus.FAILED
    assert 'identifier "zero_value" is undefined' in res.reason
    assert "kernels/wmma_gemm.cu" in res.reason and str(tmp_path) not in res.reason
    assert "zero_value" in res.log


def test_without_a_disassembler_sass_is_unavailable_not_empty(tmp_path, monkeypatch):
    monkeypatch.setattr(sass, "find_disassembler", lambda nvcc=None: None)
    res = run_static(spec("sm_80"), sample(tmp_path), tmp_path / "out")
    assert res.status is StageStatus.PASSED and res.sass_available is False
    assert res.functions[0].sass_opcodes == {}


def test_a_missing_nvcc_is_an_infrastructure_error(tmp_path):
    with pytest.raises(ToolMissingError, match="nvcc not found"):
        run_static(spec(), sample(tmp_path), tmp_path / "out", nvcc="no-such-nvcc")


def test_a_source_named_like_a_shell_command_never_runs_it(tmp_path):
    """Issue 12: `k$(touch PWNED).cu` listed in `sources` made nvcc's shell run `touch` on the host.
    The manifest refuses the name, so the static stage never sees it and nothing runs."""
    from gate.errors import ManifestError
    from gate.manifest.load import load_manifest

    repo = tmp_path / "repo"
    repo.mkdir()
    name = "k$(touch PWNED).cu"
    (repo / name).write_text("__global__ void k(float *x) { x[0] = 1.f; }\n")
    (repo / "gate.toml").write_text(f'[[kernel]]\nname = "k"\nsources = [\'{name}\']\nworkload = "gemm"\n'
                                    'arch = ["sm_90"]\nshapes = [{m=16, n=16, k=16}]\n')
    with pytest.raises(ManifestError):
        for kernel in load_manifest(repo).kernels:
            run_static(kernel, repo, tmp_path / "out")
    assert not list(tmp_path.rglob("PWNED")) and not Path("PWNED").exists()


def test_a_second_run_takes_the_sass_histograms_from_the_object_cache(tmp_path, monkeypatch):
    repo, cache = sample(tmp_path), tmp_path / "cache"
    first = run_static(spec("sm_80"), repo, tmp_path / "out1", cache_dir=cache)
    if not first.sass_available:
        pytest.skip("no SASS disassembler on this machine")

    def disassembled_again(*_args, **_kwargs):
        raise AssertionError("the cached object was disassembled again")

    monkeypatch.setattr(sass, "disassemble", disassembled_again)
    second = run_static(spec("sm_80"), repo, tmp_path / "out2", cache_dir=cache)
    assert second.sass_available
    assert second.functions[0].sass_opcodes == first.functions[0].sass_opcodes
    assert second.functions[0].sass_opcodes["HMMA"] > 0


def test_the_manifests_nvcc_flags_reach_the_compile(tmp_path):
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "tile.cu").write_text(
        "#ifndef TILE\n#define TILE 16\n#endif\n"
        "__global__ void tile_kernel(float* out) {\n"
        "    __shared__ float s[TILE];\n"
        "    s[threadIdx.x % TILE] = threadIdx.x;\n"
        "    __syncthreads();\n"
        "    out[threadIdx.x] = s[(threadIdx.x + 1) % TILE];\n}\n")

    def smem(flags):
        kernel = KernelSpec(name="tile", sources=["tile.cu"], arch=["sm_80"], nvcc_flags=flags)
        res = run_static(kernel, tmp_path / "repo", tmp_path / f"out{len(flags)}", cache_dir=tmp_path / "cache")
        assert res.status is StageStatus.PASSED, res.reason
        return res.functions[0].smem_bytes

    assert (smem([]), smem(["-DTILE=256"])) == (16 * 4, 256 * 4)     # and no stale cache hit between them


def test_each_source_compiled_now_is_reported_as_it_lands_and_cache_hits_are_not(tmp_path):
    repo, cache, heard = sample(tmp_path), tmp_path / "cache", []
    run_static(spec("sm_80"), repo, tmp_path / "out1", cache_dir=cache, on_compiled=heard.append)
    assert len(heard) == 1
    assert re.fullmatch(r"kernels/wmma_gemm\.cu for sm_80: compiled in \d+ s \(1 of 1\)", heard[0])
    run_static(spec("sm_80"), repo, tmp_path / "out2", cache_dir=cache, on_compiled=heard.append)
    assert len(heard) == 1                      # every object came from the cache
