"""The seams between layers, checked by importing each side alone in a fresh interpreter."""

import subprocess
import sys

import pytest


def _loaded(modules: str, watched: tuple[str, ...]) -> list[str]:
    code = (f"import sys, {modules}; "
            f"print(sorted(m for m in {watched!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return eval(out.stdout)   # noqa: S307 (our own printed list)


@pytest.mark.parametrize(("modules", "never"), [
    ("gate.notify.listeners, gate.notify.sender, gate.notify.messages", ("gate.storage", "sqlalchemy")),
    ("gate.storage.outcomes, gate.storage.outbox, gate.storage.queries", ("gate.notify", "httpx")),
    ("gate.figures.kernel_page, gate.figures.revision, gate.figures.series_charts",
     ("gate.storage", "sqlalchemy")),
], ids=["notify-without-storage", "storage-without-notify", "figures-without-storage"])
def test_a_layer_loads_without_the_one_it_must_not_depend_on(modules, never):
    assert _loaded(modules, never) == []
