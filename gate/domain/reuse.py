"""Reusing an earlier job's measurement: where reused figures came from, and how every surface says so.

A job whose inputs and its baseline's equal those of a job already measured on this environment takes
that job's whole result, and the verdict is decided again with the current gates; a reused candidate
figure is never set against a freshly measured baseline, which would not be interleaved. The one
exception is a profile (one side measured alone): a baseline whose inputs equal an earlier job's
candidate's takes that candidate's stored profile (`ReusedProfile`). docs/reuse.md says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gate.domain.results import JobResult, ProfileResult


@dataclass(frozen=True)
class Provenance:
    """The job that measured the figures a later job reuses."""

    job_id: int
    sha: str                       # the revision that job gated
    measured_at: str               # ISO 8601, UTC: when that job finished

    @property
    def line(self) -> str:
        """The one wording of a reused figure's origin (CLI, pages, hover text)."""
        return reused_line(self.sha, self.job_id, self.measured_at)


def reused_line(sha: str, job_id: int, measured_at: str) -> str:
    """`reused from 1a2b3c4d5e6f job 42, 2026-11-25 23:10 UTC`."""
    when = measured_at[:16].replace("T", " ")
    return f"reused from {sha[:12]} job {job_id}, {when} UTC"


@dataclass
class ReusedMeasurement:
    """An earlier job's result, as the lookup found it."""

    result: JobResult
    source: Provenance


@dataclass
class ReusedProfile:
    """An earlier job's candidate profile, offered as a later job's baseline profile."""

    profile: ProfileResult
    source: Provenance

    @property
    def line(self) -> str:
        """The note and evidence line of the job that took it."""
        return f"baseline profile {self.source.line}"


@dataclass(frozen=True)
class ReuseKeys:
    """A job's keys (`gate.executors.reuse_key`); "" where no GPU was seen (nothing is reused)."""

    job: str = ""                  # both sides' inputs and the request: an earlier job's result may stand
    candidate: str = ""            # the candidate side's: its profile may stand for a later baseline
    baseline: str = ""             # the baseline side's: an earlier candidate's profile may stand for it


@dataclass(frozen=True)
class HistoryAnswers:
    """What the history holds for a job's keys (`gate.storage.reuse` answers)."""

    measured: ReusedMeasurement | None = None          # a judged job with the same `ReuseKeys.job`
    baseline_profile: ReusedProfile | None = None      # a candidate profile with the baseline's side key


class History(Protocol):
    """The parent's question to the history, for one repository: "measured already?"."""

    def answers(self, kernel: str, keys: ReuseKeys) -> HistoryAnswers: ...
