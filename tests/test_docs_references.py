"""docs/ and the README cite only files that exist: every `path/to/file.ext` they name is a file of
this repository (from its root, or under gate/ where the docs speak of the package's modules).
The few paths that name files of a gated repository, not of this one, are listed below."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
# a path with at least one folder and a file extension the repository uses
PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w-]+\.(?:py|md|toml|sh|cu|cuh|cpp|h|yml|yaml|txt|css|html|"
                  r"json|ini|cfg|j2|ncu-rep))(?![\w/-])")
# Files of the repositories docs/manifest.md shows how to gate (a custom workload, causal-conv1d).
NOT_OURS = {"bench/my_workload.py", "bench/attn_bshd.py", "bench/attn_bshd/__init__.py",
            "csrc/causal_conv1d.cpp", "csrc/causal_conv1d_fwd.cu", "csrc/causal_conv1d_bwd.cu",
            "csrc/causal_conv1d_update.cu"}
# torch's own headers, which the precompiled header docs name (docs/design.md, README's GATE_TORCH_PCH).
NOT_OURS |= {"torch/extension.h", "ATen/cuda/CUDAContext.h"}
# ... torch's CUDA build's generated header (docs/manifest.md, static figures on a CPU machine), and
# kernel-builder's binding file (its layout, in docs/manifest.md's checklist).
NOT_OURS |= {"c10/cuda/impl/cuda_cmake_macros.h", "torch-ext/torch_binding.cpp"}
# Files of the public repositories docs/compatibility.md gated (issue 43).
NOT_OURS |= {"maxsim_cuda/maxsim.cu", "torch-ext/registration.h"}


def cited(text: str) -> list[str]:
    return [m.group(1) for m in PATH.finditer(text) if "://" not in text[max(0, m.start() - 12):m.start()]]


def exists(path: str) -> bool:
    return any((base / path).is_file() for base in (ROOT, ROOT / "gate", ROOT / "docs"))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_file_a_doc_cites_exists(doc: Path):
    missing = sorted({p for p in cited(doc.read_text()) if p not in NOT_OURS and not exists(p)})
    assert missing == []


def test_the_check_sees_a_dangling_reference():
    text = "The verdict is `pipeline/decide.py`; rows in gate/verdict/rules.py, see https://x.org/a/b.py."
    assert cited(text) == ["pipeline/decide.py", "gate/verdict/rules.py"]
    assert not exists("pipeline/decide.py") and exists("gate/verdict/rules.py") and exists("verdict/rules.py")


def test_the_allow_list_names_no_file_of_ours():
    assert not [p for p in NOT_OURS if exists(p)]
