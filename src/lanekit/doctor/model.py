"""doctor's values: what a check examines (Target), yields (Problem) and is stamped into
(Finding), the report, and their vocabularies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from lanekit.errors import ExitCode
from lanekit.state.schemas import DOCTOR_SCHEMA

if TYPE_CHECKING:
    from pathlib import Path

    from lanekit.config import LaneSpec
    from lanekit.service.artifacts import JobDefinition


class SubjectKind(StrEnum):
    """What a finding is about."""

    LANE = "lane"
    PLIST = "plist"
    """A plist lanekit did not write (subject: its path)."""
    QUEUE = "queue"
    """A queue of lanes.toml (subject: its name); `lanes` are the lanes that drain it."""


class Scope(StrEnum):
    """What a check examines."""

    JOB = "job"
    """A lane or a plist (the launchd job)."""
    QUEUE = "queue"
    """A queue, once, whichever lanes drain it."""


class Severity(StrEnum):
    """How bad a finding is. Any error makes `lanekit doctor` exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for the most severe; findings sort on it."""
        return _RANK[self]


_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass(frozen=True, slots=True)
class Problem:
    """What a check yields: the runner adds the check id and the subject."""

    severity: Severity
    message: str
    """One sentence: what is wrong and what it causes."""
    fix: str
    """A command to run or an edit to make."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found by one named check, about one lane or plist."""

    id: str
    """The check id, stable across releases (`path.command-missing`)."""
    severity: Severity
    subject: str
    """The lane name, or the plist path for a plist lanekit did not write."""
    message: str
    fix: str
    kind: SubjectKind = SubjectKind.LANE
    lanes: tuple[str, ...] = ()
    """The lane (for a lane), or the lanes that drain the queue (for a queue)."""

    def to_json(self) -> dict[str, Any]:
        """The finding as it appears in `doctor --json` (keys pinned by a contract test)."""
        return {
            "id": self.id,
            "severity": str(self.severity),
            "subject": self.subject,
            "subject_kind": str(self.kind),
            "lanes": list(self.lanes),
            "message": self.message,
            "fix": self.fix,
        }


@dataclass(frozen=True, slots=True)
class Target:
    """One thing doctor examines: a lanekit lane, or a plist file.

    `plist` is the job as launchd would load it: the installed (or given) file when it exists
    and parses, else, for a lane that is not installed yet, the plist `apply` would write.
    """

    subject: str
    plist_path: Path | None
    """Where the plist is (or would be) installed; None only for a lane that cannot render."""
    plist: Mapping[str, Any] | None
    """The parsed job; None when the file does not parse (see `plist_error`)."""
    plist_error: str | None = None
    installed: bool = False
    """True when `plist_path` exists (a lane may not be installed yet)."""
    lane: LaneSpec | None = None
    """Set for lanekit lanes only; checks that need it skip foreign plists. For a queue: the
    first of its lanes (fix commands name it; `lanekit recover LANE` acts on its queue)."""
    kind: SubjectKind = SubjectKind.LANE
    drained_by: tuple[LaneSpec, ...] = ()
    """For a queue: every lane (of those examined) that drains it, in lanes.toml order."""
    definition: JobDefinition | None = None
    """The job in no manager's words (argv, env, cwd, logs, schedule, timeouts, raw text),
    beside `plist`, launchd's own form of it; None when there is no usable job. Read from
    `plist` when not given (then without the raw text)."""

    def __post_init__(self) -> None:
        if self.definition is None and self.plist is not None:
            from lanekit.service.launchd.manager import plist_definition

            object.__setattr__(self, "definition", plist_definition(self.plist))

    @property
    def lanes(self) -> tuple[str, ...]:
        """The lane names a finding on this target lists."""
        if self.kind is SubjectKind.QUEUE:
            return tuple(lane.name for lane in self.drained_by)
        return (self.lane.name,) if self.lane is not None else ()

    @property
    def label(self) -> str | None:
        """The launchd label: the plist's Label, else the lane's."""
        if self.plist is not None:
            label = self.plist.get("Label")
            if isinstance(label, str) and label:
                return label
        return self.lane.label if self.lane is not None else None


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """What `lanekit doctor` found: findings grouped by subject, most severe first."""

    findings: tuple[Finding, ...]
    subjects: tuple[str, ...]
    """Everything examined, in order (a subject with no findings is healthy)."""
    checks: tuple[str, ...]
    """The ids of the checks that ran."""
    notes: tuple[str, ...] = ()
    """Why some checks could not run (e.g. launchd unreachable)."""

    @property
    def exit_code(self) -> ExitCode:
        """1 when any finding is an error, else 0."""
        if any(f.severity is Severity.ERROR for f in self.findings):
            return ExitCode.FAILURE
        return ExitCode.OK

    def count(self, severity: Severity) -> int:
        """How many findings have this severity."""
        return sum(1 for f in self.findings if f.severity is severity)

    def summary(self) -> dict[str, int]:
        """Counts for the JSON summary and the closing line of the table."""
        return {
            "errors": self.count(Severity.ERROR),
            "warnings": self.count(Severity.WARNING),
            "info": self.count(Severity.INFO),
            "subjects": len(self.subjects),
            "checks": len(self.checks),
        }

    def to_json(self) -> dict[str, Any]:
        """The versioned `doctor --json` document."""
        return {
            "schema": DOCTOR_SCHEMA,
            "findings": [f.to_json() for f in self.findings],
            "summary": self.summary(),
            "notes": list(self.notes),
        }
