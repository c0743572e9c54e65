"""The only code that runs launchctl: the real `Launchd` backend, and launchctl's errors explained.

- `LaunchctlDomain` runs `/bin/launchctl` (or `$LANEKIT_LAUNCHCTL`) with an argv list, a timeout
  on every call, and maps every failure through `parse_error`.
- `parse_error` / `error_for` (lanekit.service.launchd.launchctl_errors, re-exported here) turn
  launchctl's codes and messages into `LaunchctlError(code, message, meaning, hint)`; the
  emulator raises `error_for(...)` so both backends say the same.
- The pure output parsers live in `lanekit.service.launchd.parse` and are re-exported here:
  this module is their public home.
"""

from __future__ import annotations

import builtins
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from lanekit.errors import UsageError
from lanekit.service.launchd.codes import ABSENT, ABSENT_OR_GONE
from lanekit.service.launchd.domain import Caller, DomainChoice, DomainReason, choose_domain
from lanekit.service.launchd.launchctl_errors import (
    DEFAULT_TIMEOUT,
    ERROR_TEXT,
    UNRUNNABLE_CODE,
    error_for,
    error_text,
    parse_error,
    reports_failure,
    timeout_error,
)
from lanekit.service.launchd.model import LaunchctlError, ListEntry, ServiceInfo
from lanekit.service.launchd.parse import (
    DARWIN_SIGNALS,
    LaunchdLogEvent,
    decode_wait_status,
    find_entry,
    label_from_target,
    parse_domain_services,
    parse_launchd_log,
    parse_list,
    parse_list_label,
    parse_print,
    parse_print_disabled,
    signal_name,
    split_list_status,
)

__all__ = [
    "DARWIN_SIGNALS",
    "DEFAULT_LAUNCHCTL",
    "DEFAULT_TIMEOUT",
    "ERROR_TEXT",
    "LaunchctlDomain",
    "LaunchdLogEvent",
    "decode_wait_status",
    "error_for",
    "error_text",
    "find_entry",
    "label_from_target",
    "parse_domain_services",
    "parse_error",
    "parse_launchd_log",
    "parse_list",
    "parse_list_label",
    "parse_print",
    "parse_print_disabled",
    "reports_failure",
    "signal_name",
    "split_list_status",
]

DEFAULT_LAUNCHCTL = "/bin/launchctl"

# ------------------------------------------------------------------------------- the domain


def _timeout_from(env: Mapping[str, str]) -> float:
    raw = env.get("LANEKIT_LAUNCHCTL_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise UsageError(
            f"LANEKIT_LAUNCHCTL_TIMEOUT={raw!r} is not a positive number of seconds",
            f"set it to e.g. 30, or unset it for the default {DEFAULT_TIMEOUT:g}",
        )
    return value


_KICKSTART_PID = re.compile(r"(\d+)\s*$")


class LaunchctlDomain:
    """One launchd domain driven through the real launchctl (the `Launchd` protocol)."""

    def __init__(
        self,
        domain: str,
        *,
        launchctl: str | os.PathLike[str] = DEFAULT_LAUNCHCTL,
        timeout: float = DEFAULT_TIMEOUT,
        reason: DomainReason = DomainReason.OVERRIDE,
    ) -> None:
        self._choice = DomainChoice(domain, reason)
        self._domain = domain
        self.launchctl = os.fspath(launchctl)
        self.timeout = timeout

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, caller: Caller | None = None
    ) -> LaunchctlDomain:
        """The caller's domain; LANEKIT_LAUNCHCTL, LANEKIT_LAUNCHD_DOMAIN and
        LANEKIT_LAUNCHCTL_TIMEOUT override the binary, the domain and the per-call timeout.
        Root is refused (UsageError): see `lanekit.service.launchd.domain`."""
        env = os.environ if env is None else env
        caller = caller or Caller.current()
        choice = choose_domain(caller.uid, caller.euid, env, caller.console_uid)
        launchctl = env.get("LANEKIT_LAUNCHCTL") or DEFAULT_LAUNCHCTL
        timeout = _timeout_from(env)
        if choice.needs_probe:
            probe = cls(choice.domain, launchctl=launchctl, timeout=timeout)
            choice = choice.fall_back(probe.domain_answer(choice.domain))
        return cls(choice.domain, launchctl=launchctl, timeout=timeout, reason=choice.reason)

    def domain_answer(self, domain: str) -> int:
        """What launchd answers to `launchctl print DOMAIN`: 0 when the domain exists here,
        else launchctl's code (112 or 125 for a gui/<uid> without a GUI login: codes.NO_GUI)."""
        try:
            self._run("print", domain, domain=domain)
        except LaunchctlError as exc:
            return exc.code
        return 0

    def loaded_domains(self) -> dict[str, frozenset[str]]:
        """label -> every candidate domain that has it loaded (one `launchctl print DOMAIN`
        each; a domain that does not exist here, 112/125, has none)."""
        found: dict[str, set[str]] = {}
        for domain in self.candidates:
            try:
                rows = self._domain_rows(domain)
            except LaunchctlError as exc:
                if exc.code not in ABSENT:
                    raise
                continue
            for entry in rows:
                found.setdefault(entry.label, set()).add(domain)
        return {label: frozenset(domains) for label, domains in found.items()}

    @property
    def domain(self) -> str:
        """The domain target, e.g. `gui/501`."""
        return self._domain

    @property
    def domain_reason(self) -> str:
        """Why this domain was chosen, in words."""
        return self._choice.why

    @property
    def candidates(self) -> tuple[str, ...]:
        """Where lookups and bootout look, in Homebrew's order (the chosen domain first)."""
        return self._choice.candidates

    def __repr__(self) -> str:
        return f"LaunchctlDomain({self._domain!r}, launchctl={self.launchctl!r})"

    def _target(self, label: str, domain: str | None = None) -> str:
        return f"{domain or self._domain}/{label}"

    def _run(
        self,
        *args: str,
        label: str | None = None,
        path: str | None = None,
        domain: str | None = None,
    ) -> str:
        """stdout of `launchctl ARGS`; LaunchctlError on a failure, a hang, or no launchctl."""
        argv = [self.launchctl, *args]
        command = " ".join(["launchctl", *args])
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise timeout_error(
                f"{command} did not finish within {self.timeout:g} s",
                domain=domain or self._domain,
                label=label,
                path=path,
            ) from None
        except OSError as exc:
            raise LaunchctlError(
                UNRUNNABLE_CODE,
                f"cannot run launchctl at {self.launchctl}: {exc.strerror or exc}",
                "the launchctl tool is missing or not executable",
                "point LANEKIT_LAUNCHCTL at launchctl (default /bin/launchctl), or use the "
                "emulated domain off macOS: LANEKIT_LAUNCHD=emulated",
            ) from None
        stdout = done.stdout.decode("utf-8", "replace")
        stderr = done.stderr.decode("utf-8", "replace")
        mutating = args[0] in {"bootstrap", "bootout", "enable", "disable", "kickstart"}
        if done.returncode != 0 or (mutating and reports_failure(stderr)):
            raise parse_error(
                stderr if stderr.strip() else stdout,
                done.returncode,
                args=args,
                domain=domain or self._domain,
                label=label,
                path=path,
            )
        return stdout

    def list(self) -> list[ListEntry]:
        """Every job of the candidate domains, read from `launchctl print DOMAIN` rows.

        Legacy `launchctl list` answers for the caller's session, not a named domain (over SSH,
        under sudo or with LANEKIT_LAUNCHD_DOMAIN it shows another domain's jobs), so it is not
        used. The chosen domain's rows come first and win; a candidate domain that does not
        exist here (no GUI login: 112/125) contributes nothing.
        """
        seen: dict[str, ListEntry] = {}
        for domain in self.candidates:
            try:
                rows = self._domain_rows(domain)
            except LaunchctlError as exc:
                if domain == self._domain or exc.code not in ABSENT:
                    raise
                continue
            for entry in rows:
                seen.setdefault(entry.label, entry)
        return builtins.list(seen.values())

    def _domain_rows(self, domain: str) -> builtins.list[ListEntry]:
        return parse_domain_services(self._run("print", domain, domain=domain))

    def print(self, label: str) -> ServiceInfo:
        """`launchctl print DOMAIN/LABEL` in each candidate domain until one has the job;
        LaunchctlError 113 (from the chosen domain) when none has it."""
        first: LaunchctlError | None = None
        for domain in self.candidates:
            try:
                text = self._run("print", self._target(label, domain), label=label, domain=domain)
            except LaunchctlError as exc:
                if exc.code not in ABSENT:
                    raise
                first = first or exc
                continue
            return parse_print(text, label=label)
        assert first is not None  # candidates is never empty
        raise first

    def where(self, label: str) -> str | None:
        """The candidate domain that has the job loaded, None when none has it."""
        for domain in self.candidates:
            try:
                self._run("print", self._target(label, domain), label=label, domain=domain)
            except LaunchctlError as exc:
                if exc.code not in ABSENT:
                    raise
                continue
            return domain
        return None

    def services(self) -> builtins.list[ListEntry]:
        """The `services` rows of `launchctl print DOMAIN` (the chosen domain only)."""
        return self._domain_rows(self._domain)

    def bootstrap(self, plist: Path) -> None:
        """`launchctl bootstrap DOMAIN PLIST`."""
        self._run("bootstrap", self._domain, str(plist), label=plist.stem, path=str(plist))

    def bootout(self, label: str) -> None:
        """`launchctl bootout DOMAIN/LABEL` in every candidate domain that has the job (as
        Homebrew's `stop` does), so a lane loaded from another kind of session is removed too.
        Returns once launchd accepted it (asynchronous); the chosen domain's 113 when no
        candidate had the job."""
        first: LaunchctlError | None = None
        booted = False
        for domain in self.candidates:
            try:
                self._run("bootout", self._target(label, domain), label=label, domain=domain)
            except LaunchctlError as exc:
                if exc.code not in ABSENT_OR_GONE:
                    raise
                first = first or exc
                continue
            booted = True
        if not booted:
            assert first is not None  # candidates is never empty
            raise first

    def kickstart(self, label: str, *, kill: bool = False) -> int | None:
        """`launchctl kickstart [-k] -p DOMAIN/LABEL` where the job is loaded (the chosen
        domain when none has it, for launchctl's own 113); the pid it printed, if any."""
        domain = self.where(label) or self._domain
        flags = ["-k", "-p"] if kill else ["-p"]
        out = self._run(
            "kickstart", *flags, self._target(label, domain), label=label, domain=domain
        )
        found = _KICKSTART_PID.search(out.strip())
        return int(found.group(1)) if found else None

    def kill(self, label: str, signum: int) -> None:
        """`launchctl kill SIGNUM DOMAIN/LABEL` where the job is loaded (the chosen domain
        when none has it, for launchctl's own 113). launchctl takes the number or the name;
        the number needs no table of names."""
        domain = self.where(label) or self._domain
        self._run("kill", str(signum), self._target(label, domain), label=label, domain=domain)

    def enable(self, label: str) -> None:
        """`launchctl enable DOMAIN/LABEL`."""
        self._run("enable", self._target(label), label=label)

    def disable(self, label: str) -> None:
        """`launchctl disable DOMAIN/LABEL`."""
        self._run("disable", self._target(label), label=label)

    def print_disabled(self) -> dict[str, bool]:
        """`launchctl print-disabled DOMAIN`: label -> True when disabled."""
        return parse_print_disabled(self._run("print-disabled", self._domain))
