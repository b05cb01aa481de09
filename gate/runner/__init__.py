"""The GPU child process of one job: `python -m gate.runner REQUEST.json RESULT.json`.

`protocol` holds what both sides share (exit codes, the event line format, JSON files), `__main__`
is the child, `spawn.run_child` the parent. The child imports only `gate.domain`, `gate.pipeline`
and their GPU-side needs, so a faulting kernel takes down nothing but the child.
"""
