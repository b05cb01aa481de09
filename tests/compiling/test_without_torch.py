"""gate.compiling is imported by the parent (the reuse key), `gate pch` and the child: every module
of it imports in a process where `import torch` fails (a stand-in `torch` package that raises), so
none of them imports torch at import time."""

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import gate.compiling

ROOT = Path(__file__).resolve().parents[2]


def test_every_compiling_module_imports_where_torch_raises(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text('raise ImportError("the stand-in torch was imported")\n')
    modules = sorted(m.name for m in pkgutil.iter_modules(gate.compiling.__path__, "gate.compiling."))
    assert {"gate.compiling.static", "gate.compiling.build", "gate.compiling.toolchain"} <= set(modules)
    probe = ("import importlib, sys\n"
             f"for name in {modules!r}:\n"
             "    importlib.import_module(name)\n"
             "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_the_stand_in_torch_does_raise(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text('raise ImportError("the stand-in torch was imported")\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    run = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "the stand-in torch was imported" in run.stderr
