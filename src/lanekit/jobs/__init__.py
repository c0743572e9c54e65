"""The job verbs across lanes: history (`jobs`, `job`), retry/requeue/cancel, batch enqueue,
recover and purge.
"""
