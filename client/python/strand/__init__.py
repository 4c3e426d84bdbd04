"""strand for Python: the runtime that runs Python functions in strand
workers (strand.runtime). The Fiber-shaped client (Pool, Process, queues,
managers) is being built on it."""
