"""The manifest examples in README.md and docs/manifest.md stay valid: each ```toml block that
declares a [[kernel]] is loaded as a gate.toml, with its sources (and workload module) present."""

import re
from pathlib import Path

import pytest

from gate.pipeline.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[2]
_TOML_BLOCK = re.compile(r"```toml\n(.*?)```", re.DOTALL)


def examples() -> list[tuple[str, str]]:
    found = []
    for doc in ("README.md", "docs/manifest.md"):
        for i, block in enumerate(_TOML_BLOCK.findall((ROOT / doc).read_text(encoding="utf-8"))):
            if "[[kernel]]" in block:
                found.append((f"{doc}#{i}", block))
    return found


@pytest.mark.parametrize(("where", "text"), examples(), ids=[w for w, _ in examples()])
def test_the_documented_manifest_examples_load(tmp_path, where, text):
    import tomllib

    for table in tomllib.loads(text)["kernel"]:
        for source in table["sources"]:
            (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / source).write_text("// example source\n")
        module, _, name = table["workload"].partition(":")
        if name:
            path = tmp_path / (module.replace(".", "/") + ".py")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"def {name}():\n    return None\n")
    (tmp_path / "gate.toml").write_text(text)
    assert load_manifest(tmp_path).kernels


def test_the_readme_has_an_example():
    assert any(where.startswith("README.md") for where, _ in examples())
