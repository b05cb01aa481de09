"""Infrastructure faults. Kernel faults are *data* (stage results), never exceptions.

    GateError                       anything that stops the gate itself from working
     ├── ManifestError              gate.toml is missing, malformed or refers outside the repo
     ├── SourceError                a repository or sha cannot be fetched
     ├── ToolMissingError           nvcc / ncu / cuobjdump / torch not available
     ├── ProfilerError              ncu ran but could not profile (permissions, no counters)
     ├── RunnerError                the GPU child process failed for reasons not of the kernel's making
     ├── StorageError               the database refused or is unreachable
     ├── NotifyError                GitHub or an outbound webhook could not be reached after retries
     └── JobCancelled               a running job was cancelled (or taken from this worker): its
                                    child was stopped and nothing of it is stored

A `GateError` ends a job as `error` (or a stage as `not_run`), never as `accept`.
"""


class GateError(Exception):
    """Base of every infrastructure fault the gate raises on purpose."""


class ManifestError(GateError):
    """The manifest is invalid. The message names the file and the key or path."""

    def __init__(self, message: str, *, file: str = "gate.toml", key: str | None = None):
        self.file = file
        self.key = key
        where = f"{file}: {key}: " if key else f"{file}: "
        super().__init__(where + message)


class SourceError(GateError):
    """A repository or revision could not be fetched."""


class ToolMissingError(GateError):
    """A required external tool is not installed or not on PATH."""


class ProfilerError(GateError):
    """Nsight Compute could not collect counters (e.g. ERR_NVGPUCTRPERM)."""


class RunnerError(GateError):
    """The GPU child process failed in a way the kernel did not cause."""


class StorageError(GateError):
    """The database is unreachable or refused a write."""


class NotifyError(GateError):
    """A notification could not be delivered after its retries."""


class JobCancelled(GateError):
    """The job stopped being this worker's while it ran (`POST .../cancel`, or re-queued as an
    orphan): its child process group was killed; the job's row already says what happened."""
