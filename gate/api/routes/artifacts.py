"""Downloading a job's kept files (logs, reports, result JSON)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

from gate.api.deps import GateDep, SessionDep
from gate.api.schemas import errors
from gate.storage import artifacts

router = APIRouter(prefix="/api/v1", tags=["artifacts"])


@router.get("/artifacts/{artifact_id}", response_class=FileResponse,
            responses={200: {"content": {"*/*": {}}, "description": "the file, typed by its name"},
                       **errors(404)})
def download_artifact(artifact_id: int, session: SessionDep, gate: GateDep) -> FileResponse:
    """One artifact's file."""
    row = artifacts.find(session, artifact_id)
    path = artifacts.resolve(gate.settings.data_dir, row.path) if row else None
    if path is None:
        raise HTTPException(status_code=404, detail=f"no artifact {artifact_id}")
    return FileResponse(path, filename=path.name)
