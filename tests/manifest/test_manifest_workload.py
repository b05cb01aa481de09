"""A `module:callable` workload must exist when the manifest is loaded (read with ast: no import)."""

from pathlib import Path

import pytest

from gate.errors import ManifestError
from gate.manifest.load import load_manifest

MANIFEST = """
[[kernel]]
name = "mine"
sources = ["k.cu"]
workload = "{workload}"
shapes = [{{n = 1024}}]
"""


def repo_with(tmp_path: Path, workload: str, module: str) -> Path:
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "wl.py").write_text(module)
    (tmp_path / "gate.toml").write_text(MANIFEST.format(workload=workload))
    return tmp_path


@pytest.mark.parametrize("module", [
    "import torch\n\ndef make():\n    return object()\n",
    "class make:\n    pass\n",
    "from functools import partial\nmake = partial(dict)\n",
    "import torch\nfrom .impl import make\n",
])
def test_a_callable_bound_at_module_level_is_accepted_without_importing(tmp_path, module):
    (kernel,) = load_manifest(repo_with(tmp_path, "bench.wl:make", module)).kernels
    assert kernel.workload == "bench.wl:make"


@pytest.mark.parametrize(("module", "words"), [
    ("def other():\n    pass\n", "bench/wl.py defines no 'make' at module level"),
    ("def outer():\n    def make():\n        pass\n", "defines no 'make'"),
    ("def make(:\n", "bench/wl.py is not valid Python"),
])
def test_a_missing_or_unreadable_callable_is_refused_naming_the_key(tmp_path, module, words):
    with pytest.raises(ManifestError) as info:
        load_manifest(repo_with(tmp_path, "bench.wl:make", module))
    assert info.value.key == "kernel[0].workload"
    assert words in str(info.value)


def test_a_custom_workload_may_declare_float8_e4m3fn(tmp_path):
    repo = repo_with(tmp_path, "bench.wl:make", "def make():\n    return object()\n")
    (repo / "gate.toml").write_text(MANIFEST.format(workload="bench.wl:make") + 'dtypes = ["float8_e4m3fn"]\n')
    (kernel,) = load_manifest(repo).kernels
    assert kernel.dtypes == ["float8_e4m3fn"]          # its make_inputs decides what it can feed
