"""What happens to a submitted revision before a worker sees it: storing it, planning its jobs."""
