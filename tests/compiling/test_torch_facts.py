"""torch's saved facts (gate/compiling/torch_facts.py): a fresh process finds the compile flags without
importing torch, only while torch is the one they were read from, and gets the same command lines.

Most tests stand a small package named `torch` on the path, whose `__init__` fails when imported:
`discover` answering at all shows that nothing imported it. The last one compares with the installed
torch, where there is one."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gate.compiling import toolchain as tc
from gate.compiling import torch_facts
from gate.compiling.torch_pch_make import make

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None or shutil.which("g++") is None,
                                reason="needs nvcc and g++ (the toolchain's own probes)")

FACTS = torch_facts.TorchFacts(
    torch_version="9.9.9+fake", cuda_version="13.0", torch_file="", includes=("/fake/include", "/fake/include/api"),
    libs=("/fake/lib",), defines=("-DTORCH_API_INCLUDE_EXTENSION_H", "-D_GLIBCXX_USE_CXX11_ABI=1"),
    nvcc_flags=("-D__CUDA_NO_HALF_OPERATORS__",))


@pytest.fixture
def fake_torch(tmp_path, monkeypatch) -> Path:
    """A package `torch` first on the path: found by `find_spec`, and failing when imported."""
    package = tmp_path / "site" / "torch"
    (package / "utils").mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('the fake torch was imported')\n")
    (package / "version.py").write_text("__version__ = '9.9.9+fake'\n")
    (package / "utils" / "cpp_extension.py").write_text("")
    (package / "_C.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\0" * 64)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    importlib.invalidate_caches()
    return package


def facts_of(package: Path) -> torch_facts.TorchFacts:
    return torch_facts.TorchFacts(**{**FACTS.__dict__, "torch_file": str(package / "__init__.py")})


def test_saved_facts_load_while_torch_is_unchanged(tmp_path, fake_torch):
    torch_facts.save(tmp_path, facts_of(fake_torch))
    assert torch_facts.load(tmp_path) == facts_of(fake_torch)
    assert oct((tmp_path / torch_facts.FILE_NAME).stat().st_mode & 0o777) == "0o644"   # the box's user reads it


@pytest.mark.parametrize("change", ["version.py", "utils/cpp_extension.py", "_C.cpython-311-x86_64-linux-gnu.so"])
def test_a_reinstalled_torch_makes_the_facts_stale(tmp_path, fake_torch, change):
    torch_facts.save(tmp_path, facts_of(fake_torch))
    target = fake_torch / change
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert torch_facts.load(tmp_path) is None


def test_another_interpreter_does_not_take_them(tmp_path, fake_torch, monkeypatch):
    torch_facts.save(tmp_path, facts_of(fake_torch))
    monkeypatch.setattr(sys, "executable", "/another/python3")
    assert torch_facts.load(tmp_path) is None


@pytest.mark.parametrize("text", ["", "{", "[]", '{"fingerprint": null}',
                                  '{"fingerprint": FP, "facts": {"torch_version": 3}}',
                                  '{"fingerprint": FP, "facts": {"unknown": "x"}}',
                                  '{"fingerprint": FP, "facts": {"includes": [1, 2]}}'])
def test_a_damaged_file_is_not_used(tmp_path, fake_torch, text):
    (tmp_path / torch_facts.FILE_NAME).write_text(text.replace("FP", json.dumps(torch_facts.fingerprint())))
    assert torch_facts.load(tmp_path) is None


def test_without_a_torch_to_find_nothing_is_saved_or_loaded(tmp_path, monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    torch_facts.save(tmp_path, FACTS)
    assert not (tmp_path / torch_facts.FILE_NAME).exists() and torch_facts.load(tmp_path) is None


def test_discover_takes_the_facts_without_importing_torch(tmp_path, fake_torch):
    torch_facts.save(tmp_path, facts_of(fake_torch))
    tools = tc.discover("nvcc", tmp_path)         # the fake's import would raise: it never ran
    assert tools.torch == facts_of(fake_torch)
    assert tools.torch.includes == FACTS.includes and tools.versions.torch_version == "9.9.9+fake"
    assert "-D_GLIBCXX_USE_CXX11_ABI=1" in tools.cxx_command("ext") and "-I/fake/include/api" in tools.cxx_command("ext")


def test_stale_facts_mean_the_import_as_before(tmp_path, fake_torch):
    torch_facts.save(tmp_path, facts_of(fake_torch))
    (fake_torch / "version.py").write_text("__version__ = '9.9.10+fake'\n")
    with pytest.raises(tc.ToolMissingError, match="the fake torch was imported"):
        tc.discover("nvcc", tmp_path)


def test_making_the_headers_saves_the_facts_first(tmp_path, fake_torch):
    tools = tc.discover("nvcc", _saved(tmp_path / "given", facts_of(fake_torch)))
    assert make(tmp_path / "pch", tools, []) == []
    assert torch_facts.load(tmp_path / "pch") == facts_of(fake_torch)


def _saved(root: Path, facts: torch_facts.TorchFacts) -> Path:
    root.mkdir()
    torch_facts.save(root, facts)
    return root


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (a CPU build is enough)")
def test_a_fresh_process_gets_torchs_own_command_lines_from_the_facts(tmp_path):
    probe = ("import json, sys; from gate.compiling import toolchain as tc; "
             "t = tc.discover('nvcc', sys.argv[1] if len(sys.argv) > 1 else None); "
             "print(json.dumps([t.cxx_command('ext'), t.nvcc_command(['sm_90'], 'ext', True), "
             "t.link_command(['a.o'], 'a.so'), list(t.versions.__dict__.values()), 'torch' in sys.modules]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                                    os.environ.get("PYTHONPATH")]))}

    def answer(*args: str) -> list:
        run = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout)

    from_torch = answer()
    assert from_torch[-1] is True
    torch_facts.save(tmp_path, tc.discover("nvcc").torch)
    from_facts = answer(str(tmp_path))
    assert from_facts[:-1] == from_torch[:-1] and from_facts[-1] is False     # the same, and torch never imported
