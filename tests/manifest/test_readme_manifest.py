"""The manifest examples in README.md and docs/manifest.md stay valid: each ```toml block that
declares a [[kernel]] is loaded as a gate.toml, with its sources and workload module present. A
workload module the same document shows (a ```python block whose first line is `# <its path>`) is
written as shown, so the manifest's check of its callable reads the documented file."""

import re
import tomllib
from pathlib import Path

import pytest

from gate.manifest.load import load_manifest

ROOT = Path(__file__).resolve().parents[2]
_TOML_BLOCK = re.compile(r"```toml\n(.*?)```", re.DOTALL)
_PYTHON_FILE = re.compile(r"```python\n# (\S+\.py)\n(.*?)```", re.DOTALL)


def documented_files(doc: str) -> dict[str, str]:
    """The Python files `doc` shows whole: path -> text, from blocks that open with `# <path>`."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    return {path: f"# {path}\n{body}" for path, body in _PYTHON_FILE.findall(text)}


def write_example(repo: Path, where: str, text: str) -> None:
    """The gate.toml `text` from `where` ("docs/manifest.md#3") into `repo`, with what it names."""
    shown = documented_files(where.partition("#")[0])
    for table in tomllib.loads(text)["kernel"]:
        for source in table["sources"]:
            (repo / source).parent.mkdir(parents=True, exist_ok=True)
            (repo / source).write_text("// example source\n")
        module, _, name = table["workload"].partition(":")
        if name:
            path = module.replace(".", "/") + ".py"
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(shown.get(path, f"def {name}():\n    return None\n"))
    (repo / "gate.toml").write_text(text)


def examples() -> list[tuple[str, str]]:
    found = []
    for doc in ("README.md", "docs/manifest.md"):
        for i, block in enumerate(_TOML_BLOCK.findall((ROOT / doc).read_text(encoding="utf-8"))):
            if "[[kernel]]" in block:
                found.append((f"{doc}#{i}", block))
    return found


@pytest.mark.parametrize(("where", "text"), examples(), ids=[w for w, _ in examples()])
def test_the_documented_manifest_examples_load(tmp_path, where, text):
    write_example(tmp_path, where, text)
    assert load_manifest(tmp_path).kernels


def test_the_readme_has_an_example():
    assert any(where.startswith("README.md") for where, _ in examples())


def test_every_key_the_loader_accepts_has_a_row_in_docs_manifest():
    import dataclasses

    from gate.domain.manifest import Gates
    from gate.manifest import load as manifest

    text = (ROOT / "docs" / "manifest.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(\w+)` \|", text, re.MULTILINE))
    accepted = {*manifest._KERNEL_REQUIRED, *manifest._KERNEL_OPTIONAL, *(f.name for f in dataclasses.fields(Gates))}
    assert accepted - {"gates"} <= documented, f"undocumented keys: {sorted(accepted - {'gates'} - documented)}"
