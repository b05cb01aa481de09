"""Load and validate `gate.toml` (every key: docs/manifest.md) into `gate.domain.Manifest`.

Every refusal is a `ManifestError` naming the file and the dotted key
(`gate.toml: kernel[0].gates.max_bank_conflict_pct: must be >= 0, got -1`). Paths stay inside the
repository (`_inside_repo`), each part of letters, digits and `_ . + -`, never starting with `-`: nvcc
hands file names to a shell (`k$(id).cu` ran `id` on the host) and reads a leading `-` as an option.

Sizes are bounded, so one push cannot hold the executor for minutes: the file (`MAX_MANIFEST_BYTES`,
checked before parsing), kernels per manifest (each is a job), shapes per kernel, and the cases a kernel
is measured on (shapes x dtypes x archs); `timeout_s` is at most `MAX_TIMEOUT_S`.
"""

from __future__ import annotations

import ast
import math
import re
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from gate.domain.manifest import Gates, KernelSpec, Manifest, Shape, ShapeValue
from gate.domain.rule_catalog import BY_KEY, SETTINGS, Kind
from gate.errors import ManifestError
from gate.manifest import compile_flags, module_name
from gate.manifest.workload_file import workload_module_file

MANIFEST_NAME = "gate.toml"

# Targets nvcc 12/13 accepts for `-gencode arch=compute_XX,code=sm_XX` (CUDA 13 dropped sm_70/sm_72).
KNOWN_ARCHS = frozenset({
    "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a",
    "sm_100", "sm_100a", "sm_103", "sm_103a", "sm_120", "sm_120a",
})
KNOWN_DTYPES = frozenset({"float16", "bfloat16", "float32", "float8_e4m3fn"})
WORKLOAD_DIMS = {"attention": ("b", "h", "s", "d"), "gemm": ("m", "n", "k")}
WORKLOAD_FLAGS = {"attention": ("causal",), "gemm": ()}
# Dtypes a built-in workload cannot feed, and why; refused here rather than crashing in the GPU job. A
# custom workload's `make_inputs` decides for itself.
WORKLOAD_REFUSED_DTYPES = {
    "gemm": {"float8_e4m3fn": "its low-precision reference and its cuBLAS peer are `a @ b.T` in the run's "
                              "dtype, and PyTorch has no float8 matmul on CUDA (only torch._scaled_mm, with "
                              "scales); a custom workload (module:callable) can feed one"},
}
_CALLABLE = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):([A-Za-z_]\w*)$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_OPCODE = re.compile(r"^[A-Z][A-Z0-9_]*$")
MAX_SHAPE_STRING = 32
_SHAPE_STRING = re.compile(rf"^[A-Za-z0-9_.+-]{{1,{MAX_SHAPE_STRING}}}$")
_PATH_PART = re.compile(r"^[A-Za-z0-9_.+][A-Za-z0-9_.+-]*$")   # one part of a source path (see above)

MAX_MANIFEST_BYTES = 256 * 1024
MAX_KERNELS = 32                # one job each
# A kernel's name names its job's folders (`<sha>-<name>-<tag>`, 255 bytes at most) and fills a
# 200-character column: 250 characters ended the job `error` (issue 44). The API's limit too.
MAX_KERNEL_NAME_CHARS = 128
MAX_SHAPES = 64                 # per kernel
MAX_CASES = 512                 # shapes x dtypes x archs, per kernel
MAX_TIMEOUT_S = 3600.0          # the whole job's child
MAX_KERNEL_PATTERNS = 32        # `kernels` globs per kernel
MAX_PATTERN_CHARS = 200

_KERNEL_REQUIRED = ("name", "sources", "workload", "shapes")
_KERNEL_OPTIONAL = ("function", "arch", "dtypes", "gates", "profile", "timeout_s", "nvcc_flags", "cxx_flags",
                    "module", "kernels", "own_process")
_MODULE = re.compile(r"^[A-Za-z_]\w*$")      # a Python identifier: CPython looks up PyInit_<module>


class _Checker:
    """Typed reads from the parsed TOML, each failure naming `file: key`."""

    def __init__(self, file: str):
        self.file = file

    def fail(self, key: str, message: str) -> ManifestError:
        return ManifestError(message, file=self.file, key=key)

    def only_keys(self, table: dict[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
        for key in table:
            if key not in allowed:
                raise self.fail(f"{prefix}.{key}" if prefix else key,
                                f"unknown key (allowed: {', '.join(allowed)})")

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(key, f"expected a non-empty string, got {value!r}")
        return value

    def strings(self, value: Any, key: str) -> list[str]:
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list of strings, got {value!r}")
        return [self.string(v, f"{key}[{i}]") for i, v in enumerate(value)]

    def number(self, value: Any, key: str, *, integer: bool = False) -> float:
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise self.fail(key, f"expected {'an integer' if integer else 'a number'}, got {value!r}")
        if not math.isfinite(value):    # TOML has nan and inf: a nan timeout_s never expired
            raise self.fail(key, f"must be a finite number, got {value!r}")
        if value < 0:
            raise self.fail(key, f"must be >= 0, got {value!r}")
        return value


def load_manifest(repo_dir: Path) -> Manifest:
    """Read `repo_dir/gate.toml`; raise `ManifestError` naming the key and the file on any fault."""
    path = repo_dir / MANIFEST_NAME
    if not path.is_file():
        raise ManifestError(f"no {MANIFEST_NAME} at the repository root", file=MANIFEST_NAME)
    size = path.stat().st_size
    if size > MAX_MANIFEST_BYTES:
        raise ManifestError(f"{size} bytes; at most {MAX_MANIFEST_BYTES}", file=MANIFEST_NAME)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(f"not valid TOML: {exc}", file=MANIFEST_NAME) from exc
    except RecursionError as exc:      # tomllib recurses per level: `a=[[[[...` 40k deep (issue 24)
        raise ManifestError("nested too deeply to read", file=MANIFEST_NAME) from exc
    check = _Checker(MANIFEST_NAME)
    check.only_keys(data, ("kernel",), "")
    tables = data.get("kernel")
    if not isinstance(tables, list) or not tables:
        raise check.fail("kernel", "declare at least one [[kernel]] table")
    if len(tables) > MAX_KERNELS:
        raise check.fail("kernel", f"{len(tables)} kernels; at most {MAX_KERNELS} (each one is a job)")
    root = repo_dir.resolve()
    kernels = [_kernel(check, t, f"kernel[{i}]", root) for i, t in enumerate(tables)]
    seen: set[str] = set()
    for i, spec in enumerate(kernels):
        if spec.name in seen:
            raise check.fail(f"kernel[{i}].name", f"duplicate kernel name {spec.name!r}")
        seen.add(spec.name)
    return Manifest(kernels=kernels, path=MANIFEST_NAME)


def _kernel(check: _Checker, table: Any, key: str, root: Path) -> KernelSpec:
    if not isinstance(table, dict):
        raise check.fail(key, "expected a table")
    check.only_keys(table, _KERNEL_REQUIRED + _KERNEL_OPTIONAL, key)
    for required in _KERNEL_REQUIRED:
        if required not in table:
            raise check.fail(f"{key}.{required}", "missing required key")
    name = check.string(table["name"], f"{key}.name")
    if not _NAME.match(name):
        raise check.fail(f"{key}.name", f"use letters, digits, '_', '.', '-': {name!r}")
    if len(name) > MAX_KERNEL_NAME_CHARS:
        raise check.fail(f"{key}.name", f"{len(name)} characters; at most {MAX_KERNEL_NAME_CHARS}")
    sources = _sources(check, table["sources"], f"{key}.sources", root)
    workload = _workload(check, table["workload"], f"{key}.workload", root)
    shapes = _shapes(check, table["shapes"], f"{key}.shapes", workload)
    spec = KernelSpec(name=name, sources=sources, workload=workload, shapes=shapes)
    if "function" in table:
        spec.function = check.string(table["function"], f"{key}.function")
    if "arch" in table:
        spec.arch = _choices(check, table["arch"], f"{key}.arch", KNOWN_ARCHS)
    if "dtypes" in table:
        spec.dtypes = _choices(check, table["dtypes"], f"{key}.dtypes", KNOWN_DTYPES)
        refused = WORKLOAD_REFUSED_DTYPES.get(workload, {})
        for i, dtype in enumerate(spec.dtypes):
            if dtype in refused:
                raise check.fail(f"{key}.dtypes[{i}]", f"kernel {name!r}: the built-in {workload} workload "
                                                       f"cannot take {dtype}: {refused[dtype]}")
    for flag in ("profile", "own_process"):
        if flag in table:
            if not isinstance(table[flag], bool):
                raise check.fail(f"{key}.{flag}", f"expected true/false, got {table[flag]!r}")
            setattr(spec, flag, table[flag])
    if "timeout_s" in table:
        spec.timeout_s = float(check.number(table["timeout_s"], f"{key}.timeout_s"))
        if spec.timeout_s == 0 or spec.timeout_s > MAX_TIMEOUT_S:
            raise check.fail(f"{key}.timeout_s", f"must be > 0 and <= {MAX_TIMEOUT_S:g}, got {spec.timeout_s:g}")
    for compiler in ("nvcc", "cxx"):
        if f"{compiler}_flags" in table:
            setattr(spec, f"{compiler}_flags",
                    _flags(check, table[f"{compiler}_flags"], f"{key}.{compiler}_flags", compiler, root))
    if "module" in table:
        spec.module = check.string(table["module"], f"{key}.module")
        if not _MODULE.match(spec.module):
            raise check.fail(f"{key}.module", f"expected a Python identifier (PyInit_<module>), got {spec.module!r}")
    if "kernels" in table:
        spec.kernels = _patterns(check, table["kernels"], f"{key}.kernels")
    module_name.extension_name(spec, root, key=f"{key}.module")   # sources and `module` agree on one name
    if "function" not in table:
        _op_function_named(check, spec, f"{key}.function", root)
    if "gates" in table:
        spec.gates = _gates(check, table["gates"], f"{key}.gates", {s.label for s in shapes})
    cases = len(spec.shapes) * len(spec.dtypes) * len(spec.arch)
    if cases > MAX_CASES:
        raise check.fail(key, f"{len(spec.shapes)} shapes x {len(spec.dtypes)} dtypes x {len(spec.arch)} archs = "
                              f"{cases} cases; at most {MAX_CASES} per kernel")
    return spec


def _op_function_named(check: _Checker, spec: KernelSpec, key: str, root: Path) -> None:
    """Refuse a kernel that registers torch ops and has no pybind11 module but names no `function`:
    there is no `forward` to default to, and the op it means cannot be guessed."""
    where = module_name.registering_file(spec, root)
    if where and not module_name.defines_pybind_module(spec, root):
        ns = module_name.extension_name(spec, root)
        raise check.fail(key, f"missing: {where} registers torch ops and no source defines a pybind11 module, so "
                              f"there is no `forward` to call; name the op the workload calls: function = \"myop\" "
                              f"is torch.ops.{ns}.myop (the namespace TORCH_EXTENSION_NAME names is the module's, "
                              f"{ns!r}), function = \"ns::myop\" an op of another namespace")


def _sources(check: _Checker, value: Any, key: str, root: Path) -> list[str]:
    sources = check.strings(value, key)
    if not sources:
        raise check.fail(key, "list at least one source file")
    for i, source in enumerate(sources):
        _inside_repo(check, source, f"{key}[{i}]", root)
    if len(set(sources)) != len(sources):
        raise check.fail(key, "a source is listed twice")
    if not any(s.endswith(".cu") for s in sources):
        raise check.fail(key, "no CUDA source (.cu) listed")
    return sources


def _flags(check: _Checker, value: Any, key: str, compiler: str, root: Path) -> list[str]:
    """Extra compiler flags: each on the allowlist of `compile_flags`, an `-I` directory inside the repo."""
    flags = check.strings(value, key)
    for i, flag in enumerate(flags):
        if (why := compile_flags.refusal(flag, compiler)) is not None:
            raise check.fail(f"{key}[{i}]", why)
        if (directory := compile_flags.include_dir(flag)) is not None:
            _inside_repo(check, directory, f"{key}[{i}]", root, directory=True)
    return flags


def _inside_repo(check: _Checker, source: str, key: str, root: Path, *, directory: bool = False) -> None:
    """Refuse absolute paths, `..` that escape, symlinks that resolve outside, and missing files (or dirs)."""
    posix = PurePosixPath(source)
    if any(ord(c) < 32 for c in source):
        raise check.fail(key, f"{source!r} contains control characters")
    for part in source.split("/"):
        if part and not _PATH_PART.match(part):
            raise check.fail(key, f"{source!r}: use letters, digits and '_', '.', '+', '-' in path names, "
                                  "not starting with '-'")
    if posix.is_absolute() or Path(source).is_absolute() or "\\" in source:
        raise check.fail(key, f"{source!r} must be a path relative to the repository root")
    depth = 0
    for part in posix.parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            raise check.fail(key, f"{source!r} leaves the repository")
    resolved = (root / source).resolve()
    if not resolved.is_relative_to(root):
        raise check.fail(key, f"{source!r} resolves outside the repository (symlink?)")
    if not (resolved.is_dir() if directory else resolved.is_file()):
        raise check.fail(key, f"{source!r} does not exist in the repository" + (" as a directory" if directory else ""))


def _workload(check: _Checker, value: Any, key: str, root: Path) -> str:
    workload = check.string(value, key)
    if workload in WORKLOAD_DIMS:
        return workload
    match = _CALLABLE.match(workload)
    if not match:
        raise check.fail(key, f"expected one of {sorted(WORKLOAD_DIMS)} or 'module:callable', got {workload!r}")
    module_file = workload_module_file(root, match.group(1))
    if module_file is None:
        raise check.fail(key, f"module {match.group(1)!r} not found in the repository")
    if match.group(2) not in _top_level_names(check, module_file, key, root):
        raise check.fail(key, f"{module_file.relative_to(root).as_posix()} defines no {match.group(2)!r} "
                              "at module level (a def, a class or an assignment)")
    return workload


def _top_level_names(check: _Checker, module_file: Path, key: str, root: Path) -> set[str]:
    """Names a module binds at its top level, read with `ast` (importing it would need torch, and
    would run the repository's code in the parent process)."""
    try:
        tree = ast.parse(module_file.read_bytes(), filename=module_file.name)
    except (SyntaxError, ValueError) as exc:
        raise check.fail(key, f"{module_file.relative_to(root).as_posix()} is not valid Python: {exc}") from exc
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _shapes(check: _Checker, value: Any, key: str, workload: str) -> list[Shape]:
    if not isinstance(value, list) or not value:
        raise check.fail(key, "list at least one shape, e.g. [{m=1024, n=1024, k=1024}]")
    if len(value) > MAX_SHAPES:
        raise check.fail(key, f"{len(value)} shapes; at most {MAX_SHAPES} per kernel")
    shapes = [_shape(check, item, f"{key}[{i}]", workload) for i, item in enumerate(value)]
    labels = [s.label for s in shapes]
    for i, label in enumerate(labels):
        if labels.index(label) != i:
            raise check.fail(f"{key}[{i}]", f"duplicate shape {label}")
    return shapes


def _shape(check: _Checker, item: Any, key: str, workload: str) -> Shape:
    if not isinstance(item, dict) or not item:
        raise check.fail(key, "expected a non-empty inline table")
    # A custom workload's keys mean nothing here: the job asks its `check_shape` (`get_workload`).
    dims, flags = WORKLOAD_DIMS.get(workload), WORKLOAD_FLAGS.get(workload, ())
    if dims is not None:
        check.only_keys(item, dims + flags, key)
        for dim in dims:
            if dim not in item:
                raise check.fail(f"{key}.{dim}", f"missing ({workload} shapes need {', '.join(dims)})")
    params: dict[str, ShapeValue] = {}
    for name, v in item.items():
        where = f"{key}.{name}"
        if name in flags and not isinstance(v, bool):
            raise check.fail(where, f"expected true/false, got {v!r}")
        if dims is not None and name not in flags and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
            raise check.fail(where, f"expected a positive integer, got {v!r}")
        params[name] = _shape_value(check, v, where)
    return Shape(params)


def _shape_value(check: _Checker, v: Any, where: str) -> ShapeValue:
    """A positive integer, true/false, a finite float (a softmax scale, an epsilon) or a short name (a
    layout): what a workload can read from a shape. A string appears in the shape's label, which
    names it on pages and in artifact paths, hence the path-safe character set."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        if v <= 0:
            raise check.fail(where, f"an integer must be positive, got {v!r}")
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise check.fail(where, f"a float must be finite, got {v!r}")
        return v
    if isinstance(v, str):
        if not _SHAPE_STRING.match(v):
            raise check.fail(where, f"a string must be 1-{MAX_SHAPE_STRING} letters, digits, '_', '.', '+', '-', "
                                    f"got {v!r}")
        return v
    raise check.fail(where, f"expected a positive integer, a float, a string or true/false, got {v!r} "
                            f"({type(v).__name__})")


def _patterns(check: _Checker, value: Any, key: str) -> list[str]:
    """Glob patterns over kernel names (`verdict.static_scope`). Globs, not regular expressions: the
    verdict matches them in the service's own process, where a pushed manifest's backtracking regex
    could stall it; a glob (`*conv1d_fwd<*>`) says what is needed."""
    patterns = check.strings(value, key)
    if len(patterns) > MAX_KERNEL_PATTERNS:
        raise check.fail(key, f"{len(patterns)} patterns; at most {MAX_KERNEL_PATTERNS}")
    for i, pattern in enumerate(patterns):
        if len(pattern) > MAX_PATTERN_CHARS:
            raise check.fail(f"{key}[{i}]", f"{len(pattern)} characters; at most {MAX_PATTERN_CHARS}")
    return patterns


def _choices(check: _Checker, value: Any, key: str, allowed: frozenset[str]) -> list[str]:
    items = check.strings(value, key)
    if not items:
        raise check.fail(key, "list at least one value")
    for i, item in enumerate(items):
        if item not in allowed:
            raise check.fail(f"{key}[{i}]", f"unknown value {item!r} (known: {', '.join(sorted(allowed))})")
    return items


def _gates(check: _Checker, table: Any, key: str, shape_labels: set[str]) -> Gates:
    if not isinstance(table, dict):
        raise check.fail(key, "expected a table")
    check.only_keys(table, (*BY_KEY, *SETTINGS), key)     # the catalogue's keys, then the settings
    values: dict[str, Any] = {}
    for name, value in table.items():
        where = f"{key}.{name}"
        spec = BY_KEY.get(name)
        if spec is not None and spec.kind is Kind.SASS:
            values[name] = check.strings(value, where)
            for i, op in enumerate(values[name]):
                if not _OPCODE.match(op):
                    raise check.fail(f"{where}[{i}]", f"expected a SASS base opcode like HMMA, got {op!r}")
        elif name == "absolute_shapes":
            values[name] = check.strings(value, where)
            for i, label in enumerate(values[name]):
                if label not in shape_labels:
                    raise check.fail(f"{where}[{i}]", f"{label!r} is not a declared shape "
                                                      f"({', '.join(sorted(shape_labels))})")
        else:   # every other key is a catalogue row's bound
            integer = spec is not None and spec.integer
            number = check.number(value, where, integer=integer)
            if spec is not None and spec.pct_of_peak and number > 100:
                raise check.fail(where, f"a percentage of peak must be <= 100, got {number!r}")
            if spec is not None and spec.positive and number == 0:
                raise check.fail(where, "must be > 0")
            values[name] = number if integer else float(number)
    return Gates(**values)
