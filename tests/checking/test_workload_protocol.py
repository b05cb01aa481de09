"""The workload protocol's helpers for foreign kernels (issue 26): element sizes for FLOP/byte
declarations, and output arguments a kernel writes instead of returning a tensor."""

import pytest

from gate.checking import workloads
from gate.errors import ManifestError


@pytest.mark.parametrize(("dtype", "size"), [("float16", 2), ("bfloat16", 2), ("float32", 4), ("int8", 1),
                                             ("float64", 8)])
def test_dtype_bytes_gives_the_element_size(dtype, size):
    assert workloads.dtype_bytes(dtype) == size


def test_an_unknown_dtype_is_named():
    with pytest.raises(ValueError, match=r"no element size known for dtype 'half' \(known: float64"):
        workloads.dtype_bytes("half")


def test_the_builtin_bytes_use_the_element_size():
    from gate.domain import Shape
    shape = Shape({"m": 8, "n": 4, "k": 2})
    assert workloads.Gemm().dram_bytes(shape, "float32") == (8 + 4) * 2 * 4 + 8 * 4 * 2


class OutArg:
    outputs = ("out",)


def test_read_only_leaves_out_the_output_arguments():
    inputs = {"x": 1, "out": 2, "n": 3}
    assert workloads.read_only(OutArg(), inputs) == {"x": 1, "n": 3}
    assert workloads.read_only(object(), inputs) == inputs        # no `outputs`: everything is an input


def test_an_output_name_make_inputs_did_not_return_is_named():
    with pytest.raises(ManifestError, match=r"OutArg.outputs names out, which make_inputs did not return"):
        workloads.read_only(OutArg(), {"x": 1})


def test_outputs_must_be_a_tuple_of_names():
    class Bad:
        outputs = "out"             # a string, not a tuple: would read as three names
    with pytest.raises(ManifestError, match=r"Bad.outputs must be a tuple of input names, got 'out'"):
        workloads.output_names(Bad())


def test_torch_op_wants_namespace_and_op():
    pytest.importorskip("torch", reason="torch_op resolves through torch.ops")
    with pytest.raises(ValueError, match=r"expected 'namespace::op', got 'add_into'"):
        workloads.torch_op("add_into")
    with pytest.raises(LookupError, match=r"torch.ops has no gate_absent::op"):
        workloads.torch_op("gate_absent::op")


def test_entry_calls_the_modules_function_else_the_op_its_sources_registered_under_its_name():
    """Issue 43: `function` names a pybind11 function or an op; an op's namespace is the module's
    (TORCH_EXTENSION_NAME) unless the name says its own."""
    import types

    torch = pytest.importorskip("torch")
    from gate.checking.workloads import entry

    lib = torch.library.Library("gate_entry_probe", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    module = types.ModuleType("gate_build_0123.gate_entry_probe")
    module.forward = lambda x: x + 1
    x = torch.ones(2)
    assert entry(module, "forward")(x).tolist() == [2.0, 2.0]
    assert entry(module, "twice")(x).tolist() == [2.0, 2.0]
    assert entry(types.ModuleType("other"), "gate_entry_probe::twice")(x).tolist() == [2.0, 2.0]
    with pytest.raises(LookupError, match="gate_entry_probe::missing"):
        entry(module, "missing")
