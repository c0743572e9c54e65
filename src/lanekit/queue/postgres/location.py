"""A PostgreSQL queue's location: the one string that names it everywhere a queue is named
(QueueSpec.dir, a lane's snapshot, lanekit.queue.open_queue), and the check that its conninfo
carries no password.

`postgres:queue=NAME&schema=lanekit&lease=30&on_orphan=retry&dsn=service%3Dlanes`: every value
percent-encoded, so the string holds no `/` and survives being a Path. The dsn is a libpq
conninfo (`service=NAME`, `host=... dbname=...`) or URI without a password; libpq finds the
password itself in ~/.pgpass or pg_service.conf, so no plist, snapshot, log or --json output
ever carries one. Builtins only: the empty run parses its location.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

SCHEME = "postgres:"
"""The scheme of a PostgreSQL queue's location."""
DEFAULT_SCHEMA = "lanekit"
DEFAULT_LEASE = 30
"""Seconds a claim lasts unless its watcher renews it (every lease/5)."""
MIN_LEASE = 5
"""A shorter lease would be lost to one slow statement (statement_timeout is a few seconds)."""


class OnOrphan(StrEnum):
    """What recover() does with a job whose lease lapsed before its end was recorded."""

    RETRY = "retry"
    """Run it again (at least once: it may have run in part)."""
    FAIL = "fail"
    """Fail it (`orphaned`) and never run it again: for lanes that must not repeat."""


@dataclass(frozen=True, slots=True)
class PgLocation:
    """What a PostgreSQL queue's location says."""

    queue: str
    """The queue's name in the database (its `[queues.NAME]`): several queues share a schema."""
    dsn: str
    schema: str = DEFAULT_SCHEMA
    lease: int = DEFAULT_LEASE
    on_orphan: OnOrphan = OnOrphan.RETRY

    def __str__(self) -> str:
        from urllib.parse import quote

        pairs = (
            ("queue", self.queue),
            ("schema", self.schema),
            ("lease", str(self.lease)),
            ("on_orphan", str(self.on_orphan)),
            ("dsn", self.dsn),
        )
        return SCHEME + "&".join(f"{key}={quote(value, safe='')}" for key, value in pairs)

    @property
    def where(self) -> str:
        """For messages: the queue, its schema and its conninfo (no password: refused)."""
        return f"postgres queue {self.queue} (schema {self.schema}, {self.dsn})"


def parse(location: str) -> PgLocation:
    """The PgLocation of a `postgres:` location (ValueError for one lanekit did not write)."""
    from urllib.parse import unquote

    if not location.startswith(SCHEME):
        raise ValueError(f"not a postgres location: {location!r}")
    values: dict[str, str] = {}
    for pair in location[len(SCHEME) :].split("&"):
        key, sep, value = pair.partition("=")
        if not sep or key in values:
            raise ValueError(f"malformed postgres location: {location!r}")
        values[key] = unquote(value)
    try:
        parsed = PgLocation(
            queue=values.pop("queue"),
            dsn=values.pop("dsn"),
            schema=values.pop("schema", DEFAULT_SCHEMA),
            lease=int(values.pop("lease", str(DEFAULT_LEASE))),
            on_orphan=OnOrphan(values.pop("on_orphan", OnOrphan.RETRY)),
        )
    except (KeyError, ValueError):
        raise ValueError(f"malformed postgres location: {location!r}") from None
    if values:
        raise ValueError(f"unknown keys {sorted(values)} in postgres location")
    return parsed


def password_in(dsn: str) -> bool:
    """True when the conninfo `dsn` carries a password: a `password=` keyword, a URI's
    `user:password@`, or a `password` query parameter. Parsed by libpq's own rules
    (psycopg.conninfo), so quoting cannot hide one; a dsn libpq cannot parse counts as
    carrying one (it is refused either way, with libpq's reason in dsn_problem)."""
    return "password" in _parsed(dsn)


def dsn_problem(dsn: str) -> str | None:
    """Why libpq cannot use `dsn` (its own words), or None."""
    try:
        _parse_conninfo(dsn)
    except ValueError as exc:
        return str(exc)
    return None


def _parsed(dsn: str) -> dict[str, str]:
    try:
        return _parse_conninfo(dsn)
    except ValueError:
        return {"password": ""}


def _parse_conninfo(dsn: str) -> dict[str, str]:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        return {key: str(value) for key, value in conninfo_to_dict(dsn).items()}
    except psycopg.ProgrammingError as exc:
        raise ValueError(str(exc).strip()) from None


SCHEMA_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def schema_problem(schema: str) -> str | None:
    """Why `schema` cannot name lanekit's schema (it is written into SQL as an identifier,
    so only lower-case letters, digits and _ and a letter first), or None."""
    if not schema or not schema[0].isalpha() or not set(schema) <= SCHEMA_NAME_CHARS:
        return "use lower-case letters, digits and _, starting with a letter"
    if len(schema) > 48:
        return "at most 48 characters"
    return None
