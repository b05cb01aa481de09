"""Which builds cannot share a process (issue 26): sources that register PyTorch ops."""

import pytest

from gate.compiling.build import module_registers_ops, registers_torch_ops
from gate.domain import KernelSpec
from gate.manifest.module_name import registering_file


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


def test_a_registration_through_kernel_builders_macro_or_in_an_included_header_is_found(tmp_path):
    (tmp_path / "torch-ext").mkdir()
    (tmp_path / "torch-ext" / "torch_binding.cpp").write_text(
        '#include "registration.h"\nTORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) { ops.def("relu"); }\n')
    assert registers_torch_ops(kernel("torch-ext/torch_binding.cpp"), tmp_path)
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "ops.h").write_text("TORCH_LIBRARY(gate_probe, m) { m.def(\"add\"); }\n")
    (tmp_path / "bind.cpp").write_text('#include <ops.h>\nint unused;\n')
    spec = KernelSpec(name="k", sources=["bind.cpp"], workload="gemm", cxx_flags=["-Iinclude"])
    assert registers_torch_ops(spec, tmp_path)
    assert registering_file(spec, tmp_path) == "include/ops.h"
    assert not registers_torch_ops(kernel("bind.cpp"), tmp_path)     # without -Iinclude the header is not found


def test_the_built_module_tells_by_its_symbols_whether_it_registers_ops(tmp_path):
    """The sure way: the static functions and objects torch/library.h's macros define, read from a
    module's ELF symbol names (these are the names g++ gives them with torch 2.13)."""
    so = tmp_path / "m.so"
    elf = _elf(b"\0_ZL24TORCH_LIBRARY_init_myextRN5torch7LibraryE\0_ZL31TORCH_LIBRARY_static_init_myext\0")
    so.write_bytes(elf)
    assert module_registers_ops(so)
    so.write_bytes(_elf(b"\0PyInit__C\0_Z7forwardv\0"))
    assert not module_registers_ops(so)
    so.write_bytes(b"not an ELF file at all")
    assert not module_registers_ops(so) and not module_registers_ops(tmp_path / "missing.so")


def _elf(strtab: bytes) -> bytes:
    """A minimal 64-bit ELF file with a `.strtab` (and the section-name table every ELF file has)."""
    import struct

    names = b"\0.shstrtab\0.strtab\0"
    body_at = 64
    shoff = body_at + len(names) + len(strtab)
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHH", header, 0x3A, 64, 3, 1)
    sections = [bytes(64),
                struct.pack("<IIQQQQ", 1, 3, 0, 0, body_at, len(names)) + bytes(24),
                struct.pack("<IIQQQQ", 11, 3, 0, 0, body_at + len(names), len(strtab)) + bytes(24)]
    return bytes(header) + names + strtab + b"".join(sections)
