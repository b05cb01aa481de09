"""Shapes of a custom workload carry floats and strings (a softmax scale, an epsilon, a layout name);
anything else is refused naming `kernel[i].shapes[j].key` (issue 26)."""

import json

import pytest

from gate.domain import Shape
from gate.domain.codec import from_json, to_json
from gate.errors import ManifestError
from gate.manifest.load import load_manifest


def write(tmp_path, shapes: str, workload: str = "wl:make") -> None:
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "wl.py").write_text("def make(kernel):\n    pass\n")
    (tmp_path / "gate.toml").write_text(
        f'[[kernel]]\nname = "k"\nsources = ["k.cu"]\nworkload = "{workload}"\nshapes = {shapes}\n')


def test_float_and_string_parameters_are_kept_with_their_types(tmp_path):
    write(tmp_path, '[{s = 128, scale = 0.125, eps = 1e-5, layout = "bshd", causal = true}]')
    shape = load_manifest(tmp_path).kernels[0].shapes[0]
    assert shape.params == {"s": 128, "scale": 0.125, "eps": 1e-5, "layout": "bshd", "causal": True}
    assert shape.label == "s128_scale0.125_eps1e-05_layoutbshd_causal"
    assert shape.toml == '{s = 128, scale = 0.125, eps = 1e-05, layout = "bshd", causal = true}'


def test_a_shape_survives_the_json_round_trip_with_its_types():
    shape = Shape({"n": 4, "scale": 2.0, "layout": "nhwc", "causal": False})
    back = from_json(Shape, json.loads(json.dumps(to_json(shape))))
    assert back.params == shape.params
    assert [type(v) for v in back.params.values()] == [int, float, str, bool]


@pytest.mark.parametrize(("shape", "words"), [
    ("[{n = 4, scale = nan}]", r"kernel\[0\]\.shapes\[0\]\.scale: a float must be finite"),
    ('[{n = 4}, {n = 8, layout = "a b"}]', r"kernel\[0\]\.shapes\[1\]\.layout: a string must be"),
    ("[{n = 4, dims = [1, 2]}]", r"kernel\[0\]\.shapes\[0\]\.dims: expected a positive integer, a float, "
                                 r"a string or true/false, got \[1, 2\] \(list\)"),
    ("[{n = 0}]", r"kernel\[0\]\.shapes\[0\]\.n: an integer must be positive"),
])
def test_other_shape_values_are_refused_naming_the_key(tmp_path, shape, words):
    write(tmp_path, shape)
    with pytest.raises(ManifestError, match=words):
        load_manifest(tmp_path)


def test_a_builtin_workload_still_wants_positive_integer_dims(tmp_path):
    write(tmp_path, "[{m = 64, n = 64, k = 0.5}]", workload="gemm")
    with pytest.raises(ManifestError, match=r"kernel\[0\]\.shapes\[0\]\.k: expected a positive integer"):
        load_manifest(tmp_path)
