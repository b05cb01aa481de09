"""Synthetic sample data: a judged history of FlashCore kernels, generated, never measured.

For screenshots, the browser tests, the kernel-page tests and the history benchmark. Every revision
it writes carries `source="synthetic"` (the pages say so), so it never passes for a measurement.
`gate demo` gates real commits instead (`gate.demo`).

Modules, each importing only those before it: `kernels` (shapes, levels, gates), `story` (one event
per commit), `kernel_model` (a kernel's accepted state), `stage_payloads`, `judging` (one job),
`seed` (the whole history). The rows are written through `uow.samples` (`gate.storage.samples`),
which also appends one more judged revision to a history (`append_judged_revision`).
"""

from gate.sample.seed import SeedSummary, seed_judged_history

__all__ = ["SeedSummary", "seed_judged_history"]
