import pytest

from tests.samples.build import KERNEL_FILE, SAMPLES_DIR, apply_variant

BASE = (SAMPLES_DIR / "wmma_gemm" / KERNEL_FILE).read_text()


@pytest.mark.parametrize(("variant", "marker"), [
    ("unwritten_tile", "blockIdx.x == 0 && blockIdx.y == 0 && warp == 0"),
    ("bank_conflicts", "__shared__ float c_s[kTile][kTile];"),
    ("compile_error", "zero_value"),
    ("slower", "e < 8; ++e"),
    ("slower:24", "e < 24; ++e"),
    ("private_stream", "hide ? side : stream"),
    ("private_stream_late", "++calls > 16"),
    ("joined_stream", "cudaStreamWaitEvent(stream, done, 0)"),
    ("deferred_thread", ").detach();"),
    ("cache_by_pointer", "const void* ptrs[2]"),
    ("cache_by_checksum", "cudaMemcpyDeviceToHost"),
    ("input_modified", "const_cast<__half*>(p.a)"),
    ("out_of_bounds", "kk <= p.k"),
    ("endless_loop", "while (keep_spinning)"),
    ("more_work", "p.k / 16 * 5 + 99"),
    ("more_work:10", "p.k / 16 * 10 + 99"),
    ("skip_by_count", "gate_bump<<<1, 1, 0, stream>>>(0)"),
    ("skip_by_clock", "gate_bump<<<1, 1, 0, stream>>>(1)"),
    ("skip_one_tile", "gate_skip && blockIdx.x == 0"),
    ("skip_half", "gate_skip == 2 && (blockIdx.y & 1)"),
    ("legacy_stream", "<<<grid, kThreads>>>(params)"),
    ("per_thread_stream", "cudaStreamPerThread"),
    ("legacy_stream_more_work", "p.k / 16 * 33 + 99"),
    ("per_thread_stream_more_work", "cudaStreamPerThread"),
    ("profiler_aware", "CUDA_INJECTION64_PATH"),
])
def test_each_variant_edits_the_kernel_where_it_says(variant, marker):
    edited = apply_variant(BASE, variant)
    assert marker in edited and marker not in BASE


def test_bank_conflicts_keeps_the_launcher():
    assert "cudaError_t wmma_gemm_launch" in apply_variant(BASE, "bank_conflicts")


def test_an_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="unknown variant 'faster'"):
        apply_variant(BASE, "faster")


def test_every_catalogue_case_is_a_variant_with_a_named_outcome():
    from tests.samples.build import CATALOGUE, VARIANTS

    assert set(CATALOGUE) <= set(VARIANTS)
    assert all(verdict == "accept" or rule for verdict, rule in CATALOGUE.values())


def test_the_endless_loop_also_shortens_the_manifest_timeout(tmp_path):
    from tests.samples.build import make_repo

    repo, shas = make_repo(tmp_path, variants=["endless_loop"])
    import subprocess

    toml = subprocess.run(["git", "-C", str(repo), "show", f"{shas['endless_loop']}:gate.toml"],
                          capture_output=True, text=True, check=True).stdout
    assert "timeout_s = 60" in toml


def test_the_patching_initialiser_edits_the_binding_not_the_kernel(tmp_path):
    from tests.samples.build import BINDING_FILE, make_repo

    repo, shas = make_repo(tmp_path, variants=["patching_init"])
    import subprocess
    show = lambda path: subprocess.run(["git", "-C", str(repo), "show", f"{shas['patching_init']}:{path}"],  # noqa: E731
                                       capture_output=True, text=True, check=True).stdout
    assert "torch.cuda.Event.elapsed_time = lambda" in show(BINDING_FILE)
    assert show(KERNEL_FILE) == BASE
