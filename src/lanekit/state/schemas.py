"""The version of every JSON document lanekit writes or keeps: one owner, so a bump is one line
and no two modules can disagree about a document's number (tests/state/test_schemas.py pins
that no other module defines one, and that docs/json.md states the same numbers).

It sits in state/ because every writer (queue, run, service, watch, doctor, timeline, reconcile,
proof, cli) may import state/, which imports only system/ and errors; system/ holds OS
primitives and knows none of lanekit's documents. Constants only: the lane's entrypoint reads a
snapshot through it on every scheduled run.

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
CHECKS_SCHEMA = 1
"""`lanekit doctor --list-checks --json`."""
JOBS_SCHEMA = 1
"""`lanekit jobs --json` and `lanekit job --json`."""
TIMELINE_SCHEMA = 1
SELFTEST_SCHEMA = 1
VERBS_SCHEMA = 1
"""`retry`, `requeue`, `cancel`, `pause`, `resume` and `purge --json`."""
WATCH_SCHEMA = 1
NOTICE_SCHEMA = 1
"""The notice a watch channel's `command` gets on stdin and a `webhook` as its body."""

# Files lanekit keeps (each versioned on its own).
RECORD_SCHEMA = 1
"""A queue's records/<id>.json (`schema_version`). History: 1 - first version (schema_version,
job_id, state, attempts, queued_at, updated_at, lane, error)."""
SNAPSHOT_SCHEMA = 1
"""The applied lane snapshot the lane's entrypoint reads."""
MEMORY_SCHEMA = 1
"""The watchdog's memory file."""
JOB_STATUS_SCHEMA = 1
"""The job watcher's status file (`v`). History: 1 - first version (v, exit, stopped, timed_out,
duration, stderr, limit); `cancelled` added later within 1 (absent: false, so an older
watcher's status still reads)."""
SPAWN_STATUS_SCHEMA = 1
"""The status file of a job the emulated domain spawned (lanekit.service.launchd.environ)."""
EMULATED_STATE_SCHEMA = 1
"""The emulated domain's state file."""
EMULATED_DEFINITION_VERSION = 1
"""Bump when the emulated domain's definition_of() words something differently: older kept
definitions are then ignored."""
