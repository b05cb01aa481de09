import pytest

from tests.samples.build import KERNEL_FILE, SAMPLES_DIR, apply_variant

BASE = (SAMPLES_DIR / "wmma_gemm" / KERNEL_FILE).read_text()


@pytest.mark.parametrize(("variant", "marker"), [
    ("unwritten_tile", "blockIdx.x == 0 && blockIdx.y == 0 && warp == 0"),
    ("bank_conflicts", "__shared__ float c_s[kTile][kTile];"),
    ("compile_error", "zero_value"),
    ("slower", "e < 8; ++e"),
    ("slower:24", "e < 24; ++e"),
])
def test_each_variant_edits_the_kernel_where_it_says(variant, marker):
    edited = apply_variant(BASE, variant)
    assert marker in edited and marker not in BASE


def test_bank_conflicts_keeps_the_launcher():
    assert "cudaError_t wmma_gemm_launch" in apply_variant(BASE, "bank_conflicts")


def test_an_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="unknown variant 'faster'"):
        apply_variant(BASE, "faster")
