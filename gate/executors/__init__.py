"""Executors hand queued jobs to workers: `local` (threads in `gate serve`, or `gate worker` polling
the database) and `celery` (GPU workers on other hosts, routed by GPU kind). See `gate.domain.executor.Executor`."""
