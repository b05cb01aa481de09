"""Where a `module:callable` workload's module lives in a checkout. Both the manifest loader (which
checks it without importing it) and the GPU child (which imports it: `workloads.get_workload`) read
this, so it stays free of the verdict's catalogue that the loader validates gates with: the child
never imports the verdict."""

from __future__ import annotations

from pathlib import Path


def workload_module_file(root: Path, module_name: str) -> Path | None:
    """The file of a `module:callable` workload's module (`a.b` is `a/b.py` or `a/b/__init__.py`), resolved,
    or None when neither is a file inside `root` (a symlink out of it does not count)."""
    module_path = Path(*module_name.split("."))
    for candidate in (root / module_path.with_suffix(".py"), root / module_path / "__init__.py"):
        resolved = candidate.resolve()
        if resolved.is_relative_to(root) and resolved.is_file():
            return resolved
    return None
