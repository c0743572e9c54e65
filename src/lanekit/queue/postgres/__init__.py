"""The PostgreSQL backend (`backend = "postgres"`): several machines drain one queue.

location.py    the queue's location string (no password, ever) and the dsn check
connection.py  the one client: a lazy session per process, keepalives, timeouts
schema.py      the versioned schema and its migrations (`lanekit db migrate`)
lease.py       the holder's clock (it counts sleep) and its self-fence deadline
backend.py     PostgresQueue: the JobQueue seam in one statement per step
"""
