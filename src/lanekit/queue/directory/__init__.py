"""The directory queue (design.md section 3): exactly-once claims by one atomic rename.

Layout under the queue directory, all on one local filesystem:

    tmp/      writers build files here, then rename them into place
    queue/    <id>.json, ready to run; generated ids start with the UTC time in ns (sort = age)
    claimed/  <id>.<owner>.json, owner = <hosttag>-<pid>-<start token>: claim and owner are one
              rename, and the owner holds a flock on the file while the job runs
    delayed/  <id>.<not-before epoch>.json, retries waiting out their backoff
    done/     <YYYY-MM-DD>/<id>.json (UTC day buckets, so no directory grows without bound)
    failed/   <id>.json plus <id>.error (why)
    records/  <id>.json status records and the re-execution guard
    (lanekit.queue.directory.recordstore) logs/     lane logs (written by the runner)

Every move is a no-replace rename (lanekit.system.fsops): a collision is an error, never an
overwrite.
In done/ and failed/ a second copy of an id keeps its claimed name (<id>.<owner>.json) next to
the first; in queue/ and delayed/ it goes to failed/ as a duplicate. No job file is deleted.

Producers in any language can enqueue without lanekit: write tmp/<anything>, then rename it to
queue/<id>.json. The claimer creates the record of such a job when it claims it.

The package: `layout` (the one file-name grammar), `state` (what the parts share, and the
claim's lock), `safety` (setup and refusals), `enqueue`, `claim`, `settle`, `recover`,
`census` (how many, how old: what status shows), `observe`, `verbs`, `purge`, `pages`
(history), `mark` (the running mark), `recordstore` (records/ and the re-execution guard),
`liveness` (the one claim-state answer), `fileio`, `peek` (the empty run's look, before
anything is imported), and `Queue` below: the JobQueue (lanekit.queue.protocol) over one
directory. Everyone outside this package opens it through lanekit.queue.open_queue.
"""
