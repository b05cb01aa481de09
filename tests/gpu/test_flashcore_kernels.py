"""Correctness of the FlashCore kernels against a float32 reference, and the binding's checks.

Oracle (as in Dao-AILab/flash-attention's tests): max |out - ref| must be at most
K_TORCH x the error of PyTorch's own fp16/bf16 SDPA against the same float32 reference, plus an
absolute floor per dtype. Inputs are fresh seeded random tensors per check; the output buffer is
poisoned with NaN before every call so unwritten elements fail.
"""

from __future__ import annotations

import math
import sys
import zlib
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "extension"))
import flashcore_build  # noqa: E402

pytestmark = pytest.mark.gpu

KERNELS = sorted(flashcore_build.KERNELS)
K_TORCH = 2.0
FLOOR = {torch.float16: 1e-3, torch.bfloat16: 8e-3}

# (B, H, S_q, S_k, D): the gate's shapes, long sequences, and odd tails in S_q and S_k.
SHAPES = [
    (1, 8, 512, 512, 64),
    (2, 16, 4096, 4096, 64),
    (2, 16, 4096, 4096, 128),
    (1, 2, 8192, 8192, 64),
    (1, 2, 1, 1, 64),
    (3, 5, 17, 17, 128),
    (3, 5, 1000, 1000, 64),
    (1, 2, 4097, 4097, 128),
    (2, 3, 100, 300, 64),
    (2, 3, 300, 100, 128),
]


@pytest.fixture(scope="session")
def modules() -> dict:
    """The kernels this GPU can run, built; arch-specific ones (flashcore_wgmma: sm_90a) only on their GPU."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    arch = flashcore_build.default_arch()
    return {name: flashcore_build.load_kernel(name, arch) for name in flashcore_build.kernels_for(arch)}


def module(modules: dict, kernel: str):
    if kernel not in modules:
        need, target = flashcore_build.ARCH_SPECIFIC[kernel]
        pytest.skip(f"{kernel} is built for {target} and needs a {need} GPU; this one is {flashcore_build.default_arch()}")
    return modules[kernel]


def reference(q, k, v, causal: bool):
    """float32 softmax(q kᵀ/sqrt(D)) v, causal mask top-left as torch's is_causal; one batch at a time."""
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    s_q, s_k, d = q.shape[2], k.shape[2], q.shape[3]
    mask = None
    if causal:
        mask = torch.ones(s_q, s_k, dtype=torch.bool, device=q.device).tril()
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for b in range(q.shape[0]):
            qb, kb, vb = q[b].float(), k[b].float(), v[b].float()
            s = (qb @ kb.transpose(-1, -2)) / math.sqrt(d)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            out[b] = torch.softmax(s, dim=-1) @ vb
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    return out


def random_qkv(shape, dtype, seed: int):
    b, h, s_q, s_k, d = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, h, s_q, d, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(b, h, s_k, d, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(b, h, s_k, d, device="cuda", dtype=dtype, generator=g)
    return q, k, v


def check_one_call(mod, label: str, shape, dtype, causal: bool, seed_key) -> None:
    """One forward call of `mod` on fresh seeded inputs (output poisoned with NaN) against the fp32
    reference, within K_TORCH x torch's own error + the dtype's floor."""
    q, k, v = random_qkv(shape, dtype, zlib.crc32(repr(seed_key).encode()))
    ref = reference(q, k, v, causal)
    torch_err = (F.scaled_dot_product_attention(q, k, v, is_causal=causal).float() - ref).abs().max().item()
    out = torch.full_like(q, float("nan"))
    mod.forward(q, k, v, causal, out=out)
    torch.cuda.synchronize()
    assert not out.isnan().any()
    err = (out.float() - ref).abs().max().item()
    print(f"{label} {shape} causal={causal}: max_err={err:.3e} torch_err={torch_err:.3e}")
    assert err <= K_TORCH * torch_err + FLOOR[dtype]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("causal", [False, True], ids=["noncausal", "causal"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "B{}H{}Sq{}Sk{}D{}".format(*s))
def test_matches_fp32_reference(modules, kernel, dtype, causal, shape):
    trials = 2 if shape[2] * shape[3] <= 1000 * 128 else 1
    for trial in range(trials):
        seed = zlib.crc32(repr((kernel, str(dtype), causal, shape, trial)).encode())
        q, k, v = random_qkv(shape, dtype, seed)
        ref = reference(q, k, v, causal)
        torch_err = (F.scaled_dot_product_attention(q, k, v, is_causal=causal).float() - ref).abs().max().item()

        out = torch.full_like(q, float("nan"))
        module(modules, kernel).forward(q, k, v, causal, out=out)
        torch.cuda.synchronize()
        assert not out.isnan().any(), f"{kernel}: NaN in output (unwritten or bad softmax)"
        assert not out.isinf().any(), f"{kernel}: Inf in output"
        err = (out.float() - ref).abs().max().item()
        tol = K_TORCH * torch_err + FLOOR[dtype]
        print(f"{kernel} {shape} {dtype} causal={causal}: max_err={err:.3e} torch_err={torch_err:.3e} tol={tol:.3e}")
        assert err <= tol, f"{kernel}: max abs err {err:.3e} > {tol:.3e} (torch {torch_err:.3e})"


@pytest.mark.parametrize("kernel", KERNELS)
def test_returns_new_output_and_handles_strided_inputs(modules, kernel):
    # q as a transposed view [B, S, H, D] -> [B, H, S, D]: last dim contiguous, other strides not.
    g = torch.Generator(device="cuda").manual_seed(7)
    qs = torch.randn(2, 256, 4, 64, device="cuda", dtype=torch.float16, generator=g)
    k = torch.randn(2, 4, 256, 64, device="cuda", dtype=torch.float16, generator=g)
    v = torch.randn(2, 4, 256, 64, device="cuda", dtype=torch.float16, generator=g)
    q = qs.transpose(1, 2)
    out = module(modules, kernel).forward(q, k, v, False)
    ref = reference(q, k, v, False)
    assert out.shape == q.shape and out.is_contiguous()
    assert (out.float() - ref).abs().max().item() < 5e-3


def _good(dtype=torch.float16, d=64, device="cuda"):
    g = torch.Generator(device="cpu").manual_seed(0)
    return [torch.randn(1, 2, 16, d, generator=g).to(device=device, dtype=dtype) for _ in range(3)]


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda q, k, v: (q.float(), k, v), r"q must be float16, bfloat16 or float8_e4m3fn, got Float"),
        (lambda q, k, v: (q, k.bfloat16(), v), r"k must have the dtype of q"),
        (lambda q, k, v: (q.cpu(), k, v), r"q must be a CUDA tensor"),
        (lambda q, k, v: (q, k, v.cpu()), r"v must be a CUDA tensor"),
        (lambda q, k, v: (q[..., :32], k[..., :32], v[..., :32]), r"q must have a contiguous last dimension|q head dim"),
        (lambda q, k, v: (q[0], k, v), r"q must be 4-D"),
        (lambda q, k, v: (q, k[:, :1], v[:, :1]), r"k head count"),
        (lambda q, k, v: (q, torch.cat([k, k]), torch.cat([v, v])), r"k batch size"),
        (lambda q, k, v: (q, k, v[:, :, :8]), r"v shape must equal k's"),
        (lambda q, k, v: (q, k, v.transpose(-1, -2)), r"v must have a contiguous last dimension"),
    ],
    ids=["q_fp32", "k_dtype", "q_cpu", "v_cpu", "q_sliced_d", "q_3d", "k_heads", "k_batch", "v_shape", "v_strided_d"],
)
@pytest.mark.parametrize("kernel", KERNELS)
def test_binding_rejects_bad_arguments(modules, kernel, mutate, match):
    q, k, v = mutate(*_good())
    with pytest.raises(RuntimeError, match=match):
        module(modules, kernel).forward(q, k, v, False)


@pytest.mark.parametrize("d", [32, 96, 256])
def test_binding_rejects_unsupported_head_dim(modules, d):
    q, k, v = _good(d=d)
    for mod in modules.values():
        with pytest.raises(RuntimeError, match=r"q head dim \(size 3\) must be 64 or 128"):
            mod.forward(q, k, v, False)


def test_binding_rejects_mismatched_head_dim_and_bad_out(modules):
    q, _, _ = _good(d=64)
    _, k, v = _good(d=128)
    q2, k2, v2 = _good()
    for mod in modules.values():
        with pytest.raises(RuntimeError, match=r"k head dim \(size 3\) must equal q's"):
            mod.forward(q, k, v, False)
        with pytest.raises(RuntimeError, match=r"out shape must equal q's"):
            mod.forward(q2, k2, v2, False, out=torch.empty(1, 2, 8, 64, device="cuda", dtype=torch.float16))
        with pytest.raises(RuntimeError, match=r"out must have the dtype of q"):
            mod.forward(q2, k2, v2, False, out=torch.empty_like(q2, dtype=torch.bfloat16))


@pytest.mark.parametrize("config", ["w4m1", "w4m2", "w8m1", "w4m1s2", "w2m1s4"])
@pytest.mark.parametrize("causal", [False, True], ids=["noncausal", "causal"])
@pytest.mark.parametrize("shape", [(2, 3, 300, 257, 64), (1, 2, 200, 333, 128)], ids=["D64", "D128"])
def test_every_wmma_tile_config(modules, monkeypatch, config, causal, shape):
    """The launcher's per-shape choice hides most configs; FLASHCORE_WMMA_CONFIG forces each one."""
    monkeypatch.setenv("FLASHCORE_WMMA_CONFIG", config)
    check_one_call(modules["flashcore_wmma"], f"flashcore_wmma[{config}]", shape, torch.float16, causal,
                   (config, causal, shape))


@pytest.mark.parametrize("config", ["c1n128", "c2n128", "c2n128p", "c2n176", "c2n176p", "c3n128", "c3n128p"])
@pytest.mark.parametrize("causal", [False, True], ids=["noncausal", "causal"])
@pytest.mark.parametrize("shape", [(2, 3, 300, 257, 64), (1, 2, 200, 333, 128), (1, 2, 700, 700, 64)], ids=["D64", "D128", "D64long"])
def test_every_wgmma_tile_config(modules, monkeypatch, config, causal, shape):
    """FLASHCORE_WGMMA_CONFIG forces each tile config (consumer warpgroups x keys per tile) of flashcore_wgmma."""
    mod = module(modules, "flashcore_wgmma")
    monkeypatch.setenv("FLASHCORE_WGMMA_CONFIG", config)
    dtype = torch.bfloat16 if causal else torch.float16
    check_one_call(mod, f"flashcore_wgmma[{config}]", shape, dtype, causal, (config, causal, shape))


# Grids of more tiles than SMs run persistent blocks (one per SM, taking tiles of one list in rounds;
# causal tiles heaviest first and started `lead` rows early, so tile 0 holds the short remainder and
# stores only its own rows): an odd tile count per head, tails in S_q and S_k, S_q != S_k under the
# causal mask (both ways; at S_q 600 and 192-row tiles tile 0 owns one warpgroup's 64 rows), and
# fewer tiles than SMs (B2 H20 S500: one block per tile, also started early when causal).
PERSISTENT_SHAPES = [(4, 17, 1000, 1000, 64), (3, 20, 1100, 900, 128), (2, 40, 700, 500, 64), (3, 24, 600, 900, 64),
                     (2, 20, 500, 500, 64)]


@pytest.mark.parametrize("config", ["c1n128", "c2n128", "c2n128p", "c3n128", "c3n128p", "c2n176p", "c2n128p-tiles", "c3n128-tiles", "c3n128p-tiles"])
@pytest.mark.parametrize("causal", [False, True], ids=["noncausal", "causal"])
@pytest.mark.parametrize("shape", PERSISTENT_SHAPES, ids=["D64odd", "D128tails", "D64sq>sk", "D64sq<sk", "D64tiles<sms"])
def test_persistent_blocks_and_one_block_per_tile(modules, monkeypatch, config, causal, shape):
    """Every tile config with persistent blocks, and (`-tiles`) with the one-block-per-tile grid they replaced."""
    mod = module(modules, "flashcore_wgmma")
    monkeypatch.setenv("FLASHCORE_WGMMA_CONFIG", config)
    check_one_call(mod, f"flashcore_wgmma[{config}]", shape, torch.float16, causal, ("persistent", config, causal, shape))


@pytest.fixture(scope="session")
def one_stage_wgmma(tmp_path_factory):
    """flashcore_wgmma as `gate demo`'s last commit has it (a one-stage K/V ring), built by the gate's
    own build stage from the demo repository's work tree (which is that commit)."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    if flashcore_build.kernel_arch("flashcore_wgmma", flashcore_build.default_arch()) is None:
        pytest.skip(f"flashcore_wgmma needs an sm_90 GPU; this one is {flashcore_build.default_arch()}")
    from gate.compiling import build
    from gate.demo.flashcore_commits import build_demo_repo
    from gate.manifest.load import load_manifest

    repo = tmp_path_factory.mktemp("demo") / "flashcore"
    build_demo_repo(repo)
    assert "static constexpr int kStages = 1;" in (repo / "kernels/flashcore/wgmma.cu").read_text()
    (spec,) = [k for k in load_manifest(repo).kernels if k.name == "flashcore_wgmma"]
    res = build.build_extension(spec, repo, repo.parent / "objects", repo.parent / "build")
    assert res.status.value == "passed", res.log
    return build.load_module(res.module_path)


@pytest.mark.parametrize("config", ["c1n128", "c2n128", "c2n128p", "c3n128"])
@pytest.mark.parametrize("causal", [False, True], ids=["noncausal", "causal"])
@pytest.mark.parametrize("shape", [(2, 3, 300, 257, 64), (1, 2, 200, 333, 128), (1, 2, 700, 700, 64)], ids=["D64", "D128", "D64long"])
def test_the_demo_one_stage_wgmma_is_slower_not_wrong(one_stage_wgmma, monkeypatch, config, causal, shape):
    """`gate demo` rejects its last commit for latency; that must be the only thing wrong with it."""
    monkeypatch.setenv("FLASHCORE_WGMMA_CONFIG", config)
    dtype = torch.bfloat16 if causal else torch.float16
    check_one_call(one_stage_wgmma, f"one-stage flashcore_wgmma[{config}]", shape, dtype, causal,
                   ("one-stage", config, causal, shape))


# float8_e4m3fn (flashcore_wgmma only): q, k, v in e4m3, the output bf16. P is rounded to e4m3 before
# P·V, as FlashAttention-3's FP8 forward does, so the bound is absolute, not a multiple of PyTorch's
# error (PyTorch has no e4m3 attention to compare with): an emulation of that rounding (128-key
# tiles, running max, bf16 output) on the CPU gave at most 0.021 x max(1, max|ref|) over S 17-2048,
# causal or not, D 64 and 128, so 0.05 leaves room without hiding a wrong key order (errors of O(1)).
E4M3_TOL = 5e-2
E4M3_SHAPES = [
    (2, 16, 4096, 4096, 64),
    (2, 16, 4096, 4096, 128),
    (3, 5, 17, 17, 128),     # one partial key tile: Vᵀ padded to 32 keys
    (2, 3, 100, 300, 64),    # S_k not a multiple of 16
    (2, 3, 300, 100, 128),
    (4, 17, 1000, 1000, 64), # persistent blocks, an odd tile count per head
    (1, 2, 4097, 4097, 128),
]


def check_e4m3_call(mod, label: str, shape, causal: bool, seed_key) -> None:
    q, k, v = (t.to(torch.float8_e4m3fn) for t in random_qkv(shape, torch.float16, zlib.crc32(repr(seed_key).encode())))
    ref = reference(q.float(), k.float(), v.float(), causal)
    out = torch.full(q.shape, float("nan"), dtype=torch.bfloat16, device="cuda")
    mod.forward(q, k, v, causal, out=out)
    torch.cuda.synchronize()
    assert not out.isnan().any(), f"{label}: NaN in output (unwritten or bad softmax)"
    err = (out.float() - ref).abs()
    scale = max(1.0, ref.abs().max().item())
    print(f"{label} {shape} e4m3 causal={causal}: max_err={err.max().item():.3e} mean={err.mean().item():.3e} scale={scale:.2f}")
    assert err.max().item() <= E4M3_TOL * scale
    assert err.mean().item() <= 1e-2


@pytest.mark.parametrize("causal", [False, True], ids=["noncausal", "causal"])
@pytest.mark.parametrize("shape", E4M3_SHAPES, ids=lambda s: "B{}H{}Sq{}Sk{}D{}".format(*s))
def test_wgmma_e4m3_matches_fp32_reference(modules, causal, shape):
    check_e4m3_call(module(modules, "flashcore_wgmma"), "flashcore_wgmma", shape, causal, ("e4m3", causal, shape))


@pytest.mark.parametrize("config", ["c1n128", "c2n128", "c2n128p", "c3n128", "c3n128p", "c2n176p", "c2n128-tiles"])
@pytest.mark.parametrize("causal", [False, True], ids=["noncausal", "causal"])
@pytest.mark.parametrize("shape", [(2, 3, 300, 257, 64), (1, 2, 200, 333, 128), (3, 20, 1100, 900, 128),
                                   (4, 17, 1000, 1000, 64)], ids=["D64", "D128", "D128persistent", "D64persistent"])
def test_every_wgmma_e4m3_tile_config(modules, monkeypatch, config, causal, shape):
    mod = module(modules, "flashcore_wgmma")
    monkeypatch.setenv("FLASHCORE_WGMMA_CONFIG", config)
    check_e4m3_call(mod, f"flashcore_wgmma[{config}]", shape, causal, ("e4m3", config, causal, shape))


@pytest.mark.parametrize("kernel", [k for k in KERNELS if k != "flashcore_wgmma"])
def test_only_wgmma_takes_e4m3(modules, kernel):
    q, k, v = (t.to(torch.float8_e4m3fn) for t in _good())
    with pytest.raises(RuntimeError, match=r"this kernel does not take Float8_e4m3fn inputs \(flashcore_wgmma does\)"):
        modules[kernel].forward(q, k, v, False)


def test_e4m3_output_is_bf16(modules):
    mod = module(modules, "flashcore_wgmma")
    q, k, v = (t.to(torch.float8_e4m3fn) for t in _good())
    assert mod.forward(q, k, v, False).dtype == torch.bfloat16
    with pytest.raises(RuntimeError, match=r"out must be BFloat16 for Float8_e4m3fn inputs, got Half"):
        mod.forward(q, k, v, False, out=torch.empty(q.shape, dtype=torch.float16, device="cuda"))
    with pytest.raises(RuntimeError, match=r"k must have the dtype of q \(Float8_e4m3fn\), got Half"):
        mod.forward(q, k.half(), v, False)
