"""The GPU child process of one job: `python -m gate.runner REQUEST.json RESULT.json` (`__main__`).

It imports nothing of the web, the database or the notifications (pyproject.toml's contracts), so a GPU
worker needs a lean environment and a faulting kernel takes down nothing but the child.
"""
