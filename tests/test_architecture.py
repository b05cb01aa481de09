"""Architecture rules that import contracts cannot express (docs/design.md, "What must never
depend on what"); the import rules themselves are `lint-imports`, run by scripts/test.sh."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import gate

PACKAGE = Path(gate.__file__).resolve().parent
SQL = re.compile(r"(?<![.\w])(?<!def )(select|update|insert|delete)\(|session\.(execute|scalars?|query)\(")


def test_every_sql_statement_lives_in_storage():
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
                 for path in sorted(PACKAGE.rglob("*.py")) if "storage" not in path.relative_to(PACKAGE).parts
                 for n, line in enumerate(path.read_text().splitlines(), 1) if SQL.search(line)]
    assert offenders == []


# What writes rows or ends a transaction: only the storage's named functions do (issue 23).
ORM_WRITE = re.compile(r"\b(session|s|other)\.(add|add_all|delete|merge|flush|commit)\(")
# Parts that run the service: they ask the storage to write, by name. (`sample/` seeds synthetic
# history in one batch and commits it itself.)
SERVICE_PARTS = ("api", "services", "executors", "notify", "figures", "read_models", "commands", "sources")


def test_every_orm_write_and_commit_of_the_service_lives_in_storage():
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
                 for part in SERVICE_PARTS for path in sorted((PACKAGE / part).rglob("*.py"))
                 for n, line in enumerate(path.read_text().splitlines(), 1) if ORM_WRITE.search(line)]
    assert offenders == []


def test_the_storage_door_contract_names_every_part_of_the_gate_but_storage():
    """import-linter cannot say "everything but storage": the contract lists the parts, and a part
    added tomorrow must join the list, or it could import SQLAlchemy unseen (docs/design.md)."""
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["importlinter"]
    (door,) = [c for c in config["contracts"] if set(c.get("forbidden_modules", ())) ==
               {"sqlalchemy", "gate.storage.models"}]
    parts = {f"gate.{p.stem}" for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert sorted(door["source_modules"]) == sorted(parts - {"gate.storage"})


def test_a_single_worst_verdict_and_severity_order():
    defined = [path.relative_to(PACKAGE.parent) for path in PACKAGE.rglob("*.py")
               if re.search(r"^def worst_verdict\b|^VERDICT_SEVERITY = \(\"", path.read_text(), re.M)]
    assert [str(p) for p in defined] == ["gate/domain/verdict.py"]


def test_rule_names_are_spelled_out_only_in_the_catalogue():
    """docs/design.md: a rule is declared once, by its row in `domain/rule_catalog.py`, and named
    elsewhere through `Rule`, never by a string literal, so a rename is one edit and a typo is an
    AttributeError instead of a rule that silently never fires. (Rules named after a stage, like
    `build`, are ordinary words and are left out.)"""
    import ast

    from gate.domain.rule_catalog import Rule

    names = {rule.value for rule in Rule if "_" in rule.value}
    vocabulary = PACKAGE / "domain" / "rule_catalog.py"
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path != vocabulary
                 for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Constant) and node.value in names]
    assert offenders == []


def test_the_verdict_imports_only_the_domain_nvidia_and_the_standard_library():
    """The import contract forbids the packages we have today; this holds a package added tomorrow
    to the same rule (docs/design.md: the verdict is pure)."""
    import ast
    import sys

    allowed = ("gate.domain", "gate.nvidia", "gate.verdict")
    found = set()
    for path in (PACKAGE / "verdict").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    outside = sorted(m for m in found if not m.startswith(allowed) and m != "__future__"
                     and m.split(".")[0] not in sys.stdlib_module_names)
    assert outside == []


# NVIDIA's programs and libraries (issue 41, item 5): only gate/nvidia runs, locates or loads them.
NVIDIA_TOOLS = {"nvcc", "ptxas", "cuobjdump", "nvdisasm", "ncu", "nvidia-smi", "nvidia_smi"}
NVIDIA_MODULES = ("pynvml", "ncu_report")             # NVML's bindings, Nsight Compute's report reader
# A library file (libcuda.so.1, libcudart.so.12, libnvidia-ml.so) or a device node (/dev/nvidia0, "nvidia[0-9]*").
NVIDIA_FILE = re.compile(r"^lib(cuda|cudart|nvidia-ml|nvrtc|cupti)[\w-]*\.so|^(/dev/)?nvidia[\d*\[]|^/dev/nvidia")
# Calls that run or locate a program, and where its name is: (last part of the called name, argument).
IMPORTERS = ("import_module", "__import__", "find_spec")
RUNNERS = {"run": 0, "Popen": 0, "call": 0, "check_call": 0, "check_output": 0, "getoutput": 0,
           "system": 0, "which": 0, "execv": 0, "execvp": 0, "execvpe": 0, "spawnv": 1, "spawnvp": 1,
           "posix_spawn": 0, "posix_spawnp": 0, "create_subprocess_exec": 0, "popen": 0, "tool_output": 0}
BOXED = {"run": 1, "popen": 1}          # `box.run(box, argv)`, `box.popen(box, argv)`: the argv comes second


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _words(node: ast.AST) -> set[str]:
    """The words of a name or a string: `options.ncu_path` -> {options, ncu, path}; "/x/nvidia-smi" -> nvidia-smi."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        base = node.value.rstrip("/").rsplit("/", 1)[-1].lower()
        return {base, *re.split(r"[^a-z0-9-]+", base)}
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return set(re.split(r"[^a-z0-9-]+", name.lower())) if name else set()


class _Program:
    """Which program a call runs, as far as one module shows it: a literal, or a name followed to its
    assignments in the enclosing function, and from a parameter to the module's calls of that function."""

    def __init__(self, tree: ast.Module):
        self.module = tree
        self.parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        self.functions = {f.name: f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call)]

    def words(self, node: ast.AST, depth: int = 0) -> set[str]:
        if depth > 4 or node is None:
            return set()
        if isinstance(node, (ast.List, ast.Tuple)):
            return self.words(node.elts[0], depth + 1) if node.elts else set()
        if isinstance(node, ast.Starred):
            return self.words(node.value, depth + 1)
        if isinstance(node, ast.BinOp):
            return self.words(node.left, depth + 1)
        if isinstance(node, (ast.BoolOp, ast.IfExp)):
            return set().union(*(self.words(n, depth + 1) for n in ast.iter_child_nodes(node)))
        if isinstance(node, ast.Call):
            return _words(node.func)
        if isinstance(node, ast.Name):
            return _words(node) | self._assigned(node, depth)
        return _words(node)

    def _assigned(self, name: ast.Name, depth: int) -> set[str]:
        scope = self._scope(name)
        found = self._bound(name, ast.walk(scope), depth) or self._bound(name, self.module.body, depth)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [a.arg for a in scope.args.args]
            if name.id in params:
                position = params.index(name.id)
                for call in self.calls:
                    if _dotted(call.func).rsplit(".", 1)[-1] == scope.name:
                        args = [*call.args, *(k.value for k in call.keywords if k.arg == name.id)]
                        found |= self.words(args[position] if position < len(call.args) else args[-1], depth + 1) \
                            if args else set()
        return found

    def _bound(self, name: ast.Name, nodes, depth: int) -> set[str]:
        """The words of every value `name` is bound to among `nodes` (a function's, or the module's)."""
        found: set[str] = set()
        for node in nodes:
            targets, value = (), None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
                targets, value = [node.target], node.value
            elif isinstance(node, (ast.For, ast.comprehension)):
                targets, value = [node.target], node.iter
            if any(isinstance(t, ast.Name) and t.id == name.id for target in targets for t in ast.walk(target)):
                # A loop over pairs, or an unpacking: every name and string of the value may be it.
                found |= set().union(*(self.words(n, depth + 1) for n in ast.walk(value)
                                       if isinstance(n, (ast.Name, ast.Attribute, ast.Constant))))
        return found

    def _scope(self, node: ast.AST) -> ast.AST:
        while node in self.parents and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node = self.parents[node]
        return node


def nvidia_uses(source: str) -> list[str]:
    """Where `source` runs, locates or loads an NVIDIA tool or library, or names a device node."""
    tree = ast.parse(source)
    program = _Program(tree)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"{node.lineno}: imports {n}" for n in names if n.split(".")[0] in NVIDIA_MODULES]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if NVIDIA_FILE.search(node.value):
                found.append(f"{node.lineno}: names {node.value!r}")
        elif isinstance(node, ast.Call):
            called = _dotted(node.func)
            last = called.rsplit(".", 1)[-1]
            if last in IMPORTERS and node.args and isinstance(node.args[0], ast.Constant) \
                    and str(node.args[0].value).split(".")[0] in NVIDIA_MODULES:
                found.append(f"{node.lineno}: imports {node.args[0].value}")
            position = BOXED[last] if called.startswith("box.") and last in BOXED else RUNNERS.get(last)
            if position is None or len(node.args) <= position:
                continue
            tools = program.words(node.args[position]) & NVIDIA_TOOLS
            if tools:
                found.append(f"{node.lineno}: {called}(...) runs {', '.join(sorted(tools))}")
    return found


def test_only_the_nvidia_package_runs_or_loads_nvidia_tools():
    """Issue 41, item 5: nvcc, ptxas, cuobjdump/nvdisasm, ncu, nvidia-smi, NVML, libcuda and the
    /dev/nvidia* nodes are driven from gate/nvidia alone, behind the interfaces the stages call.
    Composing a compiler's command line elsewhere is allowed (gate/compiling/toolchain.py); running it
    is `gate.nvidia.compiler.run_tool`."""
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{use}" for path in sorted(PACKAGE.rglob("*.py"))
                 if "nvidia" not in path.relative_to(PACKAGE).parts[:1] for use in nvidia_uses(path.read_text())]
    assert offenders == []


@pytest.mark.parametrize("source", [
    # what the gate did before the nvidia package ran its tools (issue 41)
    'import shutil, subprocess\ndef gpus():\n    smi = shutil.which("nvidia-smi")\n    return subprocess.run([smi, "-L"])',
    'import shutil\ndef version(path):\n    return shutil.which(path)\ndef key(options):\n    return version(options.ncu_path)',
    'import shutil\ndef homes(search):\n    for name, setting in (("nvcc", "GATE_NVCC_PATH"), ("ncu", "GATE_NCU_PATH")):\n'
    '        for candidate in (setting, name):\n            shutil.which(candidate, path=search)',
    'import subprocess\ndef start(ncu):\n    command = build_ncu_command(ncu)\n    return subprocess.Popen(command)',
    'from gate import box\ndef compile(nvcc, cwd):\n    return box.run(box.for_compile([nvcc], cwd), [nvcc, "-c"], cwd=cwd)',
    'import glob\nnodes = glob.glob("/dev/nvidia*")',
    'def watch():\n    import pynvml\n    return pynvml',
    'import ctypes\ndriver = ctypes.CDLL("libcuda.so.1")',
    'import importlib\nreport = importlib.import_module("ncu_report")',
])
def test_the_nvidia_check_sees_each_way_of_running_a_tool(source):
    assert nvidia_uses(source)


def test_the_nvidia_check_lets_the_gate_run_its_own_programs():
    source = ('import subprocess, sys, shutil\ndef read(ncu_path):\n'
              '    nice = shutil.which("nice")\n'
              '    return subprocess.Popen([sys.executable, "-m", "gate.profiling.ncu_isolated", "--ncu", ncu_path])')
    assert nvidia_uses(source) == []


LONGEST_FUNCTION = 60     # lines, decorators excluded; docs/architecture.md says why


def _long_functions(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if "migrations" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > LONGEST_FUNCTION:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_of_the_gate_is_over_60_lines_outside_the_migrations():
    assert _long_functions(PACKAGE) == []


def test_the_function_length_check_sees_a_long_function(tmp_path):
    package = tmp_path / "pkg"
    (package / "migrations").mkdir(parents=True)
    body = "".join(f"    x{i} = {i}\n" for i in range(LONGEST_FUNCTION))
    (package / "long.py").write_text(f"def long():\n{body}")
    (package / "short.py").write_text("def short():\n    return 1\n")
    (package / "migrations" / "old.py").write_text(f"def upgrade():\n{body}")
    assert _long_functions(package) == [f"pkg/long.py:1 long ({LONGEST_FUNCTION + 1} lines)"]
