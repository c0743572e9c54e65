"""One look at launchd on a Mac for a watchdog pass: the launchctl calls the pass cache's
fingerprint of each lane's label needs, each made at most once, in as few processes as the
answer allows.

What doctor's alert checks read from launchd on the launchctl backend (lanekit.doctor's
DoctorContext over lanekit.service.launchd.launchctl.LaunchctlDomain), and where this look finds it:

- loaded, pid, last exit status: `listing()`, the services rows of `launchctl print DOMAIN`
  for each candidate domain, the chosen one's rows first (LaunchctlDomain.list). Here: the
  chosen domain's rows, and the next candidate's only when a label is not among them (with
  20 healthy lanes, one process);
- disabled: `launchctl print-disabled DOMAIN` (one process);
- everything else (`runs`, `state`, `successive crashes`, `minimum runtime`, the exit code or
  signal as `print` words it, and the loaded definition plist.drift compares): `launchctl print
  DOMAIN/LABEL`, asked here only for the labels the pass cache says need it (see
  lanekit.watch.fingerprint.launchctl_print).

The processes are started here (a seam of tests/test_process_seams.py): argv, no shell, stdin
and stderr on /dev/null, the adapter's timeout (LANEKIT_LAUNCHCTL_TIMEOUT), with os.posix_spawnp
and a select() on the pipe instead of subprocess, whose import alone costs the lean pass a
third of its budget. Anything unexpected (a non-zero exit other than "no such domain" from a
candidate that is not the chosen one, a timeout, launchctl missing) is `Unanswered`: the full
pass then asks the adapter, which explains the failure its own way.

Builtin modules only (os, select): the lean pass (lanekit.watch.entry) looks on every pass.
"""

# ruff: noqa: PTH116
# (os.stat on purpose: the lean pass does not import pathlib, lanekit.watch.entry)

from __future__ import annotations

import os
import select
import time

from lanekit.service.launchd.parse.rows import Row
from lanekit.watch.launchdrows import disabled_services, service_rows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

DEFAULT_LAUNCHCTL = "/bin/launchctl"
"""lanekit.service.launchd.launchctl.DEFAULT_LAUNCHCTL (a test holds the two equal)."""
ABSENT = frozenset({112, 113, 125})
"""lanekit.service.launchd.codes.ABSENT: "not in this domain" (no such domain here, no such
service)."""
CHOICE_VARIABLES = (
    "LANEKIT_LAUNCHD_DOMAIN",
    "LANEKIT_LAUNCHCTL",
    "LANEKIT_LAUNCHCTL_TIMEOUT",
    "SUDO_USER",
    "SSH_CONNECTION",
    "SSH_TTY",
    "SSH_CLIENT",
)
"""The environment lanekit.service.launchd.domain.choose_domain and LaunchctlDomain.from_env
read."""
_KILL = 9
"""SIGKILL (the same number on macOS and Linux; the signal module imports enum)."""


class Unanswered(Exception):  # noqa: N818 - control flow: the full pass asks the adapter
    """launchctl did not give the plain answer the look needs."""


def choice_inputs(env: Mapping[str, str], console: str = "/dev/console") -> list[object]:
    """Everything the domain choice and the launchctl settings depend on: uid, euid, the
    console's owner, and CHOICE_VARIABLES. Equal inputs give the domain, candidates, binary
    and timeout the full pass recorded (lanekit.service.launchd.domain.choose_domain is a pure
    function of them), without importing the adapter."""
    try:
        owner: int | None = os.stat(console).st_uid
    except OSError:
        owner = None
    return [os.getuid(), os.geteuid(), owner, *(env.get(name) for name in CHOICE_VARIABLES)]


def run(launchctl: str, args: Sequence[str], timeout: float) -> tuple[int, str]:
    """(exit status, stdout) of `launchctl ARGS`; Unanswered when it cannot be started or
    has not finished within `timeout` seconds (it is killed)."""
    read, write = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        pid = os.posix_spawnp(
            launchctl,
            [launchctl, *args],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, null, 0),
                (os.POSIX_SPAWN_DUP2, write, 1),
                (os.POSIX_SPAWN_DUP2, null, 2),
            ],
        )
    except OSError as exc:
        os.close(read)
        raise Unanswered(f"cannot run {launchctl}: {exc}") from None
    finally:
        os.close(write)
        os.close(null)
    try:
        out = _read_until(read, time.monotonic() + timeout)
    except Unanswered:
        os.kill(pid, _KILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(read)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def _read_until(fd: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise Unanswered("launchctl did not answer in time")
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


class Look:
    """launchd's answers for one pass, asked lazily: each call at most once."""

    __slots__ = ("_disabled", "_rows", "_services", "candidates", "launchctl", "timeout")

    def __init__(self, launchctl: str, timeout: float, candidates: Sequence[str]) -> None:
        self.launchctl = launchctl
        self.timeout = timeout
        self.candidates = tuple(candidates)
        """The chosen domain first (LaunchctlDomain.candidates)."""
        self._rows: list[dict[str, Row]] = []
        self._disabled: dict[str, bool] | None = None
        self._services: dict[str, str] = {}

    def _ask(self, *args: str) -> str:
        code, out = run(self.launchctl, args, self.timeout)
        if code != 0:
            raise Unanswered(f"launchctl {' '.join(args)} exited {code}")
        return out

    def row(self, label: str) -> tuple[str, Row] | None:
        """(domain, row) of `label` as LaunchctlDomain.list merges the candidates' rows (the
        first domain that lists it, its first row there); None when none lists it. A
        candidate other than the chosen one that does not exist here lists nothing."""
        for index, domain in enumerate(self.candidates):
            if index == len(self._rows):
                code, text = run(self.launchctl, ("print", domain), self.timeout)
                if code != 0 and (index == 0 or code not in ABSENT):
                    raise Unanswered(f"launchctl print {domain} exited {code}")
                rows: dict[str, Row] = {}
                for entry in service_rows(text if code == 0 else ""):
                    rows.setdefault(entry[2], entry)
                self._rows.append(rows)
            found = self._rows[index].get(label)
            if found is not None:
                return domain, found
        return None

    def disabled(self, label: str) -> bool:
        """Whether `print-disabled` of the chosen domain says `label` is disabled."""
        if self._disabled is None:
            self._disabled = disabled_services(self._ask("print-disabled", self.candidates[0]))
        return self._disabled.get(label, False)

    def service(self, domain: str, label: str) -> str:
        """`launchctl print DOMAIN/LABEL`, as printed."""
        target = f"{domain}/{label}"
        if target not in self._services:
            self._services[target] = self._ask("print", target)
        return self._services[target]
