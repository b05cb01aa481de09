"""What the columns can hold, read from the models: the API takes its input limits from the named
limits here (it imports no model), so that a limit is stated once (the column) and input the
database would refuse is refused at the edge with a clear error instead of a 500 from the driver.

SQLite stores any length in a `String(n)` and 64-bit integers; PostgreSQL enforces `n` and stores
`Integer` in 32 bits. The limits here are the stricter of the two, so both databases accept what
the API accepts.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Integer, SmallInteger, String
from sqlalchemy.orm import InstrumentedAttribute

from gate.storage.models import Job, Metric, Repository, Revision, WebhookDelivery


def max_length(attribute: InstrumentedAttribute) -> int:
    """The length of a `String(n)` column, e.g. `max_length(Revision.sha)` -> 64."""
    (column,) = attribute.property.columns
    if not isinstance(column.type, String) or column.type.length is None:
        raise TypeError(f"{attribute} is not a String(n) column")
    return column.type.length


def int_range(attribute: InstrumentedAttribute) -> tuple[int, int]:
    """The values an integer column holds on both databases: `Integer` is PostgreSQL's int4."""
    (column,) = attribute.property.columns
    if not isinstance(column.type, Integer):
        raise TypeError(f"{attribute} is not an integer column")
    bits = 64 if isinstance(column.type, BigInteger) else 16 if isinstance(column.type, SmallInteger) else 32
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


ID_RANGE = int_range(Revision.id)   # every table's id is the same Integer primary key
# What the API accepts, in characters (`gate.api.schemas`, `gate.api.github_events`).
REPOSITORY_NAME_CHARS = max_length(Repository.name)
DEFAULT_BRANCH_CHARS = max_length(Repository.default_branch)
SHA_CHARS = max_length(Revision.sha)
BASE_SHA_CHARS = max_length(Revision.base_sha)
BRANCH_CHARS = max_length(Revision.branch)
JOB_KERNEL_CHARS = max_length(Job.kernel)
KERNEL_CHARS = max_length(Metric.kernel)        # what a kernel's history is asked by
GPU_KIND_CHARS = max_length(Metric.gpu_kind)
SHAPE_CHARS = max_length(Metric.shape)
METRIC_CHARS = max_length(Metric.name)
SERIES_CHARS = max_length(Metric.series)
DELIVERY_ID_CHARS = max_length(WebhookDelivery.delivery_id)
PULL_REQUEST_RANGE = int_range(Revision.pull_request)


def storable_id(value: int) -> bool:
    """Whether `value` can be a row's id (every table's `id` is an `Integer`). One that cannot names
    no row: look-ups answer None for it instead of sending the database a value it fails on."""
    low, high = ID_RANGE
    return low <= value <= high

