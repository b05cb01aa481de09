"""Outbound notifications: GitHub commit statuses / Check Runs and signed outbound webhooks.

The executor calls two hooks, both inside the caller's database session and both only *store*
`Notification` rows (never network I/O in the job's path); a sender delivers them with retries:
    on_jobs_queued(session, jobs)   -> `pending` statuses
    on_verdict(session, job)        -> final status / completed check run / outbound webhooks
"""
