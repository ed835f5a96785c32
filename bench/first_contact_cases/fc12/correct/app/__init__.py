"""jobsvc: a small in-process job service (line-protocol HTTP server, client pool,
pub/sub broker, job queue, cache, breaker, batcher, lease lock)."""

__version__ = "0.3.1"
