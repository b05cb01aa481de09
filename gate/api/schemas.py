"""HTTP shapes: `XIn` validated at the edge (unknown fields refused), `XOut` what the API returns.

The `XOut` of a read model (`gate.read_models`) is derived from its dataclass, never retyped; its
times are stated in UTC with the offset (`UtcDatetime`). A string that reaches a column is limited
to that column's length (`gate.storage.limits`), so both databases take whatever the API accepts."""

from __future__ import annotations

import dataclasses
import types
from datetime import UTC, datetime
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, create_model, field_validator

from gate.errors import SourceError
from gate.manifest.load import MAX_KERNEL_NAME_CHARS
from gate.read_models.kernel_series import HistoryPoint, KernelSummary, LatestVerdict
from gate.read_models.revision import (
    ArtifactDetail,
    EventDetail,
    JobDetail,
    RevisionDetail,
    StageDetail,
    VerdictDetail,
)
from gate.services.submissions import canonical_repo
from gate.storage import limits

# Revisions and branch names reach git as arguments: no leading "-", no whitespace or control chars.
REV_PATTERN = r"^[A-Za-z0-9_.][A-Za-z0-9_./~^@{}+-]*$"
NAME_PATTERN = r"^[A-Za-z0-9_.][A-Za-z0-9_.+-]*$"
# Any text without control characters: PostgreSQL refuses NUL in a string, even in a comparison.
PRINTABLE = r"^[^\x00-\x1f\x7f]*$"


def column_text(max_chars: int) -> Any:
    """A string compared with or stored in a column of `max_chars`: printable, at most that long."""
    return Annotated[str, StringConstraints(max_length=max_chars, pattern=PRINTABLE)]


# What a kernel's history is asked by (an unknown name is a 404, an impossible one a 422).
KernelName = column_text(limits.KERNEL_CHARS)
GpuKind = column_text(limits.GPU_KIND_CHARS)
ShapeName = column_text(limits.SHAPE_CHARS)
MetricName = column_text(limits.METRIC_CHARS)
SeriesName = column_text(limits.SERIES_CHARS)


def column_number(value_range: tuple[int, int]) -> Any:
    """A pull request's number, stored in a column holding `value_range` on both databases: 1 up to its top."""
    low, high = value_range
    return Annotated[int, Field(ge=max(low, 1), le=high)]


def repository_name(repo: str) -> str:
    """`repo` as the gate will store it: its name must fit the repositories' column."""
    try:
        _, name = canonical_repo(repo)
    except SourceError as exc:
        raise ValueError(str(exc)) from exc
    limit = limits.REPOSITORY_NAME_CHARS
    if len(name) > limit:
        raise ValueError(f"the repository's name {name[:40]!r}... is {len(name)} characters; at most {limit}")
    return repo


class ErrorOut(BaseModel):
    """Every refusal but a validation error: what is wrong, in words."""

    detail: str


class ValidationErrorOut(BaseModel):
    """One problem of a refused request (`gate.api.validation_errors`: large inputs left out)."""

    loc: list[str | int]
    msg: str
    type: str
    input: Any = None
    ctx: dict[str, Any] | None = None


class ValidationErrorsOut(BaseModel):
    detail: list[ValidationErrorOut]


ERROR_MEANINGS = {
    400: "the request cannot be read (a body that is not JSON, a header out of bounds)",
    401: "a bearer token is required for writes (GATE_API_TOKEN)",
    404: "no such row (an id the database cannot hold names none either)",
    413: "the request body is over GATE_MAX_BODY_BYTES",
    503: "the server cannot take it now",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route that may refuse with these codes (`{"detail": "..."}`)."""
    return {code: {"model": ErrorOut, "description": ERROR_MEANINGS[code]} for code in codes}


class RevisionIn(BaseModel):
    """A revision to gate."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(min_length=1, max_length=2000, pattern=r"^[^-\x00-\x1f][^\x00-\x1f]*$",
                      description="local path or git URL of a repository with gate.toml")
    sha: str = Field(min_length=1, max_length=limits.SHA_CHARS, pattern=REV_PATTERN, description="sha or ref")
    branch: str | None = Field(None, max_length=limits.BRANCH_CHARS, pattern=REV_PATTERN)
    base_sha: str | None = Field(None, max_length=limits.BASE_SHA_CHARS, pattern=REV_PATTERN,
                                 description="baseline; default: last accepted revision, else the parent")
    kernels: list[Annotated[str, Field(pattern=NAME_PATTERN, max_length=MAX_KERNEL_NAME_CHARS)]] | None = Field(
        None, min_length=1, max_length=200, description="only these kernels of gate.toml (default: all)")
    force: bool = Field(False, description=(
        "store a new revision even when an identical submission (same repository, full commit sha, "
        "base_sha and set of kernels) is queued or running; by default that one is returned"))
    remeasure: bool = Field(False, description=(
        "measure every kernel on the GPU even where an earlier job measured the same inputs on the "
        "same environment (by default its figures are reused: docs/reuse.md); implies `force`"))

    _repo_name_fits = field_validator("repo")(repository_name)

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


class RevisionRefusedOut(ValidationErrorsOut):
    """A 422: invalid input (no revision stored), or a stored revision that could not be planned."""

    id: int | None = None
    status_url: str | None = None


def _as_utc(value: datetime) -> datetime:
    """Stored times are naive UTC (`gate.domain.clock.utcnow`); the API states the offset."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]


def _api_type(hint: Any) -> Any:
    """`hint` with `datetime` (alone or in `X | None`) read as `UtcDatetime`."""
    if hint is datetime:
        return UtcDatetime
    if get_origin(hint) in (Union, types.UnionType) and datetime in get_args(hint):
        return Union[tuple(UtcDatetime if a is datetime else a for a in get_args(hint))]  # noqa: UP007
    return hint


def response_model(name: str, read_model: type, omit: tuple[str, ...] = (), **fields: Any) -> type[BaseModel]:
    """`XOut` of a read model's dataclass: its fields in its order, each required (as the API has
    always documented them), times in UTC with the offset. `fields` gives a nested read model's
    `XOut` by field name, or adds one at the end (`name=type`); `omit` leaves fields out."""
    hints = get_type_hints(read_model)
    spec: dict[str, Any] = {f.name: (fields.pop(f.name, _api_type(hints[f.name])), ...)
                            for f in dataclasses.fields(read_model) if f.name not in omit}
    spec.update({field_name: (kind, ...) for field_name, kind in fields.items()})
    return create_model(name, __module__=__name__, **spec)


# The JSON API states rule rows, fingerprints and stage results as the JSON they are stored as
# (`gate.domain.codec.to_json`); a stage's result keeps the key `payload` it always had.
VerdictOut = response_model("VerdictOut", VerdictDetail, rules=list[dict[str, Any]],
                            fingerprint=dict[str, Any] | None)
StageOut = response_model("StageOut", StageDetail, omit=("result", "unreadable"), payload=dict[str, Any] | None)
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
