"""Checks on a queue kept on a PostgreSQL server: can it be reached (2 s), is its schema this
lanekit's, are leases lapsed with nobody recovering them, is this machine's clock far from
the server's, does a secret reach a plist, and will libpq read the password file at all.

They look only: a check never migrates, recovers or renews. A queue kept in a directory has
none of these findings.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from lanekit.config import LaneSpec
from lanekit.doctor import DoctorContext, Problem, Scope, Severity, Target, check
from lanekit.errors import LanekitError
from lanekit.queue import POSTGRES
from lanekit.system.quoting import cmdline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lanekit.queue.postgres.backend import PostgresQueue

CLOCK_SKEW_LIMIT = 30.0
"""Seconds between this machine's clock and the server's beyond which doctor says so. Leases
never compare the two (the server's clock decides lapses, the holder times its own fence),
but lane logs, `jobs` and the timeline mix both: past this they tell a confusing story."""

SECRET_VARIABLES = ("PGPASSWORD",)
"""libpq reads a password from these: in a lane's env they would be written into its plist."""


def _on_server(lane: LaneSpec | None) -> bool:
    return lane is not None and str(lane.queue.dir).startswith(POSTGRES)


def _queue(lane: LaneSpec, ctx: DoctorContext) -> PostgresQueue:
    from lanekit.queue.postgres.backend import PostgresQueue

    queue = ctx.queue(lane)
    assert isinstance(queue, PostgresQueue)
    return queue


def _reachable(lane: LaneSpec, ctx: DoctorContext) -> PostgresQueue | None:
    """The lane's postgres queue when its server answers (None: not one, or it does not)."""
    if not _on_server(lane):
        return None
    queue = _queue(lane, ctx)
    try:
        queue.session.connection()
    except LanekitError:
        return None
    return queue


@check(
    "queue.db-unreachable",
    summary="the postgres queue's server cannot be reached within 2 s: no lane on it runs a job",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
    alert=True,
)
def db_unreachable(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Every run exits 75 and claims nothing while this lasts; no job is lost (a lapsed lease
    is recovered by the next run that reaches the server)."""
    lane = target.lane
    if lane is None or not _on_server(lane):
        return
    queue = _queue(lane, ctx)
    try:
        queue.session.connection()
    except LanekitError as exc:
        yield Problem(
            Severity.ERROR,
            f"{exc.message}: lanes on it exit 75 and run nothing until it answers.",
            "start the server, or fix the dsn and its service or host: "
            f"{cmdline('psql', queue.location.dsn, '-c', 'select 1')}",
        )


@check(
    "queue.schema-version",
    summary="the postgres queue's schema is missing, older or newer than this lanekit's",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
    alert=True,
)
def schema_version(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Runs never migrate: until `lanekit db migrate` (or an upgrade of this lanekit, for a
    schema a newer one wrote) every run stops with exit 69."""
    lane = target.lane
    queue = None if lane is None else _reachable(lane, ctx)
    if lane is None or queue is None:
        return
    problem = queue.missing()
    if problem is None:
        return
    fix = (
        "upgrade lanekit on this machine to the version that migrated it"
        if "newer than" in problem
        else cmdline("lanekit", "db", "migrate", lane.queue.name)
    )
    yield Problem(Severity.ERROR, f"{problem}: its lanes exit 69 and run nothing.", fix)


@check(
    "queue.lease-expired",
    summary="jobs on the postgres queue whose lease lapsed: they wait for a run to recover them",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
    alert=True,
)
def lease_expired(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Their holder died, slept or was cut off (its job was stopped by its own fence); the
    next run of any lane on the queue, on any machine, recovers them."""
    from lanekit.queue.observed import ClaimState

    lane = target.lane
    queue = None if lane is None else _reachable(lane, ctx)
    if lane is None or queue is None or queue.missing() is not None:
        return
    lapsed = [view.info for view in queue.claims() if view.state is ClaimState.STRANDED]
    if not lapsed:
        return
    hosts = sorted({f"{info.host} pid {info.pid}" for info in lapsed})
    count = len(lapsed)
    yield Problem(
        Severity.WARNING,
        f"{count} job{'s' if count != 1 else ''} on postgres queue {lane.queue.name} "
        f"hold{'s' if count == 1 else ''} a lapsed lease ({', '.join(hosts)}): nobody runs "
        f"{'it' if count == 1 else 'them'} until a run recovers {'it' if count == 1 else 'them'}.",
        f"{cmdline('lanekit', 'recover', lane.name)}  (or any run of a lane on the queue)",
    )


@check(
    "queue.clock-skew",
    summary="this machine's clock is far from the postgres server's",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
)
def clock_skew(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """No lease decision depends on it, but times written by the server (jobs, attempts) and
    by this machine (lane logs) then disagree."""
    lane = target.lane
    queue = None if lane is None else _reachable(lane, ctx)
    if lane is None or queue is None:
        return
    try:
        skew = queue.clock_skew()
    except LanekitError:
        return
    if abs(skew) <= CLOCK_SKEW_LIMIT:
        return
    way = "ahead of" if skew < 0 else "behind"
    yield Problem(
        Severity.WARNING,
        f"this machine's clock is {abs(skew):.0f} s {way} the server of postgres queue "
        f"{lane.queue.name}: leases are unaffected, but its lane logs and the queue's times "
        "disagree.",
        "turn on network time (macOS: System Settings > General > Date & Time; Linux: "
        "timedatectl set-ntp true)",
    )


@check(
    "queue.secret-in-dsn",
    summary="a database password would reach a plist (a lane's env) or a snapshot (the dsn)",
    needs_lane=True,
    needs_plist=False,
)
def secret_in_dsn(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Plists and snapshots are readable files; a password belongs in ~/.pgpass (0600) or
    pg_service.conf, where libpq reads it. lanes.toml refuses a dsn with one; this finds a
    password passed another way (PGPASSWORD in the lane's env) or an old snapshot's."""
    lane = target.lane
    if lane is None or not _on_server(lane):
        return
    for name in SECRET_VARIABLES:
        if name in lane.env:
            yield Problem(
                Severity.ERROR,
                f"lane {lane.name} sets {name} in its env: the password is written into its "
                "plist, readable by anything that reads your LaunchAgents.",
                f"remove {name} from [lanes.{lane.name}] env and put the password in ~/.pgpass "
                "(chmod 600)",
            )
    from lanekit.queue.postgres.location import parse, password_in
    from lanekit.state.snapshot_schema import parse_json

    snapshot = ctx.paths.snapshot_for(lane.label)
    try:
        data = parse_json(snapshot.read_text(encoding="utf-8"))
        location = parse(str(data.get("queue_dir", ""))) if isinstance(data, dict) else None
    except (OSError, ValueError):
        return
    if location is not None and password_in(location.dsn):
        yield Problem(
            Severity.ERROR,
            f"the installed snapshot of lane {lane.name} ({snapshot}) holds a dsn with a password.",
            f"put the password in ~/.pgpass, then {cmdline('lanekit', 'apply')}",
        )


def pgpass_path(env: os._Environ[str] | dict[str, str], home: Path) -> Path:
    """The password file libpq reads: PGPASSFILE, else ~/.pgpass."""
    given = env.get("PGPASSFILE")
    return Path(given) if given else home / ".pgpass"


@check(
    "queue.pgpass-mode",
    summary="the password file libpq reads is open to others, so libpq ignores it",
    needs_lane=True,
    needs_plist=False,
    scope=Scope.QUEUE,
    alert=True,
)
def pgpass_mode(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """libpq skips a password file that group or others may read or write ("has group or
    world access"): every connection then fails its password login."""
    lane = target.lane
    if lane is None or not _on_server(lane):
        return
    path = pgpass_path(os.environ, ctx.paths.home)
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        return  # none: a service file or trust login may need no password
    if mode & 0o077:
        yield Problem(
            Severity.ERROR,
            f"{path} has mode {mode:04o}: libpq ignores a password file others may read, so "
            f"postgres queue {lane.queue.name} cannot log in with it.",
            cmdline("chmod", "600", str(path)),
        )
