"""launchd's own log lines (`log show` / launchd.log) about a job: spawns, exits, throttles."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lanekit.service.launchd.parse.common import lines_of, signal_number


@dataclass(frozen=True, slots=True)
class LaunchdLogEvent:
    """One line launchd wrote to system.log / launchd.log about a job or a domain."""

    message: str
    label: str | None = None
    """The job's label; None when the line is about a whole domain."""
    domain: str | None = None
    """`system`, `gui/501`, or launchd's internal domain name, when the line names one."""
    pid: int | None = None
    state: str | None = None
    """From `service state: <state>` (spawn scheduled, spawning, xpcproxy, running...)."""
    ran_for: int | None = None
    """Seconds the job ran, from `Service only ran for N seconds`."""
    respawn_in: int | None = None
    """Seconds launchd delays the respawn (ThrottleInterval minus the run time)."""
    exit_code: int | None = None
    signal: int | None = None
    path: str | None = None
    """The plist a refusal is about (`... bad ownership/permissions: path = <plist>, ...`)."""


_LOG_SUBJECT = re.compile(r"\((?P<subject>[^()\s]+(?: \[\d+\])?)\):?\s+(?:<\w+>:\s*)?(?P<msg>.*)$")
_DOMAIN_SUBJECT = re.compile(
    r"^(?:system|(?:gui|user|login|pid)/\d+|com\.apple\.xpc\.launchd\.(?:user\.)?domain\..*)$"
)


def parse_launchd_log(text: str) -> list[LaunchdLogEvent]:
    """launchd's own log lines (syslog style, `launchd.log` style, 10.6 peruser style).

    Recognises throttled respawns, exit codes, signals, service states and bad-permission
    refusals; other lines keep their label, pid and message. Lines that name no subject in
    parentheses are skipped.
    """
    events: list[LaunchdLogEvent] = []
    for line in lines_of(text):
        match = _LOG_SUBJECT.search(line)
        if match is None:
            continue
        subject, message = match.group("subject"), match.group("msg").strip()
        pid_match = re.match(r"^(?P<name>.*?)\s?\[(?P<pid>\d+)\]$", subject)
        name = pid_match.group("name") if pid_match else subject
        pid = int(pid_match.group("pid")) if pid_match else None
        label: str | None = name
        domain: str | None = None
        if _DOMAIN_SUBJECT.match(name):
            label, domain = None, name
        else:
            target = re.match(r"^(?P<domain>(?:gui|user|login)/\d+|system)/(?P<label>.+)$", name)
            if target:
                label, domain = target.group("label"), target.group("domain")
        ran_for: int | None = None
        respawn_in: int | None = None
        if throttle := re.search(
            r"only ran for (\d+) seconds?\. Pushing respawn out by (\d+) seconds?", message
        ):
            ran_for, respawn_in = int(throttle[1]), int(throttle[2])
        elif throttle := re.search(r"Throttling respawn: Will start in (\d+) seconds?", message):
            respawn_in = int(throttle[1])
        exited = re.search(r"[Ee]xited with (?:exit )?code:? (-?\d+)", message)
        killed = re.search(r"[Ee]xited (?:abnormally|due to signal|due to)[: ]+(.*)$", message)
        state = re.search(r"service state: (.+)$", message)
        path = re.search(r"path = (?P<path>.+?)(?:, caller\b|$)", message)
        if pid is None and (spawned := re.search(r"spawned with pid (\d+)", message)):
            pid = int(spawned[1])
        events.append(
            LaunchdLogEvent(
                message=message,
                label=label,
                domain=domain,
                pid=pid,
                state=state[1].strip() if state else None,
                ran_for=ran_for,
                respawn_in=respawn_in,
                exit_code=int(exited[1]) if exited else None,
                signal=signal_number(killed[1]) if killed else None,
                path=path["path"].strip() if path else None,
            )
        )
    return events
