"""Where a job's source comes from: a bare git mirror per repository (`mirror.Mirror`), read by the
parent side of a job (`gate.executors.job`) and by planning (`gate.services.sources`). The GPU child
never fetches anything: it is handed a checked-out workspace."""
