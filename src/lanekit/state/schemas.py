"""The version of every JSON document lanekit writes or keeps, in one place: a bump is one line
here (tests/state/test_schemas.py pins that no other module defines one, and that docs/json.md
states the same numbers). In state/ because every writer may import state/, which imports only
system/ and errors. Constants only: the empty run reads its snapshot through this module.

Bump a command's number by docs/json.md's versioning rules; a private file's when an older
lanekit could misread the new shape (a newer one is refused, never guessed).
"""

# `lanekit CMD --json` documents (docs/json.md, each section's `schema` row).
SCHEDULE_SCHEMA = 1
VALIDATE_SCHEMA = 1
APPLY_SCHEMA = 1
STATUS_SCHEMA = 1
DOCTOR_SCHEMA = 2
"""History: 1 - findings with id, severity, subject, message, fix; the queue checks reported on
every lane of the queue. 2 - findings carry `subject_kind` (lane, plist, queue) and `lanes`;
queue checks report once, with the queue as subject."""
CHECKS_SCHEMA = 1  # doctor --list-checks
JOBS_SCHEMA = 1  # jobs and job
TIMELINE_SCHEMA = 1
SELFTEST_SCHEMA = 1
VERBS_SCHEMA = 1  # retry, requeue, cancel, pause, resume, purge
WATCH_SCHEMA = 1
NOTICE_SCHEMA = 1  # what a watch channel's `command` reads on stdin, a `webhook` as its body

# Files lanekit keeps.
RECORD_SCHEMA = 1
"""records/<id>.json's `schema_version`. History: 1 - first version (schema_version, job_id,
state, attempts, queued_at, updated_at, lane, error)."""
SNAPSHOT_SCHEMA = 1  # the applied lane snapshot
POSTGRES_QUEUE_SCHEMA = 3
"""The postgres queue's tables (lanekit.queue.postgres.schema: one migration per version;
`lanekit db migrate` applies them, a newer one is refused). History: 1 - jobs, attempts,
tombstones, meta; 2 - the finished jobs' index is (queue, state, seq) with finished_at;
3 - an attempt's row is written once, when it ends (a running attempt is its job's lease
columns, which stay on the row as its last holder's)."""
MEMORY_SCHEMA = 1  # the watchdog's memory
CONFIRMATIONS_SCHEMA = 1  # which watch channels the user confirmed (`lanekit watch --test`)
QUEUE_CHECK_SCHEMA = 1
"""The queue probe's version in a directory queue's `.queue-check` stamp
(lanekit.queue.directory.safety): raise it whenever the probe asks something new of the
filesystem, so that every queue is probed again."""
JOB_STATUS_SCHEMA = 1
"""The job watcher's status file (`v`). History: 1 - first version (v, exit, stopped, timed_out,
duration, stderr, limit); `cancelled` and `lease_lost` added later within 1 (absent: false)."""
SPAWN_STATUS_SCHEMA = 1  # a job the emulated domain spawned (lanekit.service.launchd.environ)
EMULATED_STATE_SCHEMA = 1  # the emulated domain's state file
EMULATED_DEFINITION_VERSION = 1
"""Bump when the emulated domain's definition_of() words something differently: older kept
definitions are then ignored."""
