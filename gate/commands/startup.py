"""What every long-running command does first: log lines with times, settings, schema at head."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.config import Settings
    from gate.storage.unit import Store


def start() -> tuple[Settings, Store]:
    """Configure logging, read the settings and migrate the database; the caller owns the store."""
    import logging

    from gate.config import get_settings
    from gate.storage.schema import upgrade
    from gate.storage.unit import Store

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = get_settings(service=True)
    store = Store.from_url(settings.database_url)
    upgrade(store.engine)
    _check_box(logging.getLogger("gate.box"))
    return settings, store


def _check_box(log) -> None:  # noqa: ANN001
    """Say at start, not at the first job, when submitted code cannot be boxed."""
    import shutil

    from gate import box

    if not box.enabled():
        log.warning("GATE_BOX=off: submitted code runs unboxed, with the server's rights (trusted repositories only)")
    elif shutil.which("bwrap") is None or shutil.which("prlimit") is None:
        log.error("bubblewrap (bwrap) or prlimit is missing: every job will end in `error` until it is installed "
                  "(apt install bubblewrap util-linux)")
