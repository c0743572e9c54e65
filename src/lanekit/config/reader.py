"""The parsed TOML document to a Config: tables, queues, lanes, labels and the checks
across them (unique queue dirs, log paths and labels)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from lanekit.config.lanes import watchdog_lane
from lanekit.config.model import (
    DEFAULT_LABEL_PREFIX,
    DEFAULT_PATH,
    DEFAULT_SESSION_TYPES,
    DEFAULT_START,
    DEFAULTS_KEYS,
    DIRECTORY_ONLY_KEYS,
    LANE_KEYS,
    MAX_INT,
    MAX_LABEL_BYTES,
    MIN_JOB_BYTES,
    PLAIN_QUEUE_PREFIX,
    POSTGRES_ONLY_KEYS,
    QUEUE_BACKENDS,
    QUEUE_KEYS,
    QUEUE_ONLY_KEYS,
    RESERVED_ENV,
    RESERVED_LABEL_PREFIX,
    RETENTION_MINIMUM,
    TOP_KEYS,
    Config,
    LaneSpec,
    QueueSpec,
    StartOn,
    plain_dir,
)
from lanekit.config.text import (
    Key,
    describe_value,
    did_you_mean,
    expand_home,
    key_path,
    plist_safe,
    quoted,
)
from lanekit.config.values import ConfigReader
from lanekit.config.watch import WATCH_LANE, WatchSpec, read_watch
from lanekit.queue import directory_of
from lanekit.schedule import (
    Schedule,
    ScheduleError,
    build_schedule,
    schedule_entry_errors,
)
from lanekit.state.backend import MANAGERS
from lanekit.state.snapshot_schema import (
    DEFAULT_KEEP_DONE,
    DEFAULT_KEEP_FAILED,
    DEFAULT_MAX_JOB_BYTES,
)


class DocumentReader(ConfigReader):
    """Walks the parsed TOML document, building specs and collecting every error."""

    def real(self, path: Path) -> Path:
        """Where `path` really is (`..` and symlinks resolved as far as the path exists),
        each directory resolved once per read: lanes' logs share their queue's logs/, and a
        realpath per log walked the same directories for every lane."""
        reals: dict[Path, Path] = self.__dict__.setdefault("_reals", {})
        found = reals.get(path)
        if found is None:
            parent = path.parent
            # os.path.islink answers False on any error, as realpath's own walk does.
            if parent == path or path.name in {".", ".."} or os.path.islink(path):  # noqa: PTH114
                found = Path(os.path.realpath(path))
            else:
                found = self.real(parent) / path.name
            reals[path] = found
        return found

    def config(self, path: Path, document: dict[str, Any]) -> Config:
        self.known_keys(document, (), TOP_KEYS, "top-level tables")
        defaults = self.table(document, ("defaults",))
        queues_table = self.table(document, ("queues",))
        lanes_table = self.table(document, ("lanes",))

        since = len(self.failures)
        self.known_keys(defaults, ("defaults",), DEFAULTS_KEYS, "keys of [defaults]")
        default_path = self.dir_list(defaults, ("defaults", "path"))
        prefix = self.label_prefix(defaults)
        templates = self.path(defaults, ("defaults", "templates"))
        manager = self.choice(defaults, ("defaults", "service_manager"), MANAGERS)
        default_options = self.options(defaults, ("defaults",))
        self.in_file_order(since, defaults, 1)

        queues: dict[str, QueueSpec] = {}
        broken_queues: set[str] = set()
        for name in queues_table:
            queue = self.queue(queues_table, name)
            if queue is None:
                broken_queues.add(name)
            else:
                queues[name] = queue
        self.unique_queue_dirs(queues)

        lanes: dict[str, LaneSpec] = {}
        for name in lanes_table:
            lane = self.lane(
                lanes_table,
                name,
                queues=queues,
                broken_queues=broken_queues,
                prefix=prefix or DEFAULT_LABEL_PREFIX,
                default_path=default_path or DEFAULT_PATH,
                default_options=default_options,
            )
            if lane is not None:
                lanes[name] = replace(lane, project=path.resolve())
        watch = None
        if "watch" in document:
            watch = self.watch(document, queues_table, lanes_table)
            if watch is not None:
                lanes[WATCH_LANE] = watchdog_lane(
                    watch,
                    config_path=path,
                    prefix=prefix or DEFAULT_LABEL_PREFIX,
                    paths=self.paths,
                    path=default_path or DEFAULT_PATH,
                    session_type=default_options.get("session_type", DEFAULT_SESSION_TYPES),
                )
        self.unique_labels(lanes)
        self.unique_log_paths(lanes)
        self.logs_outside_queues(lanes, queues)
        return Config(
            path=path,
            label_prefix=prefix or DEFAULT_LABEL_PREFIX,
            queues=queues,
            lanes=lanes,
            templates=templates,
            service_manager=manager,
            watch=watch,
        )

    def watch(
        self,
        document: Mapping[str, Any],
        queues: Mapping[str, Any],
        lanes: Mapping[str, Any],
    ) -> WatchSpec | None:
        """`[watch]`, and the names it takes: lane `watch` and queue `watch` are the
        watchdog's own while the table exists."""
        table = self.table(document, ("watch",))
        if not isinstance(document["watch"], dict):
            return None
        for section, names in (("lanes", lanes), ("queues", queues)):
            if WATCH_LANE in names:
                self.fail(
                    (section, WATCH_LANE),
                    f"the name {WATCH_LANE} is the watchdog's while lanes.toml has [watch]",
                    f"rename [{section}.{WATCH_LANE}], or remove [watch]",
                )
        return read_watch(self, table)

    def queue(self, queues: Mapping[str, Any], name: str) -> QueueSpec | None:
        key: Key = ("queues", name)
        before = len(self.failures)
        self.valid_name(key, name, "queue")
        table = self.table(queues, key)
        if not isinstance(queues[name], dict):
            return None
        self.known_keys(table, key, QUEUE_KEYS, "keys of a queue")
        backend = self.choice(table, (*key, "backend"), QUEUE_BACKENDS) or QUEUE_BACKENDS[0]
        wrong = POSTGRES_ONLY_KEYS if backend == "directory" else DIRECTORY_ONLY_KEYS
        for stray in wrong:
            if stray in table:
                self.fail(
                    (*key, stray),
                    f"{stray} is not a key of a {backend} queue",
                    f"remove it, or set backend = "
                    f"{quoted('postgres' if backend == 'directory' else 'directory')}",
                )
        if backend == "postgres":
            directory = self.postgres_location(table, key, name)
        else:
            directory = self.path(table, (*key, "dir"))
            if "dir" not in table:
                self.fail(
                    key,
                    'missing required key "dir"',
                    'add dir = "~/path/to/queue" (tmp/ queue/ claimed/ ... are created inside)',
                )
        durable = self.boolean(table, (*key, "durable"))
        keep_done = self.duration(table, (*key, "keep_done"), minimum=RETENTION_MINIMUM)
        keep_failed = self.duration(table, (*key, "keep_failed"), minimum=RETENTION_MINIMUM)
        max_job_bytes = self.integer(table, (*key, "max_job_bytes"), MIN_JOB_BYTES, MAX_INT)
        self.in_file_order(before, table, 2)
        if len(self.failures) > before or directory is None:
            return None
        return QueueSpec(
            name=name,
            dir=directory,
            durable=True if durable is None else durable,
            keep_done=DEFAULT_KEEP_DONE if keep_done is None else keep_done,
            keep_failed=DEFAULT_KEEP_FAILED if keep_failed is None else keep_failed,
            max_job_bytes=DEFAULT_MAX_JOB_BYTES if max_job_bytes is None else max_job_bytes,
        )

    def postgres_location(self, table: Mapping[str, Any], key: Key, name: str) -> Path | None:
        """A postgres queue's location (its `dir`), from dsn, schema, lease and on_orphan. A
        dsn carrying a password is refused without repeating it: passwords live where libpq
        looks for them (~/.pgpass, pg_service.conf), never in lanes.toml, a plist or a log."""
        from lanekit.queue.postgres.location import (
            DEFAULT_LEASE,
            DEFAULT_SCHEMA,
            MIN_LEASE,
            OnOrphan,
            PgLocation,
            dsn_problem,
            password_in,
            schema_problem,
        )

        dsn = self.string(table, (*key, "dsn"))
        if "dsn" not in table:
            self.fail(
                key,
                'missing required key "dsn"',
                'add dsn = "service=NAME" (a section of ~/.pg_service.conf) or '
                'dsn = "host=HOST dbname=DB user=USER"',
            )
        elif dsn is not None and password_in(dsn):
            problem = dsn_problem(dsn)
            self.fail(
                (*key, "dsn"),
                "carries a password (not repeated here)"
                if problem is None
                else f"is not a conninfo libpq reads ({problem.splitlines()[0]})",
                "keep the password out of lanes.toml: put it in ~/.pgpass (mode 0600) or in "
                'pg_service.conf, and write dsn = "service=NAME" '
                "(or the dsn without its password)",
            )
            dsn = None
        schema = self.string(table, (*key, "schema"))
        if schema is not None and (why := schema_problem(schema)) is not None:
            self.fail((*key, "schema"), f"{quoted(schema)} cannot name a schema", why)
            schema = None
        lease = self.duration(table, (*key, "lease"), minimum=MIN_LEASE)
        on_orphan = self.choice(table, (*key, "on_orphan"), tuple(OnOrphan))
        if dsn is None:
            return None
        location = PgLocation(
            queue=name,
            dsn=dsn,
            schema=schema or DEFAULT_SCHEMA,
            lease=DEFAULT_LEASE if lease is None else lease,
            on_orphan=OnOrphan(on_orphan or OnOrphan.RETRY),
        )
        return Path(str(location))

    def unique_queue_dirs(self, queues: Mapping[str, QueueSpec]) -> None:
        """Two queues in one directory, or one inside another, would mix their jobs: compared
        by real path (`z/../q` and a symlinked alias are the same directory) and ignoring case
        (macOS volumes usually do)."""
        seen = _PathIndex[QueueSpec]()
        for queue in queues.values():
            real = self.real(queue.dir)
            found = seen.clash(real)
            if found is None:
                seen.add(real, queue)
                continue
            other, other_real = found
            where = ("queues", queue.name, "dir")
            theirs = f"the dir of queue {quoted(other.name)}"
            if _same_path(real, other_real):
                alias = "" if queue.dir == other.dir else f" ({other.dir}), as real path {real}"
                self.fail(
                    where,
                    f"{queue.dir} is already {theirs}{alias}",
                    "several lanes may drain one queue: point their `queue` at the same name",
                )
                continue
            nesting = "is inside" if _inside(real, other_real) else "contains"
            self.fail(
                where,
                f"{queue.dir} {nesting} {theirs} ({other.dir}): one queue's directories "
                "would hold the other's jobs",
                "give each queue a directory of its own, outside every other queue's",
            )

    def lane(
        self,
        lanes: Mapping[str, Any],
        name: str,
        *,
        queues: Mapping[str, QueueSpec],
        broken_queues: set[str],
        prefix: str,
        default_path: tuple[str, ...],
        default_options: Mapping[str, Any],
    ) -> LaneSpec | None:
        key: Key = ("lanes", name)
        before = len(self.failures)
        name_ok = self.valid_name(key, name, "lane")
        table = self.table(lanes, key)
        if not isinstance(lanes[name], dict):
            return None
        self.known_keys(table, key, LANE_KEYS, "keys of a lane")

        plain = "queue" not in table
        queue = None if plain else self.lane_queue(table, key, queues, broken_queues)
        command = self.command(table, (*key, "command"))
        if "command" not in table:
            example = '["/path/to/tool"]' if plain else '["/path/to/tool", "{job}"]'
            self.fail(key, 'missing required key "command"', f"add command = {example}")
        retry_on_crash = self.boolean(table, (*key, "retry_on_crash"))
        self.plain_keys(table, key, plain=plain, command=command)
        schedule = self.schedule(table, key)
        env = self.env(table, (*key, "env"))
        path = self.dir_list(table, (*key, "path"))
        label = self.label(table, key, name, prefix) if name_ok else None
        logs = {
            field_name: self.path(table, (*key, field_name))
            for field_name in ("stdout_log", "stderr_log", "log")
        }
        options = {**default_options, **self.options(table, key)}
        start = self.start(table, key, plain=plain)
        working_directory = self.path(table, (*key, "working_directory"))
        replaces = self.replaces(table, key)

        self.in_file_order(before, table, 2)
        # A lane of a broken queue has no error of its own: the queue's error covers it.
        if len(self.failures) > before or (queue is None and not plain):
            return None
        assert command is not None and schedule is not None and label is not None
        if queue is None:
            queue = QueueSpec(
                name=f"{PLAIN_QUEUE_PREFIX}{name}", dir=plain_dir(self.paths.state, label)
            )
            # One run per fire, never retried: the options of a queue lane that say otherwise
            # (from [defaults]) do not apply.
            options = {k: v for k, v in options.items() if k not in QUEUE_ONLY_KEYS}
            options.update(max_jobs=1, max_attempts=1)
        log_dir = (
            queue.dir / "logs"
            if directory_of(queue.dir) is not None
            else self.paths.state / "queues" / queue.name / "logs"
        )
        return LaneSpec(
            name=name,
            label=label,
            queue=queue,
            command=command,
            schedule=schedule,
            stdout_path=logs["stdout_log"] or log_dir / f"{name}.out.log",
            stderr_path=logs["stderr_log"] or log_dir / f"{name}.err.log",
            log_path=logs["log"] or log_dir / f"{name}.log",
            env=env or {},
            path=path or default_path,
            working_directory=working_directory,
            replaces=replaces,
            start=start,
            plain=plain,
            retry_on_crash=bool(retry_on_crash),
            **options,
        )

    def start(self, table: Mapping[str, Any], key: Key, *, plain: bool) -> tuple[StartOn, ...]:
        """`start`: ["schedule"] (the default), ["schedule", "enqueue"] or ["enqueue"]. A
        plain lane has no queue to start on; a lane not started by its schedule has none."""
        where: Key = (*key, "start")
        picked = self.choices(table, where, tuple(StartOn))
        if picked is None:
            return DEFAULT_START
        start = tuple(StartOn(item) for item in picked)
        if plain and StartOn.ENQUEUE in start:
            self.fail(
                where,
                '"enqueue" needs a queue: a lane without `queue` takes no jobs',
                'add queue = "NAME", or write start = ["schedule"]',
            )
        if StartOn.SCHEDULE not in start:
            for timer in ("schedule", "every"):
                if timer in table:
                    self.fail(
                        (*key, timer),
                        'is never used: start has no "schedule"',
                        f'write start = ["schedule", "enqueue"], or remove {timer}',
                    )
        return start

    def replaces(self, table: Mapping[str, Any], key: Key) -> str | None:
        """The label of the hand-written job the lane takes over: a label launchd could
        load, and not one of lanekit's reserved prefixes' (checked like `label`)."""
        label = self.string(table, (*key, "replaces"))
        if label is None:
            return None
        problem = _label_problem(label, check_reserved=True)
        if problem is not None:
            self.fail((*key, "replaces"), f"label {quoted(label)} {problem[0]}", problem[1])
            return None
        return label

    def plain_keys(
        self,
        table: Mapping[str, Any],
        key: Key,
        *,
        plain: bool,
        command: tuple[str, ...] | None,
    ) -> None:
        """What a plain lane (no `queue`) refuses: `{job}` (there is no job file) and the
        per-job options; and what a queue lane refuses: `retry_on_crash = true` (a queue's jobs
        always run again after a crash: the queue promises at-least-once)."""
        if not plain:
            if table.get("retry_on_crash") is True:
                self.fail(
                    (*key, "retry_on_crash"),
                    "applies to plain lanes only (a lane without `queue`)",
                    "remove it: a queue lane's jobs always run again after a crash",
                )
            return
        if command is not None and any("{job}" in part for part in command):
            self.fail(
                (*key, "command"),
                "uses {job}, but a lane without `queue` has no job file",
                'add queue = "NAME" to run the command once per job, or remove {job}',
            )
        for name in QUEUE_ONLY_KEYS:
            if name in table:
                self.fail(
                    (*key, name),
                    "applies to lanes with a queue only: a plain lane runs its command once "
                    "per fire, one run at a time",
                    f'remove {name}, or add queue = "NAME"',
                )

    def lane_queue(
        self,
        table: Mapping[str, Any],
        key: Key,
        queues: Mapping[str, QueueSpec],
        broken_queues: set[str],
    ) -> QueueSpec | None:
        name = self.string(table, (*key, "queue"))
        if name is None or name in broken_queues:
            return None
        queue = queues.get(name)
        if queue is None:
            names = [*queues, *sorted(broken_queues)]
            known = ", ".join(names) if names else "none defined yet"
            self.fail(
                (*key, "queue"),
                f"no queue named {quoted(name)}{did_you_mean(name, names)}",
                f'define [queues.{name}] with dir = "..." (queues: {known})',
            )
        return queue

    def command(self, table: Mapping[str, Any], key: Key) -> tuple[str, ...] | None:
        value = table.get(str(key[-1]))
        if value is None:
            return None
        hint = 'write an argv list, e.g. command = ["/usr/local/bin/tool", "--file", "{job}"]'
        if not isinstance(value, list):
            self.fail(key, f"expected an array of strings, got {describe_value(value)}", hint)
            return None
        if not value:
            self.fail(key, "is empty", hint)
            return None
        args: list[str] = []
        for index, item in enumerate(value):
            item_key = (*key, index)
            if not isinstance(item, str):
                self.fail(item_key, f"expected a string, got {describe_value(item)}", hint)
            elif not item:
                self.fail(item_key, "is an empty string", "remove it, or write the argument")
            elif (problem := plist_safe(item)) is not None:
                self.fail(item_key, problem, "remove the character")
            else:
                args.append(expand_home(item, self.home))
        return tuple(args) if len(args) == len(value) else None

    def schedule(self, table: Mapping[str, Any], key: Key) -> Schedule | None:
        value = table.get("schedule")
        every = table.get("every")
        ok = True
        if every is not None:
            ok = self.duration(table, (*key, "every"), minimum=1) is not None
        if value is not None and not isinstance(value, str | dict | list):
            self.fail(
                (*key, "schedule"),
                f"expected cron text, a table or an array of them, got {describe_value(value)}",
                'write schedule = "40 10 * * *" or schedule = [{Hour = 10, Minute = 40}]',
            )
            ok = False
        if not ok:
            return None
        entry_errors = schedule_entry_errors(value)
        if len(entry_errors) > 1:
            # build_schedule stops at the first bad element: name every one of them.
            for exc in entry_errors:
                index = () if exc.index is None else (exc.index,)
                self.fail((*key, "schedule", *index), exc.message, exc.hint)
            return None
        try:
            return build_schedule(value, every)
        except ScheduleError as exc:
            where: Key = key
            if exc.field == "every":
                where = (*key, "every")
            elif exc.field == "schedule":
                index = () if exc.index is None else (exc.index,)
                where = (*key, "schedule", *index)
            self.fail(where, exc.message, exc.hint)
            return None

    def env(self, table: Mapping[str, Any], key: Key) -> dict[str, str] | None:
        value = table.get("env")
        if value is None:
            return None
        if not isinstance(value, dict):
            self.fail(
                key,
                f"expected a table of strings, got {describe_value(value)}",
                'write env = { NAME = "value" }',
            )
            return None
        env: dict[str, str] = {}
        for name, item in value.items():
            item_key = (*key, name)
            if name in RESERVED_ENV:
                self.fail(item_key, f"{name} is set by lanekit", RESERVED_ENV[name])
            elif not name or "=" in name:
                self.fail(
                    item_key,
                    "is not a valid environment variable name",
                    "use letters, digits and _ (no = sign)",
                )
            elif (problem := plist_safe(name)) is not None:
                self.fail(item_key, f"name {problem}", "remove the character")
            elif not isinstance(item, str):
                self.fail(
                    item_key,
                    f"expected a string, got {describe_value(item)}",
                    f'environment values are text: write {key_path((name,))} = "{item}"'
                    if isinstance(item, int | float) and not isinstance(item, bool)
                    else "environment values are text: quote the value",
                )
            elif (problem := plist_safe(item)) is not None:
                self.fail(item_key, problem, "remove the character")
            else:
                env[name] = expand_home(item, self.home)
        return env

    def label(self, table: Mapping[str, Any], key: Key, name: str, prefix: str) -> str | None:
        if "label" in table:
            label = self.string(table, (*key, "label"))
            if label is None:
                return None
            problem = _label_problem(label, check_reserved=True)
            if problem is not None:
                self.fail((*key, "label"), f"label {quoted(label)} {problem[0]}", problem[1])
                return None
            return label
        label = f"{prefix}.{name}"
        problem = _label_problem(label, check_reserved=False)
        if problem is not None:
            self.fail(key, f"label {quoted(label)} (label_prefix.name) {problem[0]}", problem[1])
            return None
        return label

    def label_prefix(self, defaults: Mapping[str, Any]) -> str | None:
        key: Key = ("defaults", "label_prefix")
        prefix = self.string(defaults, key)
        if prefix is None:
            return None
        problem = _label_problem(prefix, check_reserved=False)
        if problem is None and f"{prefix}.".lower().startswith(RESERVED_LABEL_PREFIX):
            problem = _reserved_problem()
        if problem is not None:
            self.fail(key, f"{quoted(prefix)} {problem[0]}", problem[1])
            return None
        return prefix

    def unique_log_paths(self, lanes: Mapping[str, LaneSpec]) -> None:
        """Two lanes writing one log file would interleave their lines (and doctor and `logs`
        would read another lane's events): lane `x`'s default stdout log `logs/x.out.log` is
        lane `x.out`'s default event log. Compared like queue dirs, by real path and ignoring
        case; within one lane, stdout and stderr may share a file (launchd allows it)."""
        # Keyed by folded real path: one look-up per log, not a scan of every earlier one.
        seen: dict[str, tuple[LaneSpec, str, Path]] = {}
        for lane in lanes.values():
            mine: dict[str, tuple[LaneSpec, str, Path]] = {}
            for key, path in _log_fields(lane):
                real = _folded(self.real(path))
                clash = seen.get(real)
                if clash is None:
                    mine.setdefault(real, (lane, key, path))
                    continue
                other, other_key, other_path = clash
                alias = "" if other_path == path else f" at {other_path}"
                self.fail(
                    ("lanes", lane.name, key),
                    f"{path}{_if_default(lane, key, path)} is also "
                    f"{key_path(('lanes', other.name, other_key))}"
                    f"{_if_default(other, other_key, other_path)}{alias}: two lanes would "
                    "write one file",
                    f"give each lane its own log files: set {key} of lane {lane.name} or "
                    f"{other_key} of lane {other.name} to a path of its own",
                )
            for real, first in mine.items():
                seen.setdefault(real, first)

    def logs_outside_queues(
        self, lanes: Mapping[str, LaneSpec], queues: Mapping[str, QueueSpec]
    ) -> None:
        """A log inside a queue's directories is taken for what lives there: in queue/ the
        event log is claimed as a job (and every run then fails it), in tmp/, done/ or failed/
        it is cleaned away or purged, in records/ read as a record. Each queue's logs/ is the
        lanes' own (their default). Compared by real path ignoring case, like queue dirs."""
        from lanekit.queue import job_places  # the queue's own directories (not logs/)

        every = {queue.dir: queue for queue in queues.values()}
        every.update({lane.queue.dir: lane.queue for lane in lanes.values()})
        owned = _PathIndex[tuple[QueueSpec, str]]()
        for queue in every.values():
            for place in job_places(queue.dir):
                owned.add(self.real(place), (queue, place.name))
        for lane in lanes.values():
            for key, path in _log_fields(lane):
                found = owned.at_or_above(self.real(path))
                if found is None:
                    continue
                queue, name = found
                default = lane.queue.dir / "logs" / f"{lane.name}{dict(_LOG_KEYS)[key]}"
                self.fail(
                    ("lanes", lane.name, key),
                    f"{path} is inside {name}/ of queue {quoted(queue.name)} ({queue.dir}), "
                    "where lanekit takes every file for the queue's own (a log in queue/ is "
                    "claimed as a job)",
                    f"leave {key} out (its default is {default}), or point it outside every "
                    "queue's directories",
                )

    def unique_labels(self, lanes: Mapping[str, LaneSpec]) -> None:
        # Case-insensitive: the plist is <Label>.plist and macOS volumes usually ignore case.
        seen: dict[str, LaneSpec] = {}
        for lane in lanes.values():
            other = seen.setdefault(lane.label.casefold(), lane)
            if other is lane:
                continue
            where: Key = ("lanes", lane.name, "label")
            hint = "labels name the plist files (<Label>.plist): give each lane its own label"
            if other.label == lane.label:
                self.fail(
                    where, f"label {quoted(lane.label)} is already used by lane {other.name}", hint
                )
            else:
                self.fail(
                    where,
                    f"label {quoted(lane.label)} differs from lane {other.name}'s "
                    f"{quoted(other.label)} only in case (macOS file names ignore case)",
                    hint,
                )


def _same_path(a: Path, b: Path) -> bool:
    # Case-insensitive, as for labels: macOS volumes usually ignore case.
    return str(a).casefold() == str(b).casefold()


def _inside(inner: Path, outer: Path) -> bool:
    folded = Path(str(outer).casefold())
    return folded in Path(str(inner).casefold()).parents


T = TypeVar("T")


def _folded(path: Path) -> str:
    return str(path).casefold()


class _PathIndex(Generic[T]):
    """Real paths compared as `_same_path` and `_inside` compare them, each look-up costing
    the depth of a path, not the number of paths held: lanes.toml is read by every command,
    and a scan per path made `status` and `doctor` grow with the square of the lane count."""

    def __init__(self) -> None:
        self._at: dict[str, tuple[int, T, Path]] = {}
        self._below: dict[str, tuple[int, T, Path]] = {}
        """Every ancestor of a held path -> the first held path under it."""

    def add(self, real: Path, value: T) -> None:
        order = len(self._at)
        entry = (order, value, real)
        self._at.setdefault(_folded(real), entry)
        for parent in Path(_folded(real)).parents:
            self._below.setdefault(str(parent), entry)

    def at_or_above(self, real: Path) -> T | None:
        """The first value added among those held at `real` or at one of its ancestors."""
        folded = Path(_folded(real))
        hits = [self._at[str(p)] for p in (folded, *folded.parents) if str(p) in self._at]
        return min(hits, key=lambda hit: hit[0])[1] if hits else None

    def clash(self, real: Path) -> tuple[T, Path] | None:
        """The first held path that is `real`, holds it or lies inside it."""
        folded = Path(_folded(real))
        hits = [self._at[str(p)] for p in (folded, *folded.parents) if str(p) in self._at]
        if str(folded) in self._below:
            hits.append(self._below[str(folded)])
        if not hits:
            return None
        _, value, held = min(hits, key=lambda hit: hit[0])
        return value, held


_LOG_KEYS = (("stdout_log", ".out.log"), ("stderr_log", ".err.log"), ("log", ".log"))
"""Each lane's log keys and the default file name suffix `<lane><suffix>` under logs/."""


def _log_fields(lane: LaneSpec) -> list[tuple[str, Path]]:
    paths = {"stdout_log": lane.stdout_path, "stderr_log": lane.stderr_path, "log": lane.log_path}
    return [(key, paths[key]) for key, _ in _LOG_KEYS]


def _if_default(lane: LaneSpec, key: str, path: Path) -> str:
    """` (the default)` when `path` is the lane's default for `key` (not written in the file)."""
    default = lane.queue.dir / "logs" / f"{lane.name}{dict(_LOG_KEYS)[key]}"
    return " (the default)" if path == default else ""


def _reserved_problem() -> tuple[str, str]:
    return (
        f"starts with {RESERVED_LABEL_PREFIX}, which is reserved for Apple",
        'use your own reverse-DNS prefix, e.g. "local.lanekit" or "com.example"',
    )


def _label_problem(label: str, *, check_reserved: bool) -> tuple[str, str] | None:
    """(problem, hint) when `label` cannot be a launchd label lanekit installs."""
    hint = 'use a reverse-DNS name such as "com.example.funnel"'
    if not label:
        return "is empty", hint
    if "/" in label:
        return "contains '/', the separator of launchctl service targets", hint
    for char in label:
        if char.isspace() or not char.isprintable():
            return f"contains U+{ord(char):04X} (whitespace or not printable)", hint
    if check_reserved and label.lower().startswith(RESERVED_LABEL_PREFIX):
        return _reserved_problem()
    size = len(label.encode("utf-8"))
    if size > MAX_LABEL_BYTES:
        return (
            f"is {size} bytes long (at most {MAX_LABEL_BYTES}: it names the plist file)",
            "use a shorter label",
        )
    return None
