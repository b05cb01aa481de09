"""Architecture rules that import contracts cannot express (docs/design.md, "What must never
depend on what"); the import rules themselves are `lint-imports`, run by scripts/test.sh."""

from __future__ import annotations

import re
from pathlib import Path

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
