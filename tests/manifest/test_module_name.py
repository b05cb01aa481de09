"""The extension's import name is the one its sources define (issue 26): a hand-written `PyInit__C`
or `PYBIND11_MODULE(_C, m)` decides it, a manifest `module` may state it, and only sources that leave
it to `TORCH_EXTENSION_NAME` get the name derived from the kernel's."""

from pathlib import Path

import pytest

from gate.compiling import objects
from gate.domain import KernelSpec
from gate.errors import ManifestError
from gate.manifest import module_name
from gate.manifest.load import load_manifest


def kernel(tmp_path: Path, binding: str, *, name: str = "conv", module: str = "") -> KernelSpec:
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "binding.cpp").write_text(binding)
    return KernelSpec(name=name, sources=["k.cu", "binding.cpp"], module=module)


@pytest.mark.parametrize(("name", "expected"), [("flash-attn", "flash_attn"), ("_C", "_C"),
                                                ("2d.conv", "k_2d_conv"), ("conv", "conv")])
def test_derived_name_prefixes_only_a_leading_digit(name, expected):
    assert module_name.derived_name(name) == expected


def test_a_hand_written_pyinit_names_the_module(tmp_path):
    spec = kernel(tmp_path, 'extern "C" PyObject* PyInit__C(void) { return nullptr; }\n')
    assert objects.extension_name(spec, tmp_path) == "_C"


def test_a_literal_pybind11_module_names_the_module(tmp_path):
    spec = kernel(tmp_path, "PYBIND11_MODULE(causal_conv1d_cuda, m) { }\n")
    assert objects.extension_name(spec, tmp_path) == "causal_conv1d_cuda"


def test_torch_extension_name_leaves_the_name_to_the_gate(tmp_path):
    spec = kernel(tmp_path, "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { }\n", name="9conv")
    assert objects.extension_name(spec, tmp_path) == "k_9conv"


def test_the_manifest_module_agrees_with_the_sources(tmp_path):
    spec = kernel(tmp_path, "PyObject* PyInit__C(void);\n", module="_C")
    assert objects.extension_name(spec, tmp_path) == "_C"
    assert objects.extension_name(kernel(tmp_path, "// no binding\n", module="ops"), tmp_path) == "ops"


def test_a_manifest_module_the_sources_contradict_is_refused(tmp_path):
    spec = kernel(tmp_path, "PyObject* PyInit__C(void);\n", module="ops")
    with pytest.raises(ManifestError, match=r"module = 'ops', but the sources define PyInit__C"):
        objects.extension_name(spec, tmp_path)


def test_two_defined_names_ask_for_the_manifest_key(tmp_path):
    spec = kernel(tmp_path, "PYBIND11_MODULE(a, m) {}\nPYBIND11_MODULE(b, m) {}\n")
    with pytest.raises(ManifestError, match=r"several modules \(a, b\).*`module`"):
        objects.extension_name(spec, tmp_path)


def manifest(tmp_path: Path, extra: str, shapes: str = "[{n = 4}]") -> str:
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "wl.py").write_text("def make(kernel):\n    pass\n")
    return (f'[[kernel]]\nname = "k"\nsources = ["k.cu"]\nworkload = "wl:make"\nshapes = {shapes}\n{extra}')


def test_the_manifest_reads_module_and_kernels(tmp_path):
    (tmp_path / "gate.toml").write_text(manifest(tmp_path, 'module = "_C"\nkernels = ["*conv1d_fwd<*>"]\n'))
    spec = load_manifest(tmp_path).kernels[0]
    assert (spec.module, spec.kernels) == ("_C", ["*conv1d_fwd<*>"])


@pytest.mark.parametrize(("extra", "words"), [
    ('module = "my-ext"', r"kernel\[0\]\.module: expected a Python identifier"),
    ('module = "1ext"', r"kernel\[0\]\.module: expected a Python identifier"),
    ('kernels = ["' + "k" * 201 + '"]', r"kernel\[0\]\.kernels\[0\]: 201 characters; at most 200"),
    ("kernels = [" + ", ".join(['"k"'] * 33) + "]", r"kernel\[0\]\.kernels: 33 patterns; at most 32"),
])
def test_bad_module_or_kernel_patterns_are_refused(tmp_path, extra, words):
    (tmp_path / "gate.toml").write_text(manifest(tmp_path, extra + "\n"))
    with pytest.raises(ManifestError, match=words):
        load_manifest(tmp_path)


def test_the_loader_refuses_a_module_the_sources_contradict(tmp_path):
    text = manifest(tmp_path, 'module = "ops"\n')
    (tmp_path / "k.cu").write_text('extern "C" PyObject* PyInit__C(void);\n__global__ void k() {}\n')
    (tmp_path / "gate.toml").write_text(text)
    with pytest.raises(ManifestError, match=r"gate.toml: kernel\[0\]\.module: module = 'ops', but the sources "
                                            r"define PyInit__C"):
        load_manifest(tmp_path)


def test_an_op_kernel_without_function_is_refused_saying_what_to_write(tmp_path):
    text = manifest(tmp_path, "")
    (tmp_path / "k.cu").write_text('#include "registration.h"\n'
                                   "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) { ops.def(\"relu\"); }\n")
    (tmp_path / "gate.toml").write_text(text)
    with pytest.raises(ManifestError, match=r"kernel\[0\]\.function: missing: k\.cu registers torch ops and no "
                                            r"source defines a pybind11 module.*function = \"myop\" is "
                                            r"torch\.ops\.k\.myop"):
        load_manifest(tmp_path)
    (tmp_path / "gate.toml").write_text(text + 'function = "relu"\n')
    assert load_manifest(tmp_path).kernels[0].function == "relu"


def test_a_pybind11_kernel_that_also_registers_ops_keeps_the_forward_default(tmp_path):
    (tmp_path / "gate.toml").write_text(manifest(tmp_path, ""))
    (tmp_path / "k.cu").write_text("TORCH_LIBRARY(k, m) {}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n")
    assert load_manifest(tmp_path).kernels[0].function == "forward"
