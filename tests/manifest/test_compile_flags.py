"""A manifest's extra compiler flags (`nvcc_flags`, `cxx_flags`): the allowlist, where they go on the
command line, and the headers they make part of an object's key."""

from pathlib import Path

import pytest

from gate.compiling import objects
from gate.compiling.build_cache import Toolchain
from gate.compiling.toolchain import Tools
from gate.compiling.torch_facts import TorchFacts
from gate.errors import ManifestError
from gate.manifest import compile_flags
from gate.manifest.load import load_manifest

HEAD = """
[[kernel]]
name = "conv"
sources = ["csrc/conv.cu", "csrc/bind.cpp"]
workload = "gemm"
shapes = [{m = 64, n = 64, k = 64}]
"""
# causal-conv1d's own nvcc flags (its setup.py), less --threads 4 (one arch per compile here).
CAUSAL_CONV1D = ["-O3", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
                 "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
                 "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
                 "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math",
                 "--ptxas-options=-v", "-lineinfo"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "csrc" / "include").mkdir(parents=True)
    (tmp_path / "csrc" / "conv.cu").write_text('#include "traits.h"\n__global__ void k() {}\n')
    (tmp_path / "csrc" / "include" / "traits.h").write_text("#define WIDTH 4\n")
    (tmp_path / "csrc" / "bind.cpp").write_text("// binding\n")
    return tmp_path


def manifest(repo: Path, extra: str):
    (repo / "gate.toml").write_text(HEAD + extra)
    return load_manifest(repo)


def test_a_real_repositorys_flags_are_accepted_in_order(repo):
    spec = manifest(repo, f"nvcc_flags = {CAUSAL_CONV1D!r}\ncxx_flags = ['-O3', '-DNDEBUG', '-Icsrc/include']\n"
                    .replace("'", '"')).kernels[0]
    assert spec.nvcc_flags == CAUSAL_CONV1D
    assert spec.cxx_flags == ["-O3", "-DNDEBUG", "-Icsrc/include"]


@pytest.mark.parametrize(("flag", "why"), [
    ("-ccbin=/tmp/evil", "not an allowed nvcc flag"),                 # another host compiler
    ("-Xcompiler=-fplugin=./x.so", "not an allowed nvcc flag"),       # gcc loads a shared object
    ("-o", "not an allowed nvcc flag"),
    ("--output-directory=/tmp", "not an allowed nvcc flag"),
    ("-include=/etc/passwd", "not an allowed nvcc flag"),
    ("-D A=1", "not an allowed nvcc flag"),                           # one word per flag
    ("-DX=$(touch pwned)", "not an allowed nvcc flag"),               # nvcc hands -D values to a shell
    ("-DX=`touch pwned`", "not an allowed nvcc flag"),
    ("-DX=1;id", "not an allowed nvcc flag"),
    ("-Icsrc/$(id)", "use letters, digits"),
    ("-I/usr/include", "must be a path relative to the repository root"),
    ("-I../outside", "leaves the repository"),
    ("-Icsrc/missing", "does not exist in the repository as a directory"),
    ("-Icsrc/conv.cu", "does not exist in the repository as a directory"),
    ("--ptxas-options=-v,--load-plugin", "not an allowed nvcc flag"),
])
def test_flags_off_the_allowlist_are_refused_naming_the_key_and_index(repo, flag, why):
    with pytest.raises(ManifestError) as err:
        manifest(repo, f'nvcc_flags = ["-O3", "{flag}"]\n')
    assert str(err.value).startswith("gate.toml: kernel[0].nvcc_flags[1]: ")
    assert why in str(err.value)


def test_nvcc_only_flags_are_refused_for_the_host_compiler(repo):
    with pytest.raises(ManifestError, match=r"kernel\[0\]\.cxx_flags\[0\]: '--use_fast_math' is not an allowed cxx"):
        manifest(repo, 'cxx_flags = ["--use_fast_math"]\n')


def test_a_flags_value_must_be_a_list_of_strings(repo):
    with pytest.raises(ManifestError, match=r"kernel\[0\]\.nvcc_flags: expected a list of strings"):
        manifest(repo, 'nvcc_flags = "-O3"\n')


def test_the_manifests_flags_come_after_torchs_so_a_minus_u_undoes_its_minus_d():
    torch = TorchFacts(torch_version="t", cuda_version="c", torch_file="", includes=(), libs=(), defines=(),
                       nvcc_flags=("-D__CUDA_NO_HALF_OPERATORS__",))
    tools = Tools(nvcc="nvcc", cxx="c++", cuda_home=Path("/cuda"), versions=Toolchain("t", "c", "n"), torch=torch,
                  torch_std="-std=c++17", cuda_includes=())
    command = tools.nvcc_command(["sm_90"], "ext", True, ["-U__CUDA_NO_HALF_OPERATORS__"])
    assert command.index("-U__CUDA_NO_HALF_OPERATORS__") > command.index("-D__CUDA_NO_HALF_OPERATORS__")
    assert tools.cxx_command("ext", ["-DNDEBUG"])[-1] == "-DNDEBUG"


def test_a_header_found_through_an_include_flag_is_part_of_the_objects_key(repo):
    """Without the -I directory in the key, an edit of csrc/include/traits.h would reuse a stale object."""
    source, versions = repo / "csrc" / "conv.cu", Toolchain("t", "c", "n")
    command = ["nvcc", "-O3", "-Icsrc/include"]
    before = objects.key_of(source, "csrc/conv.cu", command, versions, repo)
    (repo / "csrc" / "include" / "traits.h").write_text("#define WIDTH 3\n")
    assert objects.key_of(source, "csrc/conv.cu", command, versions, repo) != before


def test_include_dir_reads_only_one_word_include_flags():
    assert compile_flags.include_dir("-Icsrc") == "csrc"
    assert compile_flags.include_dir("-I") is None and compile_flags.include_dir("-O3") is None
