"""launchctl's errors explained: its codes and messages turned into `LaunchctlError(code,
message, meaning, hint)` by the situations seen in real captures (shared/launchctl-samples/).

`parse_error` reads what a failed launchctl call printed; `error_for` builds the same error from
a code and a line, which is how the emulated domain fails exactly as launchctl does. The real
backend (lanekit.service.launchd.launchctl, which re-exports these names) runs launchctl and raises
them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lanekit.service.launchd.codes import LaunchctlCode
from lanekit.service.launchd.model import LaunchctlError
from lanekit.system.quoting import cmdline, shell_quote

DEFAULT_TIMEOUT = 15.0
"""Seconds any one launchctl call may take; bootout returns quickly, so this only catches hangs."""
TIMEOUT_CODE = LaunchctlCode.TIMED_OUT
"""The code a LaunchctlError carries when launchctl itself did not answer in time."""
UNRUNNABLE_CODE = LaunchctlCode.NO_SUCH_FILE
"""The code a LaunchctlError carries when launchctl could not be executed at all."""

ERROR_TEXT: Mapping[int, str] = {
    1: "Operation not permitted",
    2: "No such file or directory",
    3: "No such process",
    5: "Input/output error",
    9: "Bad file descriptor",
    12: "Cannot allocate memory",
    13: "Permission denied",
    16: "Resource busy",
    17: "File exists",
    22: "Invalid argument",
    36: "Operation now in progress",
    37: "Operation already in progress",
    45: "Operation not supported",
    60: "Operation timed out",
    64: "Usage error",
    78: "Function not implemented",
    107: "Malformed bundle",
    108: "Invalid path",
    109: "Invalid property list",
    110: "Invalid or missing service identifier",
    111: "Invalid or missing Program/ProgramArguments",
    112: "Could not find specified domain",
    113: "Could not find specified service",
    114: "The specified username does not exist",
    115: "The specified group does not exist",
    116: "Routine not yet implemented",
    117: "(n/a)",
    118: "Bad response from server",
    119: "Service is disabled",
    120: "Bad subsystem destination for request",
    121: "Path not searched for services",
    122: "Path had bad ownership/permissions",
    123: "Path is whitelisted for domain",
    124: "Domain is tearing down",
    125: "Domain does not support specified action",
    126: "Request type is no longer supported",
    127: "The specified service did not ship with the operating system",
    128: "The specified path is not a bundle",
    129: "The service was superseded by a later version",
    130: "The system encountered a condition where behavior was undefined",
    131: "Out of order requests",
    132: "Request for stale data",
    133: "Multiple errors were returned; see stderr",
    134: "Service cannot load in requested session",
    135: "Process is not managed",
    136: "Action not allowed on singleton service",
    137: "Service does not support the specified action",
    138: "Service cannot be loaded on this hardware",
    139: "Service cannot presently execute",
    140: "Service name is reserved or invalid",
    141: "Reentrancy avoided",
    142: "Operation only supported on development build",
    143: "Requested entry was cached",
    144: "Requestor lacks required entitlement",
    145: "Endpoint is hidden",
    146: "Domain is in on-demand-only mode",
    147: "The specified service did not ship in the requestor",
    148: "The specified service path was not in the service cache",
    149: "Could not find a bundle of the given identifier through LaunchServices",
    150: "Operation not permitted while System Integrity Protection is engaged",
    151: "A complete hack",
    152: "Service cannot load in current boot environment",
    153: "Completely unexpected error",
    154: "Requestor is not a platform binary",
    155: "Refusing to execute/trust quarantined program/file",
    156: "Domain creation with that UID is not allowed anymore",
    157: "System service is not in system service whitelist",
    158: "Service cannot be loaded on current os variant",
    159: "Unknown error",
}
"""What `launchctl error <code>` prints: errno texts below 107 (macOS numbering; 64 is
launchctl's usage exit), launchd's own errors from 107. Codes seen in the wild are explained
in `_SITUATIONS`."""


def error_text(code: int) -> str:
    """launchctl's own words for a code (`5` -> `Input/output error`)."""
    return ERROR_TEXT.get(code, f"Unknown error: {code}")


# --------------------------------------------------------------------------------- situations


@dataclass(frozen=True, slots=True)
class _Situation:
    """One recognisable failure: the code launchctl uses for it, the words that reveal it,
    what it means for a lanekit user, and the command that fixes it."""

    key: str
    code: int
    phrases: tuple[str, ...]
    meaning: str
    hint: str
    """A template over {domain} {label} {target} {path} {uid} {fix_owner}."""
    failure: bool = True
    """False for warnings that accompany a failure but are not one by themselves."""


_SITUATIONS: tuple[_Situation, ...] = (
    _Situation(
        "sip",
        LaunchctlCode.SIP,
        ("System Integrity Protection",),
        "System Integrity Protection guards this job: launchctl may not load, unload or "
        "disable jobs that ship with macOS",
        "leave jobs under /System alone; lanekit manages only its own plists, in "
        "~/Library/LaunchAgents",
    ),
    _Situation(
        "root-with-agent",
        LaunchctlCode.IO_ERROR,
        ("Expecting a LaunchDaemons path",),
        "launchctl ran as root, so it targeted the system domain, but the plist is a per-user "
        "LaunchAgent",
        "run lanekit as your own user, without sudo",
        failure=False,
    ),
    _Situation(
        "bad-permissions",
        LaunchctlCode.BAD_PERMISSIONS,
        ("bad ownership", "Dubious ownership", "Dubious permissions"),
        "launchd refuses a plist that group or others can write, or that is not owned by the "
        "loading user (root for /Library)",
        "{fix_owner}, then load it again (`lanekit apply`); on a disk that ignores "
        "ownership: `sudo diskutil enableOwnership <volume>`",
    ),
    _Situation(
        "invalid-plist",
        LaunchctlCode.INVALID_PLIST,
        ("Invalid property list",),
        "the plist file is not a valid property list, so launchd cannot read the job",
        "`plutil -lint {path}` shows the error; for a lanekit lane run `lanekit validate`, "
        "then `lanekit apply` rewrites the plist",
    ),
    _Situation(
        "disabled",
        LaunchctlCode.DISABLED,
        ("Service is disabled",),
        "the job has a disabled override in launchd (it survives reboots and reinstalls), "
        "and a disabled job cannot be loaded",
        "`launchctl enable {target}` then bootstrap again (`lanekit apply` enables its lanes)",
    ),
    _Situation(
        "no-domain",
        LaunchctlCode.NO_DOMAIN,
        ("Could not find domain", "Could not find specified domain"),
        "the launchd domain does not exist: gui/<uid> exists only while the user is logged in "
        "at the Mac's screen, not over SSH",
        "log in at the Mac's screen, or use the background domain: "
        "`LANEKIT_LAUNCHD_DOMAIN=user lanekit apply` (launchctl bootstrap user/{uid} <plist>)",
    ),
    _Situation(
        "domain-unsupported",
        LaunchctlCode.DOMAIN_UNSUPPORTED,
        ("Domain does not support specified action",),
        "this domain cannot do that: usually gui/<uid> without a GUI login session (SSH, "
        "headless), or enable/disable aimed at the wrong domain",
        "log in at the Mac's screen, or use the background domain: "
        "`LANEKIT_LAUNCHD_DOMAIN=user lanekit apply` (launchctl bootstrap user/{uid} <plist>)",
    ),
    _Situation(
        "wrong-session",
        LaunchctlCode.WRONG_SESSION,
        ("Service cannot load in requested session",),
        "the plist's LimitLoadToSessionType does not list this domain's session (Aqua = "
        "gui/<uid>, Background = user/<uid>: SSH, headless)",
        "list the session in the lane's `session_type` in lanes.toml (the default, "
        '["Aqua", "Background"], loads into either domain), then `lanekit apply`',
    ),
    _Situation(
        "not-loaded",
        LaunchctlCode.NO_SERVICE,
        (
            "Could not find service",
            "Could not find specified service",
            "nothing found to unload",
            "Error unloading",
        ),
        "no job with this label is loaded in this domain (it may be loaded in another one, "
        "e.g. by root in the system domain)",
        "`launchctl bootstrap {domain} {path}` loads it (`lanekit apply` for lanekit lanes); "
        "`sudo launchctl print system/{label}` checks the system domain",
    ),
    _Situation(
        "already-loaded",
        LaunchctlCode.ALREADY_IN_PROGRESS,
        ("Already loaded", "service already loaded", "Operation already in progress"),
        "a job with this label is already loaded, or is still being unloaded",
        "`launchctl bootout {target}`, wait until `launchctl print {target}` reports it "
        "missing, then bootstrap again (`lanekit apply` does exactly this)",
    ),
    _Situation(
        "still-stopping",
        LaunchctlCode.STILL_STOPPING,
        ("Operation now in progress",),
        "the job was asked to stop and is still exiting: bootout is asynchronous, the job gets "
        "SIGTERM and then SIGKILL after its ExitTimeOut",
        "wait until `launchctl print {target}` reports it missing, then continue",
    ),
    _Situation(
        "no-such-process",
        LaunchctlCode.NO_SUCH_PROCESS,
        ("No such process",),
        "nothing to unload: the job is not loaded in this domain",
        "nothing to do; `launchctl print {target}` confirms it is gone",
    ),
    _Situation(
        "usage",
        LaunchctlCode.USAGE,
        ("Unrecognized target specifier", "Unrecognized subcommand", "Usage: launchctl"),
        "launchctl rejected the command line (a subcommand, option or target this launchctl "
        "does not know)",
        "check `launchctl help` on this macOS version and report the lanekit command that "
        "produced it",
    ),
    _Situation(
        "not-platform-binary",
        LaunchctlCode.NOT_PLATFORM_BINARY,
        ("not a platform binary",),
        "launchd accepts this request only from Apple-signed tools (seen on jailbroken iOS)",
        "use the system launchctl: unset LANEKIT_LAUNCHCTL or point it at /bin/launchctl",
    ),
    _Situation(
        "not-permitted",
        LaunchctlCode.NOT_PERMITTED,
        ("Operation not permitted",),
        "the caller may not change this domain (another user's domain, or the system domain "
        "without root)",
        "manage your own domain ({domain}) as your own user; the system domain needs sudo",
    ),
    _Situation(
        "missing-file",
        LaunchctlCode.NO_SUCH_FILE,
        ("No such file or directory",),
        "the plist path does not exist",
        "check the path; `lanekit apply` writes lane plists before loading them",
    ),
    _Situation(
        "io-error",
        LaunchctlCode.IO_ERROR,
        ("Input/output error",),
        "launchd refused without saying why; the causes seen on real Macs: the label is "
        "already loaded or still unloading; the plist is on an external volume (a home folder "
        "moved to another disk); the job is switched off under Allow in the Background (System "
        "Settings > General > Login Items & Extensions); the plist is quarantined "
        "(com.apple.quarantine); its LimitLoadToSessionType does not list this domain's "
        "session type (Aqua for gui/, Background for user/); the job is disabled; the plist "
        "is invalid or writable by others",
        "`lanekit doctor` checks each cause (volume.external, launchd.background-item-off, "
        "program.quarantined, launchd.no-gui-session); `sudo launchctl bootstrap {domain} "
        "{path}` prints the exact reason",
    ),
    _Situation(
        "timeout",
        TIMEOUT_CODE,
        (),
        "launchctl did not answer in time; launchd may be busy starting many jobs, or hung",
        "retry; if launchd is slow on this Mac, raise LANEKIT_LAUNCHCTL_TIMEOUT (seconds, "
        f"default {DEFAULT_TIMEOUT:g})",
    ),
)
_BY_KEY = {situation.key: situation for situation in _SITUATIONS}
_BY_CODE: dict[int, _Situation] = {}
for _situation in _SITUATIONS:
    if _situation.failure:
        _BY_CODE.setdefault(_situation.code, _situation)
_BY_CODE[LaunchctlCode.FILE_EXISTS] = _BY_KEY["already-loaded"]  # 10.10-10.15 (see codes.py)

_SUMMARY = re.compile(r":\s(?P<code>-?\d+):\s(?P<text>\S.*)$")
"""`Bootstrap failed: 5: ...`, `Could not print domain: 1: ...`: launchctl's `<what>: N: <text>`."""
_GENERIC = {"io-error", "not-permitted"}
"""Codes launchd uses for many causes; a more specific cause in the text explains them better."""
_WRAPPER_EXIT = re.compile(r"\bexited with (?P<code>\d+)\b")
_BOILERPLATE = (
    "Try re-running the command as root",
    "Try running `launchctl",
    "Bad request.",
    "`launchctl bootout` is a recommended alternative",
    "<service-target> takes a form",
    "Please refer to `man launchctl`",
)
_PROMPT = re.compile(r"^(?:\$ |# |launchd% ?|% )")


def _matches(situation: _Situation, text: str) -> bool:
    lowered = text.lower()
    return any(phrase.lower() in lowered for phrase in situation.phrases)


def _situations_in(text: str) -> list[_Situation]:
    return [s for s in _SITUATIONS if s.phrases and _matches(s, text)]


def reports_failure(stderr: str) -> bool:
    """True when launchctl's output says something failed, whatever its exit status.

    Legacy load/unload exit 0 after printing `Load failed: 5: ...` or `<path>: Invalid property
    list`, so exit 0 alone proves nothing.
    """
    if any(_SUMMARY.search(line) for line in stderr.splitlines()):
        return True
    return any(s.failure for s in _situations_in(stderr))


# ---------------------------------------------------------------------------------- context

_PLIST_PATH = re.compile(r"(?P<path>/[^\s:`'\"]*(?: [^\s:`'\"/]+)*[^\s:`'\"]*\.plist)\b")
_SERVICE_TARGET = re.compile(r"\b(?P<domain>(?:gui|user|login)/\d+|system)/(?P<label>[^\s`'\"]+)")
_DOMAIN = re.compile(r"\b(?P<domain>(?:gui|user|login)/(?P<uid>\d+))\b")


@dataclass(frozen=True, slots=True)
class _Context:
    domain: str | None = None
    label: str | None = None
    path: str | None = None

    def fields(self) -> dict[str, str]:
        domain = self.domain or "gui/$(id -u)"
        uid_match = re.search(r"/(\d+)$", domain)
        # Label and path come from plists anyone may write: quoted, so that `{domain}/{label}`
        # stays one shell word; the domain is ours (a uid, or `$(id -u)` meant to expand).
        label = shell_quote(self.label) if self.label else "<label>"
        path = shell_quote(self.path) if self.path else "<plist>"
        if self.path and self.path.startswith(("/Library/", "/System/")):
            fix_owner = f"sudo chown root:wheel {path} && sudo chmod 644 {path}"
        else:
            fix_owner = f'chmod 644 {path} && chown "$(id -un)" {path}'
        return {
            "domain": domain,
            "uid": uid_match.group(1) if uid_match else "$(id -u)",
            "label": label,
            "target": f"{domain}/{label}",
            "path": path,
            "fix_owner": fix_owner,
        }


def _context(
    text: str, args: Sequence[str], domain: str | None, label: str | None, path: str | None
) -> _Context:
    """What the failure is about: the caller's words first, then the command, then the text."""
    for arg in args:
        target = _SERVICE_TARGET.fullmatch(arg)
        if target:
            domain = domain or target.group("domain")
            label = label or target.group("label")
        elif _DOMAIN.fullmatch(arg) or arg == "system":
            domain = domain or arg
        elif arg.endswith(".plist"):
            path = path or arg
    if path is None and (found := _PLIST_PATH.search(text)):
        path = found.group("path")
    if label is None:
        label = _label_in(text, path)
    if domain is None:
        domain = _domain_in(text, path)
    return _Context(domain=domain, label=label, path=path)


def _label_in(text: str, path: str | None) -> str | None:
    """The label launchctl's words name, else the plist's file name."""
    if named := re.search(r'Could not find service "(?P<label>[^"]+)"', text):
        return named.group("label")
    if target_in_text := _SERVICE_TARGET.search(text):
        return target_in_text.group("label")
    if legacy := re.search(
        r"(?:Error unloading: (?P<unloading>\S+)|^(?P<loaded>[^\s/:]+): Already loaded)",
        text,
        re.MULTILINE,
    ):
        return legacy.group("unloading") or legacy.group("loaded")
    return Path(path).stem if path else None


def _domain_in(text: str, path: str | None) -> str | None:
    """The domain launchctl's words name, else the system domain for a LaunchDaemons plist."""
    if target_in_text := _SERVICE_TARGET.search(text):
        return target_in_text.group("domain")
    if in_text := _DOMAIN.search(text):
        return in_text.group("domain")
    if gui_uid := re.search(r"user gui: (\d+)", text):
        return f"gui/{gui_uid.group(1)}"
    return "system" if path and "/LaunchDaemons/" in path else None


def _build(
    code: int, message: str, situation: _Situation | None, context: _Context
) -> LaunchctlError:
    if situation is None:
        meaning = f"launchctl error {code}: {error_text(code)}"
        hint = f"`launchctl error {code}` names it; `lanekit doctor` checks the usual causes"
    else:
        meaning = situation.meaning
        hint = situation.hint.format(**context.fields())
    return LaunchctlError(code, message, meaning, hint)


def _pick(situations: Sequence[_Situation], code: int | None) -> _Situation | None:
    """The situation that explains `code` among those the text reveals.

    A specific situation with that code first; then any specific one (`Load failed: 5` next to
    `<plist>: Invalid property list` is an invalid plist); then a generic one; then the code's.
    """
    specific = [s for s in situations if s.key not in _GENERIC]
    for situation in specific:
        if situation.code == code:
            return situation
    if specific:
        return specific[0]
    for situation in situations:
        if situation.code == code:
            return situation
    if situations:
        return situations[0]
    return _BY_CODE.get(code) if code is not None else None


def parse_error(
    stderr: str,
    returncode: int | None,
    *,
    args: Sequence[str] = (),
    domain: str | None = None,
    label: str | None = None,
    path: str | None = None,
) -> LaunchctlError:
    """launchctl's failure output and exit status as a LaunchctlError(code, message, meaning, hint).

    The code is the exit status when it is a real error code (not 0 or 1, which legacy
    load/unload and wrappers use); otherwise the code in a `... failed: N: text` line (the one
    equal to `returncode` if several); otherwise the code of the failure the words reveal
    (`Path had bad ownership/permissions` -> 122, `Invalid property list` -> 109, `Service is
    disabled` -> 119, `Could not find service` -> 113, `Could not find domain` -> 112, SIP ->
    150, legacy `Already loaded` -> 37); otherwise a wrapper's `exited with N`.
    The message is one line: the most specific line launchctl printed (the per-path line, else
    the summary line), prefixed with the command when `args` are given. The meaning says what
    it is in plain words; the hint names the command that fixes it, filled in from `args`,
    `domain`/`label`/`path`, or what the text names.
    """
    lines = [
        line.strip()
        for line in stderr.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if line.strip()
    ]
    lines = [
        line
        for line in lines
        if not _PROMPT.match(line) and not any(line.startswith(b) for b in _BOILERPLATE)
    ]
    text = "\n".join(lines)
    summaries = [(int(m.group("code")), line) for line in lines if (m := _SUMMARY.search(line))]
    situations = _situations_in(text)
    code: int | None = None
    if returncode is not None and returncode not in {0, 1}:
        code = returncode
    elif summaries:
        matching = [c for c, _ in summaries if c == returncode]
        code = matching[-1] if matching else summaries[-1][0]
    elif failures := [s for s in situations if s.failure]:
        code = failures[0].code
    elif wrapper := _WRAPPER_EXIT.search(text):
        code = int(wrapper.group("code"))
    else:
        code = returncode if returncode is not None else 0
    if any(c == code for c, _ in summaries):
        # Summary lines of other commands (`Boot-out failed: 3` between two bootstraps) are
        # other failures, not the cause of this one.
        lines = [
            line
            for line in lines
            if not (m := _SUMMARY.search(line)) or int(m.group("code")) == code
        ]
        situations = _situations_in("\n".join(lines))
    situation = _pick(situations, code)
    summary_line = next((line for c, line in reversed(summaries) if c == code), None)
    phrase_line = None
    if situation is not None and situation.phrases:
        # A per-path line (`<plist>: Service is disabled`) says more than the summary line;
        # among summary lines the last one is the final outcome.
        said = [line for line in lines if _matches(situation, line)]
        phrase_line = next((line for line in said if not _SUMMARY.search(line)), None)
        summary_line = summary_line or (said[-1] if said else None)
    if situation is not None and not situation.failure:
        # A warning explains the failure, but the summary line says what failed.
        phrase_line, summary_line = summary_line, phrase_line
    primary = phrase_line or summary_line or (lines[0] if lines else "")
    if not primary:
        primary = f"launchctl exited with status {returncode}"
    message = f"{cmdline('launchctl', *args)}: {primary}" if args else primary
    return _build(code, message, situation, _context(text, args, domain, label, path))


def error_for(
    code: int,
    message: str = "",
    *,
    domain: str | None = None,
    label: str | None = None,
    path: str | None = None,
) -> LaunchctlError:
    """The standard LaunchctlError for a launchctl code, worded like `parse_error` words it.

    The emulator raises these so both backends speak the same words; `message` (one line)
    defaults to launchctl's own `<code>: <text>`, and when it reveals a more specific failure
    than the code alone (code 5 with `Service is disabled`) the meaning and hint follow it.
    """
    message = message or f"{code}: {error_text(code)}"
    situation = _pick(_situations_in(message), code)
    return _build(code, message, situation, _context(message, (), domain, label, path))


def timeout_error(
    message: str, *, domain: str, label: str | None, path: str | None
) -> LaunchctlError:
    """The error for a launchctl call that did not answer in time (TIMEOUT_CODE)."""
    return _build(TIMEOUT_CODE, message, _BY_KEY["timeout"], _Context(domain, label, path))
