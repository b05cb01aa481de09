import shutil
import subprocess
from pathlib import Path

import pytest

from gate.compiling.build_cache import ObjectCache, Toolchain, local_includes, object_key

TOOLS = Toolchain(torch_version="2.11.0", cuda_version="13.0", compiler_version="nvcc 13.0.88")
CMD = ["nvcc", "-O3", "-gencode=arch=compute_90,code=sm_90"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "extension").mkdir()
    (tmp_path / "kernels" / "k.cu").write_text('#include "params.h"\n__global__ void k() {}\n')
    (tmp_path / "kernels" / "params.h").write_text('#include "deep.h"\nstruct P { int n; };\n')
    (tmp_path / "kernels" / "deep.h").write_text("#define DEPTH 2\n")
    (tmp_path / "extension" / "bind.cpp").write_text(
        '#include <torch/extension.h>\n#include "../kernels/params.h"\nint f();\n')
    (tmp_path / "unrelated.h").write_text("#define X 1\n")
    return tmp_path


def key(repo: Path, rel: str, command=CMD, tools=TOOLS) -> str:
    return object_key(repo / rel, command, tools, [repo], repo)


def test_local_includes_follow_quoted_includes_recursively(repo):
    found = local_includes(repo / "extension" / "bind.cpp", [repo], repo)
    assert [p.name for p in found] == ["deep.h", "params.h"]


def test_local_includes_skip_files_outside_the_repository(repo, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.h").write_text("int s;\n")
    (repo / "kernels" / "k.cu").write_text(f'#include "{outside}/secret.h"\n')
    assert local_includes(repo / "kernels" / "k.cu", [repo], repo) == []


def test_key_is_stable_for_unchanged_inputs(repo):
    assert key(repo, "kernels/k.cu") == key(repo, "kernels/k.cu")


def test_key_changes_with_the_source(repo):
    before = key(repo, "kernels/k.cu")
    (repo / "kernels" / "k.cu").write_text('#include "params.h"\n__global__ void k2() {}\n')
    assert key(repo, "kernels/k.cu") != before


def test_key_changes_with_a_header_two_levels_down(repo):
    before = key(repo, "extension/bind.cpp")
    (repo / "kernels" / "deep.h").write_text("#define DEPTH 3\n")
    assert key(repo, "extension/bind.cpp") != before


def test_key_ignores_files_the_source_does_not_include(repo):
    before = key(repo, "extension/bind.cpp")
    (repo / "unrelated.h").write_text("#define X 2\n")
    assert key(repo, "extension/bind.cpp") == before


def test_kernel_only_change_keeps_the_binding_key(repo):
    """A revision that edits only the kernel .cu must hit the cache for the binding."""
    binding, kernel = key(repo, "extension/bind.cpp"), key(repo, "kernels/k.cu")
    (repo / "kernels" / "k.cu").write_text('#include "params.h"\n__global__ void faster() {}\n')
    assert key(repo, "extension/bind.cpp") == binding
    assert key(repo, "kernels/k.cu") != kernel


@pytest.mark.parametrize("tools", [
    Toolchain("2.12.0", "13.0", "nvcc 13.0.88"),
    Toolchain("2.11.0", "12.8", "nvcc 13.0.88"),
    Toolchain("2.11.0", "13.0", "nvcc 13.1.0"),
])
def test_key_changes_with_any_toolchain_version(repo, tools):
    assert key(repo, "kernels/k.cu", tools=tools) != key(repo, "kernels/k.cu")


def test_key_changes_with_flags_and_arch(repo):
    assert key(repo, "kernels/k.cu", command=[*CMD, "-DFAST"]) != key(repo, "kernels/k.cu")
    sm90a = ["nvcc", "-O3", "-gencode=arch=compute_90a,code=sm_90a"]
    assert key(repo, "kernels/k.cu", command=sm90a) != key(repo, "kernels/k.cu")


def test_key_does_not_depend_on_where_the_checkout_lives(repo, tmp_path_factory):
    copy = tmp_path_factory.mktemp("other-checkout") / "repo"
    shutil.copytree(repo, copy)
    assert key(copy, "extension/bind.cpp") == key(repo, "extension/bind.cpp")


def test_cache_put_then_get_returns_the_object_and_its_log(tmp_path):
    cache = ObjectCache(tmp_path / "cache")
    obj = tmp_path / "x.o"
    obj.write_bytes(b"\x7fELF...")
    assert cache.get("ab" * 32) is None
    stored = cache.put("ab" * 32, obj, "ptxas info: Used 10 registers")
    assert cache.get("ab" * 32) == stored and stored.read_bytes() == b"\x7fELF..."
    assert cache.log("ab" * 32) == "ptxas info: Used 10 registers"
    assert not list((tmp_path / "cache").rglob(".tmp-*"))


@pytest.mark.nvcc
def test_real_nvcc_compile_is_cached_and_reused(repo, tmp_path):
    """Compile a tiny plain-CUDA kernel with nvcc, store it, and find it under the same key."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not on PATH")
    from gate.compiling.toolchain import gencode
    from gate.nvidia.compiler import run_tool

    command = [nvcc, "-O3", "-Xptxas", "-v", gencode("sm_90")]
    k = object_key(repo / "kernels" / "k.cu", command, TOOLS, [repo], repo)
    out = tmp_path / "k.o"
    run = run_tool([*command, "-c", "kernels/k.cu", "-o", str(out)], cwd=repo, timeout_s=120)
    assert run.ok, run.output
    assert "Compiling entry function '_Z1kv' for 'sm_90'" in run.output
    cache = ObjectCache(tmp_path / "cache")
    cache.put(k, out, run.output)
    again = object_key(repo / "kernels" / "k.cu", command, TOOLS, [repo], repo)
    hit = cache.get(again)
    assert hit is not None
    symbols = subprocess.run(["nm", str(hit)], capture_output=True, text=True, check=True).stdout
    assert "_Z1kv" in symbols or "__device_stub__Z1kv" in symbols


def test_sass_histograms_are_kept_per_key_and_stamp(tmp_path):
    cache = ObjectCache(tmp_path / "cache")
    histograms = {"_Z6kernelv": {"HMMA": 8, "LDG": 4}}
    assert cache.sass("ab" * 32, "cuobjdump format 1") is None
    cache.put_sass("ab" * 32, "cuobjdump format 1", histograms)
    assert cache.sass("ab" * 32, "cuobjdump format 1") == histograms
    assert cache.sass("ab" * 32, "nvdisasm format 1") is None        # another tool: disassemble again
    assert cache.sass("ab" * 32, "cuobjdump format 2") is None        # another parser format
    assert cache.sass("cd" * 32, "cuobjdump format 1") is None


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"stamp": "s", "functions": {"f": {"HMMA": "8"}}}',
                                  '{"stamp": "s", "functions": ["f"]}', '{"stamp": "s"}'])
def test_a_damaged_sass_entry_is_ignored_not_trusted(tmp_path, text):
    cache = ObjectCache(tmp_path / "cache")
    cache.put_sass("ab" * 32, "s", {})
    (tmp_path / "cache" / "ab" / f"{'ab' * 32}.sass.json").write_text(text)
    assert cache.sass("ab" * 32, "s") is None


def test_angle_includes_of_the_checkouts_own_headers_are_keyed(repo):
    """A vendored library under an `-I` folder of the checkout (CUTLASS's `<cute/tensor.hpp>`)."""
    vendored = repo / "third_party" / "include" / "lib"
    vendored.mkdir(parents=True)
    (vendored / "tile.hpp").write_text("#pragma once\n#include <lib/detail.hpp>\n")
    (vendored / "detail.hpp").write_text("#define TILE 64\n")
    (repo / "kernels" / "k.cu").write_text("#include <lib/tile.hpp>\n#include <vector>\n__global__ void k() {}\n")
    dirs = [repo, repo / "third_party" / "include"]
    assert [p.name for p in local_includes(repo / "kernels" / "k.cu", dirs, repo)] == ["detail.hpp", "tile.hpp"]
    before = object_key(repo / "kernels/k.cu", CMD, TOOLS, dirs, repo)
    (vendored / "detail.hpp").write_text("#define TILE 128\n")
    assert object_key(repo / "kernels/k.cu", CMD, TOOLS, dirs, repo) != before


def test_an_angle_include_is_not_looked_up_beside_the_including_file(repo):
    (repo / "kernels" / "vector").write_text("// not the standard library\n")
    (repo / "kernels" / "k.cu").write_text("#include <vector>\n")
    assert local_includes(repo / "kernels" / "k.cu", [repo], repo) == []


def test_a_precompiled_header_the_compiler_would_read_first_is_keyed(repo):
    """GCC takes `<dir>/<name>.gch` before `<dir>/<name>`, even where the header is not in that folder:
    a submission's planted `.gch` changes what the object holds, so it must change the key."""
    before = key(repo, "extension/bind.cpp")
    (repo / "kernels" / "params.h.gch").write_bytes(b"planted")
    with_beside = key(repo, "extension/bind.cpp")
    assert with_beside != before
    (repo / "torch").mkdir()
    (repo / "torch" / "extension.h.gch").write_bytes(b"planted too")   # found through -I<repo>
    assert key(repo, "extension/bind.cpp") not in (before, with_beside)
    assert {p.name for p in local_includes(repo / "extension" / "bind.cpp", [repo], repo)} == {
        "deep.h", "params.h", "params.h.gch", "extension.h.gch"}


def test_a_folder_of_precompiled_headers_is_keyed_by_its_files(repo):
    (repo / "kernels" / "params.h.gch").mkdir()
    (repo / "kernels" / "params.h.gch" / "c++17.gch").write_bytes(b"one")
    before = key(repo, "extension/bind.cpp")
    (repo / "kernels" / "params.h.gch" / "c++17.gch").write_bytes(b"two")
    assert key(repo, "extension/bind.cpp") != before


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_gcc_really_compiles_from_a_planted_precompiled_header(tmp_path):
    """Why `.gch` files enter the key: the same source and header make a different object."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.h").write_text("static const int kValue = 1;\n")
    (src / "main.cpp").write_text('#include "a.h"\nint value() { return kValue; }\n')
    cmd = ["g++", "-O2", "-c", "main.cpp"]
    subprocess.run([*cmd, "-o", "plain.o"], cwd=src, check=True)
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "a.h").write_text("static const int kValue = 2;\n")
    subprocess.run(["g++", "-O2", "-x", "c++-header", "a.h", "-o", str(src / "a.h.gch")], cwd=planted, check=True)
    subprocess.run([*cmd, "-o", "with_gch.o"], cwd=src, check=True)
    assert (src / "plain.o").read_bytes() != (src / "with_gch.o").read_bytes()
    assert "a.h.gch" in {p.name for p in local_includes(src / "main.cpp", [src], src)}
