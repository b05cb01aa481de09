"""What the services and the api ask of an executor. Services never import the executors (an
import-linter contract): whoever composes the process (`gate serve`, `gate worker`) hands them one."""

from __future__ import annotations

from typing import Protocol


class Executor(Protocol):
    def start(self) -> None:
        """Begin taking jobs (and recover those a previous run left behind)."""

    def stop(self) -> None:
        """Stop taking jobs; a job in progress is finished first."""

    def wake(self) -> None:
        """New jobs were queued: look now rather than at the next poll."""

    def cancel(self, job_ids: list[int]) -> None:
        """These jobs were cancelled: stop the children of those this process runs, now."""
