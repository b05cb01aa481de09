"""Files kept with a job under the data dir: `artifacts/<job_id>/<name>`; the DB holds the relative path."""

from __future__ import annotations

import os
from pathlib import Path


from gate.read_models.revision import ArtifactDetail
from gate.returned_files import Budget, copy_returned
from gate.storage.db import Queries
from gate.storage.limits import storable_id
from gate.storage.models import Artifact

NAME_MAX_BYTES = 255        # a file name, on every Linux file system


def job_artifact_dir(data_dir: Path, job_id: int) -> Path:
    return Path(data_dir) / "artifacts" / str(job_id)


def keep(data_dir: Path, job_id: int, kind: str, source: Path) -> Artifact:
    """Copy `source` into the job's artifact folder (unless it is there already); an unsaved row.
    The copy goes through `gate.returned_files` (`Refused` for a link, a FIFO, a file over the cap):
    the store never holds what a link pointed at."""
    data_dir = Path(data_dir).resolve()
    folder = job_artifact_dir(data_dir, job_id)
    folder.mkdir(parents=True, exist_ok=True)
    source = Path(os.path.abspath(source))
    target = source if source.parent == folder else _unused(folder, source.name, kind)
    if target != source:
        copy_returned(source.parent, source.name, target, Budget())
    return Artifact(job_id=job_id, kind=kind, path=target.relative_to(data_dir).as_posix(),
                    size_bytes=target.stat().st_size)


def _unused(folder: Path, name: str, kind: str) -> Path:
    """`name` in `folder`, else `<kind>-<n>-<name>` for the first `n` free, within the 255 bytes a file
    name may have (issue 44: `a/ptxas.log` and `b/ptxas.log`, or a 249-character name with its prefix,
    ended the job `error`, FileExistsError or ENAMETOOLONG, and left copies without rows)."""
    n, candidate = 1, folder / name
    while candidate.exists():
        n += 1
        prefix = f"{kind}-{n}-".encode()
        candidate = folder / (prefix + name.encode()[len(prefix) - NAME_MAX_BYTES:]).decode(errors="ignore")
    return candidate


def write_text(data_dir: Path, job_id: int, kind: str, name: str, text: str) -> Artifact:
    folder = job_artifact_dir(data_dir, job_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return keep(data_dir, job_id, kind, path)


class Artifacts(Queries):
    """`uow.artifacts`."""

    def find(self, artifact_id: int) -> ArtifactDetail | None:
        """The artifact with this id; None if unknown."""
        row = self._session.get(Artifact, artifact_id) if storable_id(artifact_id) else None
        return ArtifactDetail(row.id, row.kind, row.path, row.size_bytes) if row else None


def resolve(data_dir: Path, relative: str) -> Path | None:
    """The file of an artifact row, or None if the stored path would leave the data dir or is gone."""
    root = Path(data_dir).resolve()
    path = (root / relative).resolve()
    # A link anywhere on the way (the stored path resolves elsewhere) is never served.
    if path != Path(os.path.normpath(root / relative)) or not path.is_relative_to(root) or not path.is_file():
        return None
    return path
