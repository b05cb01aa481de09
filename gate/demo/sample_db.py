"""The database `gate demo --sample` serves: the synthetic sample history (`gate.sample`), written
afresh into its own SQLite file under the data directory, apart from any real history.

Every revision in it is marked synthetic, so every page says so at the top; nothing is measured,
nothing is compiled, no GPU is needed.
"""

from __future__ import annotations

from pathlib import Path

from gate.sample import SeedSummary, seed_judged_history
from gate.storage.schema import upgrade
from gate.storage.unit import Store, UnitOfWork

SAMPLE_DB = Path("sample") / "gate.db"      # under GATE_DATA_DIR


def write_sample_db(data_dir: Path, revisions: int) -> tuple[str, SeedSummary]:
    """A new SQLite database at `data_dir/sample/gate.db` holding `revisions` synthetic revisions;
    returns its URL and what was written. An older sample database there is replaced."""
    path = (Path(data_dir) / SAMPLE_DB).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    url = f"sqlite:///{path}"
    store = Store.from_url(url)
    try:
        upgrade(store.engine)
        with store.unit() as uow:
            summary = seed_judged_history(uow, revisions=revisions)
            write_sample_files(uow, Path(data_dir))
            uow.commit()
    finally:
        store.dispose()
    return url, summary


def write_sample_files(uow: UnitOfWork, data_dir: Path) -> None:
    """The files the sample's rows name (build logs), so every link its pages show resolves."""
    for artifact_id, relative, text in uow.samples.sample_files():
        target = data_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        uow.samples.set_artifact_size(artifact_id, target.stat().st_size)
