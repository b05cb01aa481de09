"""HTTP shapes: `XIn` validated at the edge (unknown fields refused), `XOut` what the API returns.

The `XOut` of a read model (`gate.read_models`) is derived from its dataclass, never retyped."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from gate.read_models.kernel_series import HistoryPoint, KernelSummary, LatestVerdict
from gate.read_models.revision import (
    ArtifactDetail,
    EventDetail,
    JobDetail,
    RevisionDetail,
    StageDetail,
    VerdictDetail,
)

# Revisions and branch names reach git as arguments: no leading "-", no whitespace or control chars.
REV_PATTERN = r"^[A-Za-z0-9_.][A-Za-z0-9_./~^@{}+-]*$"
NAME_PATTERN = r"^[A-Za-z0-9_.][A-Za-z0-9_.+-]*$"


class RevisionIn(BaseModel):
    """A revision to gate."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(min_length=1, max_length=2000, pattern=r"^[^-\x00-\x1f][^\x00-\x1f]*$",
                      description="local path or git URL of a repository with gate.toml")
    sha: str = Field(min_length=1, max_length=200, pattern=REV_PATTERN, description="sha or ref")
    branch: str | None = Field(None, max_length=200, pattern=REV_PATTERN)
    base_sha: str | None = Field(None, max_length=200, pattern=REV_PATTERN,
                                 description="baseline; default: last accepted revision, else the parent")
    kernels: list[Annotated[str, Field(pattern=NAME_PATTERN, max_length=200)]] | None = Field(
        None, min_length=1, max_length=200, description="only these kernels of gate.toml (default: all)")
    force: bool = Field(False, description=(
        "store a new revision even when an identical submission (same repository, full commit sha, "
        "base_sha and set of kernels) is queued or running; by default that one is returned"))

    def kernel_names(self) -> list[str] | None:
        return list(dict.fromkeys(self.kernels)) if self.kernels else None


class RevisionCreatedOut(BaseModel):
    id: int
    status_url: str
    reused: bool = Field(False, description=(
        "true: an identical submission was already queued or running and this is that revision "
        "(HTTP 200); nothing new was stored"))


class CancelOut(BaseModel):
    id: int
    status: str = Field(description="`cancelled`: final; no job of it runs, none has a verdict it did not have")
    cancelled_jobs: list[int] = Field(description="jobs this call stopped (queued or running); [] when the "
                                                  "revision was cancelled before")
    status_url: str


def response_model(name: str, read_model: type, **fields: Any) -> type[BaseModel]:
    """`XOut` of a read model's dataclass: its fields in its order, each required (as the API has
    always documented them). `fields` gives a nested read model's `XOut` by field name, or adds one
    at the end (`name=type`)."""
    hints = get_type_hints(read_model)
    spec: dict[str, Any] = {f.name: (fields.pop(f.name, hints[f.name]), ...)
                            for f in dataclasses.fields(read_model)}
    spec.update({field_name: (kind, ...) for field_name, kind in fields.items()})
    return create_model(name, __module__=__name__, **spec)


VerdictOut = response_model("VerdictOut", VerdictDetail)
StageOut = response_model("StageOut", StageDetail)
ArtifactOut = response_model("ArtifactOut", ArtifactDetail, url=str)
EventOut = response_model("EventOut", EventDetail)
JobOut = response_model("JobOut", JobDetail, verdict=VerdictOut | None, stages=list[StageOut],
                        artifacts=list[ArtifactOut], events=list[EventOut])
RevisionOut = response_model("RevisionOut", RevisionDetail, jobs=list[JobOut])

LatestVerdictOut = response_model("LatestVerdictOut", LatestVerdict)
KernelOut = response_model("KernelOut", KernelSummary, latest=list[LatestVerdictOut])
PointOut = response_model("PointOut", HistoryPoint)


class HealthOut(BaseModel):
    status: str
    database: str
    executor: str
