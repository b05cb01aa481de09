"""Which builds cannot share a process (issue 26): sources that register PyTorch ops."""

import pytest

from gate.compiling.build import registers_torch_ops
from gate.domain import KernelSpec


def kernel(*sources: str) -> KernelSpec:
    return KernelSpec(name="k", sources=list(sources), workload="gemm")


@pytest.mark.parametrize("line", [
    "TORCH_LIBRARY(gate_probe, m) { m.def(\"add(Tensor a) -> Tensor\"); }",
    "TORCH_LIBRARY_FRAGMENT(gate_probe, m) {",
    "TORCH_LIBRARY_IMPL(gate_probe, CUDA, m) { m.impl(\"add\", &add); }",
    "  TORCH_LIBRARY_IMPL (gate_probe, CUDA, m) {",
])
def test_each_registration_macro_is_found(tmp_path, line):
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "ops.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "csrc" / "bind.cpp").write_text(f"#include <torch/library.h>\n{line}\n")
    assert registers_torch_ops(kernel("csrc/ops.cu", "csrc/bind.cpp"), tmp_path)


def test_a_pybind11_extension_and_lookalike_names_register_nothing(tmp_path):
    (tmp_path / "k.cu").write_text("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"forward\", &forward); }\n"
                                   "#define MY_TORCH_LIBRARY_NAME \"x\"\nint TORCH_LIBRARY_COUNT = 1;\n")
    assert not registers_torch_ops(kernel("k.cu"), tmp_path)


def test_only_the_kernels_own_sources_are_read(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "unlisted.cpp").write_text("TORCH_LIBRARY(other, m) {}\n")
    (tmp_path.parent / "outside.cpp").write_text("TORCH_LIBRARY(other, m) {}\n")
    assert not registers_torch_ops(kernel("k.cu", "missing.cu", "../outside.cpp"), tmp_path)
