"""Golden files: generated text compared with a checked-in copy.

Regenerate after an intended change of wording with `GATE_REGENERATE_GOLDEN=1 pytest ...`,
then review the diff of tests/golden/ like any other change.
"""

import os
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent
REGENERATE = os.environ.get("GATE_REGENERATE_GOLDEN") == "1"


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN_DIR / name
    if REGENERATE:
        path.write_text(text)
        return
    assert path.exists(), f"{path.name} is missing: run with GATE_REGENERATE_GOLDEN=1 to create it"
    assert text == path.read_text(), f"{path.name} differs (GATE_REGENERATE_GOLDEN=1 rewrites it)"
