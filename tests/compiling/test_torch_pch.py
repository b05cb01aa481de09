"""Precompiled torch headers (gate/compiling/torch_pch.py): real g++ compiles, with and without them.

Most tests use a small header tree laid out like torch's (`torch/extension.h` reading `c10/...`),
so they run where torch is not installed; the last ones precompile the installed torch's own
`torch/extension.h` and time a binding compile with and without it."""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gate.compiling import objects, torch_pch
from gate.compiling import toolchain as tc
from gate.compiling.build_cache import ObjectCache, Toolchain
from gate.compiling.torch_facts import TorchFacts
from gate.compiling.torch_pch_make import make
from tests.patience import HANG_S

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
torch_here = importlib.util.find_spec("torch") is not None

EXTENSION_H = """#pragma once
#include <c10/value.h>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>
#ifdef TORCH_TEST_VARIANT
inline int variant() { return 2; }
#else
inline int variant() { return 1; }
#endif
namespace torch {
inline std::map<std::string, std::vector<int>> table() { return {{"a", {C10_VALUE}}}; }
}
"""
BINDING = '#include <torch/extension.h>\n#include "local.h"\nint answer() { return torch::table()["a"][0] + twice(); }\n'
LOCAL_H = "#pragma once\n#include <torch/extension.h>   // again: the precompiled one is in already\n" \
          "inline int twice() { return 2 * variant(); }\n"


def small_torch(tmp_path: Path) -> tc.Tools:
    """The gate's tools with a small header tree standing where torch's include directory would."""
    inc = tmp_path / "torch-include"
    (inc / "torch").mkdir(parents=True)
    (inc / "c10").mkdir()
    (inc / "torch" / "extension.h").write_text(EXTENSION_H)
    (inc / "c10" / "value.h").write_text("#pragma once\n#define C10_VALUE 7\n")
    cxx = shutil.which("g++")
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    torch = TorchFacts(torch_version="small", cuda_version="none", torch_file="", includes=(str(inc),), libs=(),
                       defines=("-DTORCH_API_INCLUDE_EXTENSION_H",), nvcc_flags=())
    return tc.Tools(nvcc="nvcc", cxx=cxx, cuda_home=tmp_path, versions=Toolchain("small", "none", version),
                    torch=torch, torch_std="-std=c++17", cuda_includes=())


def checkout(tmp_path: Path, name: str, binding: str = BINDING, **files: str) -> Path:
    repo = tmp_path / name
    repo.mkdir()
    (repo / "b.cpp").write_text(binding)
    (repo / "local.h").write_text(LOCAL_H)
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return repo


def compile_binding(tmp_path: Path, tools: tc.Tools, repo: Path, pch: torch_pch.Precompiled | None,
                    cache: str) -> objects.CompiledObject:
    """The binding as the build compiles it (`objects.compile_object`, in the box), into its own cache."""
    command = tools.cxx_command("ext")
    key = objects.key_of(repo / "b.cpp", "b.cpp", command, tools.versions, repo)
    return objects.compile_object("b.cpp", command, key, repo, tmp_path / f"out-{cache}",
                                  ObjectCache(tmp_path / cache), 120, pch)


def header_tree(command: list[str], repo: Path) -> str:
    """g++'s `-H` account of the binding's includes: `! x.gch` is a precompiled header it used."""
    run = subprocess.run([*command, "-H", "-fsyntax-only", "b.cpp"], cwd=repo, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stderr


def test_a_binding_whose_first_include_is_precompiled_compiles_from_it_into_the_same_object(tmp_path):
    tools = small_torch(tmp_path)
    (made,) = make(tmp_path / "pch", tools, ["torch/extension.h"])
    assert made.state == "made", made.detail
    folder = Path(made.detail)
    assert (folder / "torch" / "extension.h").read_text() == "#include_next <torch/extension.h>\n"
    assert [m.state for m in make(tmp_path / "pch", tools, ["torch/extension.h"])] == ["there"]

    repo = checkout(tmp_path, "repo")
    pch = torch_pch.Precompiled(tmp_path / "pch", tools.versions)
    offered = pch.offer(tools.cxx_command("ext"), repo / "b.cpp", repo)
    assert offered.note == "precompiled torch/extension.h offered"
    tree = header_tree(offered.command, repo)
    assert f"! {folder}/torch/extension.h.gch" in tree.splitlines()
    assert "c10/value.h" not in tree                            # read from the .gch, not from the tree
    with_it, without = (compile_binding(tmp_path, tools, repo, pch, "with"),
                        compile_binding(tmp_path, tools, repo, None, "without"))
    assert with_it.ok and without.ok, with_it.log + without.log
    assert with_it.pch == "precompiled torch/extension.h offered" and without.pch == ""
    assert with_it.obj.read_bytes() == without.obj.read_bytes()
    assert with_it.obj.name == without.obj.name                 # one key: the cache does not care


def test_gcc_reads_the_header_itself_where_the_precompiled_one_does_not_fit(tmp_path):
    tools = small_torch(tmp_path)
    make(tmp_path / "pch", tools, ["torch/extension.h"])
    pch = torch_pch.Precompiled(tmp_path / "pch", tools.versions)
    # A macro the header reads, defined before it: GCC refuses the .gch, says why, reads the header.
    defined = checkout(tmp_path, "defined", "#define TORCH_TEST_VARIANT 1\n" + BINDING)
    with_it = compile_binding(tmp_path, tools, defined, pch, "with")
    assert with_it.ok and with_it.pch == "precompiled torch/extension.h offered"
    assert "not used because `TORCH_TEST_VARIANT' is defined [-Winvalid-pch]" in with_it.log
    assert with_it.obj.read_bytes() == compile_binding(tmp_path, tools, defined, None, "without").obj.read_bytes()
    # Another flag (here another -std) is another command line: nothing is offered.
    other = dict(tools.__dict__, torch_std="-std=c++20")
    assert pch.offer(tc.Tools(**other).cxx_command("ext"), defined / "b.cpp", defined).note == ""
    # A first include that is not precompiled: the command is left as it was.
    late = checkout(tmp_path, "late", "#include <vector>\n" + BINDING)
    command = tools.cxx_command("ext")
    assert pch.offer(command, late / "b.cpp", late) == torch_pch.Offer(command)


def test_a_checkout_file_that_would_stand_in_for_a_torch_header_keeps_the_precompiled_one_out(tmp_path):
    tools = small_torch(tmp_path)
    make(tmp_path / "pch", tools, ["torch/extension.h"])
    pch = torch_pch.Precompiled(tmp_path / "pch", tools.versions)
    # `-I.` comes before torch's directories: without a .gch, g++ reads the checkout's c10/value.h.
    repo = checkout(tmp_path, "repo", **{"c10/value.h": "#pragma once\n#define C10_VALUE 8\n"})
    offered = pch.offer(tools.cxx_command("ext"), repo / "b.cpp", repo)
    assert offered.note == "precompiled torch/extension.h not used: the checkout's c10/value.h comes before torch's"
    assert offered.command == tools.cxx_command("ext")
    assert ".. ./c10/value.h" in header_tree(offered.command, repo).splitlines()   # what torch.h reads here


def test_a_header_changed_since_it_was_made_is_not_offered_until_it_is_made_again(tmp_path):
    tools = small_torch(tmp_path)
    make(tmp_path / "pch", tools, ["torch/extension.h"])
    pch = torch_pch.Precompiled(tmp_path / "pch", tools.versions)
    repo = checkout(tmp_path, "repo")
    value = tmp_path / "torch-include" / "c10" / "value.h"
    value.write_text("#pragma once\n#define C10_VALUE 9\n")          # torch reinstalled, same version
    assert pch.offer(tools.cxx_command("ext"), repo / "b.cpp", repo).note == (
        f"precompiled torch/extension.h not used: {value} changed since it was made")
    assert [m.state for m in make(tmp_path / "pch", tools, ["torch/extension.h"])] == ["made"]
    assert pch.offer(tools.cxx_command("ext"), repo / "b.cpp", repo).note == "precompiled torch/extension.h offered"


def test_a_header_that_does_not_compile_is_recorded_once_and_never_offered(tmp_path):
    tools = small_torch(tmp_path)
    (tmp_path / "torch-include" / "torch" / "cuda_only.h").write_text("#error needs CUDA's headers\n")
    (failed,) = make(tmp_path / "pch", tools, ["torch/cuda_only.h"])
    assert failed.state == "failed" and "needs CUDA's headers" in failed.detail
    (again,) = make(tmp_path / "pch", tools, ["torch/cuda_only.h"])
    assert again.state == "failed" and again.seconds == 0         # the stored answer, not a second compile
    folder = tmp_path / "pch" / torch_pch.key(tools.cxx_command("x"), tools.versions)
    assert not (folder / "torch" / "cuda_only.h").exists()        # no stub: nothing stands in the search path
    (tmp_path / "torch-include" / "torch" / "cuda_only.h").write_text("#pragma once\n")   # the CUDA build came
    assert [m.state for m in make(tmp_path / "pch", tools, ["torch/cuda_only.h"], retry=True)] == ["made"]


def test_a_second_maker_leaves_the_headers_to_the_first(tmp_path):
    tools = small_torch(tmp_path)
    folder = tmp_path / "pch" / torch_pch.key(tools.cxx_command("x"), tools.versions)
    folder.mkdir(parents=True)
    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert [m.state for m in make(tmp_path / "pch", tools, ["torch/extension.h"])] == ["busy"]
    assert not (folder / "torch" / "extension.h.gch").exists()


def test_a_box_reads_the_precompiled_headers_and_cannot_change_them(tmp_path):
    from gate import box
    from gate.domain.job import RunOptions
    from gate.executors.child import launch

    if shutil.which("bwrap") is None or not box.enabled():
        pytest.skip("needs bubblewrap")
    pch = tmp_path / "data" / "torch-pch"
    pch.mkdir(parents=True)
    (pch / "torch.h.gch").write_text("made by the gate")
    (pch / "torch-facts.json").write_text("{}")       # torch's flags, which a fresh child compiles with
    options = RunOptions(build_cache_dir=str(tmp_path / "data" / "build-cache"), pch_dir=str(pch))
    spec = launch(tmp_path / "job", options, (), hidden=(tmp_path / "data",)).box
    (tmp_path / "job").mkdir()
    run = box.run(spec, ["sh", "-c", f"cat {pch}/torch.h.gch; echo changed > {pch}/torch.h.gch; "
                         f"echo x > facts; mv facts {pch}/torch-facts.json; rm {pch}/torch-facts.json"],
                  cwd=tmp_path / "job", timeout_s=60)
    assert run.stdout == "made by the gate" and run.stderr.count("Read-only file system") == 3, run.stderr
    assert (pch / "torch.h.gch").read_text() == "made by the gate" and (pch / "torch-facts.json").read_text() == "{}"
    inside = RunOptions(build_cache_dir=str(tmp_path / "cache"), pch_dir=str(tmp_path / "cache" / "pch"))
    with pytest.raises(box.BoxError, match="must not lie inside a folder a job writes"):
        launch(tmp_path / "job", inside, (), ())


@pytest.mark.parametrize("source, first", [
    ("#include <torch/extension.h>\n", "torch/extension.h"),
    ('// a binding\n/* with\n a comment */\n#pragma once\n#define X 1\n# include "torch/all.h"\n', "torch/all.h"),
    ("/* c */ #include <ATen/ATen.h>\n#include <torch/extension.h>\n", "ATen/ATen.h"),
    ("#define LONG \\\n  1\n#include <torch/extension.h>\n", "torch/extension.h"),
    ("int x;\n#include <torch/extension.h>\n", None),
    ("", None),
])
def test_the_first_include_of_a_source(source, first):
    assert torch_pch.first_include(source.encode()) == first


# --- the installed torch ------------------------------------------------------------------------

TORCH_BINDING = """#include <torch/extension.h>
#include <vector>

at::Tensor forward(const at::Tensor& x, int64_t n) {
  TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
  return x * static_cast<double>(n);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "x times n"); }
"""


@pytest.mark.skipif(not torch_here, reason="needs torch (a CPU build is enough)")
def test_gate_pch_makes_torchs_extension_h_and_a_binding_compiles_from_it_in_about_half_the_time(tmp_path):
    tools = tc.discover()
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "GATE_TORCH_PCH": "torch/extension.h"}
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "gate.cli", "pch", "--data-dir", str(data)], env=env,
                         capture_output=True, text=True, timeout=600)
    made_s = time.perf_counter() - start
    assert run.returncode == 0 and "torch/extension.h: made in" in run.stdout, run.stdout + run.stderr
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "b.cpp").write_text(TORCH_BINDING)
    pch = torch_pch.Precompiled(data / "torch-pch", tools.versions)
    command = tools.cxx_command("ext")
    offered = pch.offer(command, repo / "b.cpp", repo)
    folder = data / "torch-pch" / torch_pch.key(command, tools.versions)
    assert f"! {folder}/torch/extension.h.gch" in header_tree(offered.command, repo).splitlines()
    key = objects.key_of(repo / "b.cpp", "b.cpp", command, tools.versions, repo)
    timed = {}
    for label, given in (("without", None), ("with", pch)):
        start = time.perf_counter()
        timed[label] = objects.compile_object("b.cpp", command, key, repo, tmp_path / f"out-{label}",
                                              ObjectCache(tmp_path / label), 600, given)
        timed[f"{label}_s"] = time.perf_counter() - start
        assert timed[label].ok, timed[label].log
    assert "-Winvalid-pch" not in timed["with"].log and timed["with"].pch == "precompiled torch/extension.h offered"
    assert timed["with"].obj.read_bytes() == timed["without"].obj.read_bytes()
    print(f"\nmade in {made_s:.1f} s; binding {timed['without_s']:.1f} s without, {timed['with_s']:.1f} s with")
    assert timed["with_s"] < 0.75 * timed["without_s"]


@pytest.mark.skipif(not torch_here, reason="needs torch: the maker imports it")
def test_the_background_maker_ends_with_the_process_that_started_it(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        "from gate.config import Settings\n"
        "from gate.commands.pch import precompile_in_background\n"
        f"proc = precompile_in_background(Settings(data_dir={str(tmp_path / 'data')!r}))\n"
        "print(proc.pid, flush=True)\n"
        "time.sleep(600)\n")], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    maker = int(parent.stdout.readline())
    time.sleep(3)
    assert _alive(maker)
    parent.kill()                                                   # no exit handlers run
    parent.wait()
    parent.stdout.close()
    deadline = time.monotonic() + HANG_S     # a hang guard: returns once the maker is gone
    while _alive(maker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(maker)
    assert not any(_alive(int(p)) for p in _group(maker))          # its compiler too


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _group(pgid: int) -> list[str]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            found.append(stat.parent.name)
    return found
