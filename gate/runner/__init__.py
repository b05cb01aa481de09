"""The GPU child process of one job: `python -m gate.runner REQUEST.json RESULT.json`.

`gate.domain.child_protocol` holds what both sides share (exit codes, the event line format, JSON
files), `__main__` is the child; the parent that starts it is `gate.executors.child.run_child`. The
child imports only `gate.domain`, `gate.pipeline` (the order of the stages), the subsystems the
stages live in (`gate.compiling`, `gate.checking`, `gate.timing`, `gate.profiling`, `gate.nvidia`)
and their GPU-side needs (torch, ncu-report, numpy), never the web, the database or the
notifications (import-linter contracts in pyproject.toml), so a GPU worker needs a lean environment
and a faulting kernel takes down nothing but the child.
"""
