"""The database `gate demo --sample` serves: the synthetic sample history (`gate.sample`), written
afresh into its own SQLite file under the data directory, apart from any real history.

Every revision in it is marked synthetic, so every page says so at the top; nothing is measured,
nothing is compiled, no GPU is needed.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.orm import Session

from gate.sample import SeedSummary, seed_judged_history
from gate.storage.db import make_engine
from gate.storage.samples import sample_files, set_artifact_size
from gate.storage.schema import upgrade

SAMPLE_DB = Path("sample") / "gate.db"      # under GATE_DATA_DIR


def write_sample_db(data_dir: Path, revisions: int) -> tuple[str, SeedSummary]:
    """A new SQLite database at `data_dir/sample/gate.db` holding `revisions` synthetic revisions;
    returns its URL and what was written. An older sample database there is replaced."""
    path = (Path(data_dir) / SAMPLE_DB).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    try:
        upgrade(engine)
        with Session(engine) as session:
            summary = seed_judged_history(session, revisions=revisions)
            write_sample_files(session, Path(data_dir))
            session.commit()
    finally:
        engine.dispose()
    return url, summary


def write_sample_files(session: Session, data_dir: Path) -> None:
    """The files the sample's rows name (build logs), so every link its pages show resolves."""
    for artifact_id, relative, text in sample_files(session):
        target = data_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        set_artifact_size(session, artifact_id, target.stat().st_size)
