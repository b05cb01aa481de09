"""Read models: what the pages, the figures and the JSON API show, as plain values.

The storage fills them; the figures and the API read them and import nothing of the storage.
    kernel_series   kernels' latest verdicts, the queue, recent revisions, a kernel's metric series
    revision        one revision with its jobs, verdicts, stage results, artifacts and events
"""
