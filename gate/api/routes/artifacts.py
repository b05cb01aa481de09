"""Downloading a job's kept files (logs, reports, result JSON).

Text files are served with the data folder's absolute path written `<data>`: a build log names
the workspace its compiler ran in, and that path says where the server keeps its database and
mirrors (issue 24). Binary reports (`.ncu-rep`) are served as stored: rewriting them would break
them."""

from __future__ import annotations

import mimetypes
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, Response, StreamingResponse

from gate.api.deps import GateDep, UnitDep
from gate.api.schemas import errors
from gate.domain import routes
from gate.domain.server_paths import hide_in_chunks
from gate.storage import artifacts

router = APIRouter(tags=["artifacts"])
TEXT_SUFFIXES = (".log", ".txt", ".json", ".csv", ".ptx", ".sass", ".md")
PIECE_BYTES = 1 << 16


@router.get(routes.ARTIFACT, response_class=FileResponse,
            responses={200: {"content": {"*/*": {}}, "description": "the file, typed by its name"},
                       **errors(404)})
def download_artifact(artifact_id: int, uow: UnitDep, gate: GateDep) -> Response:
    """One artifact's file."""
    found = uow.artifacts.find(artifact_id)
    path = artifacts.resolve(gate.settings.data_dir, found.path) if found else None
    if path is None:
        raise HTTPException(status_code=404, detail=f"no artifact {artifact_id}")
    if path.suffix.lower() not in TEXT_SUFFIXES:
        return FileResponse(path, filename=path.name)
    media = mimetypes.guess_type(path.name)[0] or "text/plain"
    return StreamingResponse(hide_in_chunks(_pieces(path), gate.settings.data_dir), media_type=media,
                             headers={"Content-Disposition": f"attachment; filename*=utf-8''{quote(path.name)}"})


def _pieces(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as stream:
        while piece := stream.read(PIECE_BYTES):
            yield piece
