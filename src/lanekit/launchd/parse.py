"""Pure parsers for what launchctl (and launchd's log) print: text in, typed values out.

No I/O and no process here. `lanekit.launchd.launchctl` re-exports every public name; import
them from there. Apple says `print` output "is NOT API" and it did change between releases
(header form, domain form, properties form, `(pe)` rows), so every parser is lenient: unknown
fields are kept or skipped, never fatal, and the same function reads every layout we have seen.

Shared input rules: CRLF or CR line ends, a BOM, tabs or runs of spaces, and leading `#` comment
lines (how captured samples are annotated; launchctl itself never starts a line with `#`) are
all accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lanekit.launchd.model import ListEntry, ServiceInfo

DARWIN_SIGNALS: Mapping[int, tuple[str, str]] = {
    1: ("SIGHUP", "Hangup"),
    2: ("SIGINT", "Interrupt"),
    3: ("SIGQUIT", "Quit"),
    4: ("SIGILL", "Illegal instruction"),
    5: ("SIGTRAP", "Trace/BPT trap"),
    6: ("SIGABRT", "Abort trap"),
    7: ("SIGEMT", "EMT trap"),
    8: ("SIGFPE", "Floating point exception"),
    9: ("SIGKILL", "Killed"),
    10: ("SIGBUS", "Bus error"),
    11: ("SIGSEGV", "Segmentation fault"),
    12: ("SIGSYS", "Bad system call"),
    13: ("SIGPIPE", "Broken pipe"),
    14: ("SIGALRM", "Alarm clock"),
    15: ("SIGTERM", "Terminated"),
    16: ("SIGURG", "Urgent I/O condition"),
    17: ("SIGSTOP", "Suspended (signal)"),
    18: ("SIGTSTP", "Suspended"),
    19: ("SIGCONT", "Continued"),
    20: ("SIGCHLD", "Child exited"),
    21: ("SIGTTIN", "Stopped (tty input)"),
    22: ("SIGTTOU", "Stopped (tty output)"),
    23: ("SIGIO", "I/O possible"),
    24: ("SIGXCPU", "Cputime limit exceeded"),
    25: ("SIGXFSZ", "Filesize limit exceeded"),
    26: ("SIGVTALRM", "Virtual timer expired"),
    27: ("SIGPROF", "Profiling timer expired"),
    28: ("SIGWINCH", "Window size changes"),
    29: ("SIGINFO", "Information request"),
    30: ("SIGUSR1", "User defined signal 1"),
    31: ("SIGUSR2", "User defined signal 2"),
}
"""macOS signal numbers, names and strsignal(3) texts. Numbers differ from Linux (SIGBUS is 10
on macOS, 7 on Linux), so launchd's numbers are decoded with this table, not the `signal` module."""

_SIGNAL_BY_TEXT = {text.lower(): number for number, (_, text) in DARWIN_SIGNALS.items()}
_SIGNAL_BY_NAME = {name.lower(): number for number, (name, _) in DARWIN_SIGNALS.items()}


def signal_name(number: int) -> str:
    """`SIGTERM` for 15 (macOS numbering); `signal N` for numbers outside the table."""
    known = DARWIN_SIGNALS.get(number)
    return known[0] if known else f"signal {number}"


def _lines(text: str) -> list[str]:
    """Lines with any line-end convention, without a BOM or a leading `#` comment block."""
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = 0
    while start < len(lines) and lines[start].lstrip().startswith("#"):
        start += 1
    return lines[start:]


def _int(text: str | None) -> int | None:
    """The integer a value starts with (`10`, `300 seconds`, `78: EX_CONFIG`), else None."""
    if text is None:
        return None
    match = re.match(r"\s*(-?\d+)", text)
    return int(match.group(1)) if match else None


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    return text


# --------------------------------------------------------------------------- launchctl list


_PID = re.compile(r"^(?:-|\d+)$")
_STATUS = re.compile(r"^(?:-|[-+]?\d+|\(.*\))$")


def _row(line: str, *, zero_pid_is_none: bool = False) -> ListEntry | None:
    """One `PID Status Label` row (tabs or spaces), or None for headers, blanks and garbage.

    With tabs the label is whatever follows the last tab of the status column, so labels with
    spaces, brackets or colons survive; with spaces the label is the rest of the line.
    """
    stripped = line.strip()
    if not stripped:
        return None
    columns: list[str] = []
    label = ""
    if "\t" in stripped:
        head, _, label = stripped.rpartition("\t")
        columns = head.split()
    if len(columns) < 2:
        parts = stripped.split(None, 2)
        if len(parts) != 3:
            return None
        columns, label = parts[:2], parts[2]
    pid_text, status_text = columns[0], columns[1]
    label = label.strip()
    # A flag column after the status (`0 - (pe) label`) is not part of the label.
    flags = re.match(r"^\([^()\s]*\)\s+(?=\S)", label)
    if flags:
        label = label[flags.end() :]
    if not label or not _PID.match(pid_text) or not _STATUS.match(status_text):
        return None
    pid = None if pid_text == "-" else int(pid_text)
    if zero_pid_is_none and pid == 0:
        pid = None
    status = int(status_text) if re.match(r"^[-+]?\d+$", status_text) else None
    return ListEntry(pid=pid, last_exit=status, label=label)


def parse_list(text: str) -> list[ListEntry]:
    """The rows of `launchctl list`, in order.

    `PID` is None for `-`; `last_exit` is the Status column as printed: an exit code, or minus
    the signal number (`-9`), kept as-is even when it is no signal (iOS prints `-43`); None for
    `-` (10.9 while running) or a flag column like `(pe)`. The header, blank lines, elisions
    (`...`) and anything that is not a row are skipped.
    """
    entries: list[ListEntry] = []
    for line in _lines(text):
        entry = _row(line)
        if entry is not None:
            entries.append(entry)
    return entries


def find_entry(entries: Iterable[ListEntry], label: str) -> ListEntry | None:
    """The row whose label is exactly `label` (case-sensitive, like launchd's own lookup).

    `grep mysql` style matching also hits `homebrew.mxcl.mysql@5.7`; this does not.
    """
    for entry in entries:
        if entry.label == label:
            return entry
    return None


def split_list_status(status: int | None) -> tuple[int | None, int | None]:
    """(exit code, signal) from a list-style status: `1` -> (1, None), `-15` -> (None, 15).

    Negative values outside the signal range (iOS `-43`) are neither: (None, None).
    """
    if status is None:
        return None, None
    if status >= 0:
        return status, None
    if -status in DARWIN_SIGNALS:
        return None, -status
    return None, None


# --------------------------------------------------------------------- launchctl list <label>

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<punct>[{}()=;])
      | "(?P<string>(?:[^"\\]|\\.)*)"
      | "(?P<open_string>[^"]*)$
      | (?P<word>[^\s{}()=;"]+)
    )""",
    re.VERBOSE | re.DOTALL,
)
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    """punct | string | word"""
    text: str


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            if not text[pos:].strip():
                break
            pos += 1
            continue
        pos = match.end()
        if match.group("punct") is not None:
            tokens.append(_Token("punct", match.group("punct")))
        elif match.group("string") is not None:
            raw = match.group("string")
            tokens.append(_Token("string", _ESCAPE.sub(lambda m: _ESCAPES.get(m[1], m[1]), raw)))
        elif match.group("open_string") is not None:
            tokens.append(_Token("string", match.group("open_string")))
        elif match.group("word") is not None:
            tokens.append(_Token("word", match.group("word")))
    return tokens


def _scalar(token: _Token) -> object:
    if token.kind == "string":
        return token.text
    if re.fullmatch(r"[-+]?\d+", token.text):
        return int(token.text)
    if token.text in {"true", "false"}:
        return token.text == "true"
    return token.text


class _NextStep:
    """A forgiving reader of launchctl's NeXTSTEP-style dictionaries (10.9 `print_obj`)."""

    def __init__(self, tokens: Sequence[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def _peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _is(self, punct: str) -> bool:
        token = self._peek()
        return token is not None and token.kind == "punct" and token.text == punct

    def _skip_semicolons(self) -> None:
        while self._is(";"):
            self.pos += 1

    def value(self) -> object:
        token = self._peek()
        if token is None:
            return None
        if token.kind == "punct" and token.text == "{":
            self.pos += 1
            return self.body("}")
        if token.kind == "punct" and token.text == "(":
            self.pos += 1
            items: list[object] = []
            while (current := self._peek()) is not None and not self._is(")"):
                if current.kind == "punct" and current.text not in {"{", "("}:
                    self.pos += 1
                    continue
                items.append(self.value())
            self.pos += 1
            return items
        self.pos += 1
        return _scalar(token) if token.kind != "punct" else None

    def body(self, closer: str | None) -> dict[str, object]:
        """`"key" = value;` pairs until `closer` (or the end); junk tokens are stepped over."""
        result: dict[str, object] = {}
        while (token := self._peek()) is not None:
            if closer is not None and token.kind == "punct" and token.text == closer:
                self.pos += 1
                self._skip_semicolons()
                return result
            if token.kind == "punct":
                self.pos += 1
                continue
            self.pos += 1
            if not self._is("="):
                continue
            self.pos += 1
            result[token.text] = self.value()
            self._skip_semicolons()
        return result


def decode_wait_status(raw: int) -> tuple[int | None, int | None]:
    """(exit code, signal) from a raw wait(2) status, as `list <label>` prints LastExitStatus.

    256 -> (1, None); 19968 -> (78, None); 15 -> (None, 15); 9 -> (None, 9); 0 -> (0, None).
    A value whose low bits name no signal and that fits a byte (an already-decoded exit code
    from some other producer) is taken as the exit code itself; a stopped status is neither.
    """
    if raw < 0:
        return split_list_status(raw)
    low = raw & 0x7F
    if low == 0:
        return (raw >> 8) & 0xFF, None
    if low in DARWIN_SIGNALS:
        return None, low
    if raw < 256 and low != 0x7F:
        return raw, None
    return None, None


def parse_list_label(text: str) -> dict[str, object]:
    """`launchctl list <label>` as a dict, keys as printed (`Label`, `PID`, `LastExitStatus`...).

    Strings are str, bare integers int, `true`/`false` bool, `( ... );` lists, `{ ... };` dicts,
    bare words (`mach-port-object`) str. Three decoded keys are always added, because
    LastExitStatus is a raw wait(2) status, not an exit code:
    `last_exit` (launchctl-list convention: exit code, or minus the signal; 256 -> 1, 15 -> -15),
    `last_exit_code` (int or None) and `last_signal` (int or None). All three are None when the
    output has no integer LastExitStatus. Anything unparseable (an error message) gives only the
    decoded keys, all None.
    """
    tokens = _tokens("\n".join(_lines(text)))
    reader = _NextStep(tokens)
    opening = next(
        (i for i, t in enumerate(tokens) if t.kind == "punct" and t.text == "{"),
        None,
    )
    if opening is not None and not any(
        t.kind == "punct" and t.text == "=" for t in tokens[:opening]
    ):
        reader.pos = opening + 1
        result = reader.body("}")
    else:
        result = reader.body(None)
    raw = result.get("LastExitStatus")
    code: int | None = None
    sig: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        code, sig = decode_wait_status(raw)
    result["last_exit_code"] = code
    result["last_signal"] = sig
    result["last_exit"] = code if code is not None else (-sig if sig is not None else None)
    return result


# ----------------------------------------------------------------------------- launchctl print


@dataclass(slots=True)
class _Entry:
    """One line of `print` output: a `key = value` leaf, a block opener, or a bare line."""

    raw: str
    key: str | None = None
    value: str | None = None
    block: list[_Entry] | None = None


_OPEN = re.compile(r"^(?P<key>.*?)\s*(?:=>|=)\s*\{$")
_LEAF = re.compile(r"^(?P<key>\S.*?)\s+(?P<op>=>|=)(?:\s+(?P<value>.*))?$")


def _tree(text: str) -> list[_Entry]:
    """Braces give the structure; indentation (tabs, 4 or 8 spaces, none) is ignored.

    Truncated output (no closing braces) simply ends; a stray `}` at the top is dropped.
    """
    root: list[_Entry] = []
    stack = [root]
    for line in _lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped in {"}", "};"}:
            if len(stack) > 1:
                stack.pop()
            continue
        opened = _OPEN.match(stripped)
        if opened or stripped == "{":
            key = _unquote(opened.group("key")) if opened else ""
            entry = _Entry(raw=stripped, key=key, block=[])
            stack[-1].append(entry)
            assert entry.block is not None
            stack.append(entry.block)
            continue
        leaf = _LEAF.match(stripped)
        if leaf:
            stack[-1].append(
                _Entry(
                    raw=stripped, key=_unquote(leaf.group("key")), value=leaf.group("value") or ""
                )
            )
        else:
            stack[-1].append(_Entry(raw=stripped))
    return root


_FIELD_BLOCKS = {
    "arguments",
    "environment",
    "default environment",
    "inherited environment",
    "global environment",
    "event triggers",
    "endpoints",
    "dynamic endpoints",
    "pid-local endpoints",
    "instance-specific endpoints",
    "externally-hosted endpoints",
    "event channels",
    "sockets",
    "semaphores",
    "properties",
    "resource coalition",
    "jetsam coalition",
    "security context",
    "services",
    "disabled services",
    "unmanaged processes",
    "task-special ports",
    "subdomains",
    "service stats",
    "trial factors",
    "spawn constraints",
    "descriptor",
    "login item associations",
}
_FIELD_BLOCK_SUFFIXES = (
    "environment",
    "endpoints",
    "coalition",
    "triggers",
    "channels",
    "ports",
    "services",
    "processes",
    "constraints",
)


def _is_field_block(key: str) -> bool:
    lowered = key.lower()
    return lowered in _FIELD_BLOCKS or lowered.endswith(_FIELD_BLOCK_SUFFIXES)


def _main_block(root: list[_Entry]) -> tuple[str | None, list[_Entry]]:
    """(header name, entries) of the object printed; (None, root) for a headerless fragment."""
    for entry in root:
        if entry.key is None and entry.block is None:
            continue  # a prompt or note line before the header
        if entry.block is not None and entry.key and not _is_field_block(entry.key):
            return entry.key, entry.block
        break
    return None, root


_TARGET = re.compile(r"^(?:(?:gui|user|login|pid|session)/\d+|system)/(?P<label>.+)$")


def label_from_target(name: str) -> str:
    """`com.x` from `gui/501/com.x`, `user/501/com.x`, `system/com.x`; a bare label as is."""
    match = _TARGET.match(name.strip())
    return match.group("label") if match else name.strip()


def _environment(block: list[_Entry] | None) -> dict[str, str]:
    env: dict[str, str] = {}
    for entry in block or ():
        if entry.key is not None and entry.block is None:
            env[entry.key] = entry.value or ""
        elif entry.key is None and entry.raw.endswith("=>"):
            env[entry.raw[:-2].strip()] = ""
    return env


def _properties(entry: _Entry) -> tuple[str, ...]:
    if entry.block is not None:
        # Up to 10.15: `properties = { name = 0|1 }`; a flag is set when its value is non-zero.
        return tuple(
            item.key
            for item in entry.block
            if item.key and item.block is None and (_int(item.value) or 0) != 0
        )
    # 11+: `properties = a | b | c`, possibly empty.
    return tuple(part.strip() for part in (entry.value or "").split("|") if part.strip())


def _signal_number(text: str) -> int | None:
    """9 from `Killed: 9`, `9`, `SIGKILL` or `Killed`; None when unrecognisable."""
    text = text.strip()
    match = re.search(r"(\d+)\s*$", text)
    if match:
        return int(match.group(1))
    lowered = text.lower()
    return _SIGNAL_BY_TEXT.get(lowered) or _SIGNAL_BY_NAME.get(lowered)


def _domain(value: str) -> str:
    """`gui/501` from `gui/501 [100002]` (the ASID is printed separately); old forms as printed."""
    return re.sub(r"\s*\[[^\]]*\]\s*$", "", value.strip())


_INT_FIELDS = {
    "pid",
    "runs",
    "exit timeout",
    "minimum runtime",
    "run interval",
    "successive crashes",
}
_TEXT_FIELDS = {
    "state",
    "program",
    "stdout path",
    "stderr path",
    "working directory",
    "path",
    "type",
}


def parse_print(text: str, *, label: str | None = None) -> ServiceInfo:
    """`launchctl print <service-target>` as a ServiceInfo, for every layout seen.

    - Header: `gui/501/com.x = {` (macOS 11+), the bare label `com.x = {` (10.10-10.15), or none
      (a fragment); `label` is the fallback name, then the block's XPC_SERVICE_NAME, then "".
    - Only the service's own top-level fields are read; nested blocks (`event triggers`,
      `endpoints`, `resource coalition`, `descriptor`...) cannot shadow them.
    - `last exit code = 78: EX_CONFIG` -> 78; `(never exited)` -> None; other parenthesised
      forms (`(abandoned)`) -> last_exit_reason; `last terminating signal = Killed: 9` -> 9.
    - `domain = gui/501 [100002]` -> `gui/501`; the old `com.apple.xpc.launchd...` form as is.
    - `properties`: names whose value is non-zero in the old `{ name = 0|1 }` dict, or the
      ` | `-joined names of the new form; empty when `properties = ` is empty.
    - `global environment` (Yosemite) is domain-wide, so it joins `inherited_environment`.
    - Every other top-level `key = value` (asid, nice, immediate reason, spawn type...) is kept
      in `extra` with the key as printed.
    """
    header, entries = _main_block(_tree(text))
    fields = _PrintFields()
    seen: set[str] = set()
    for entry in entries:
        if entry.key is None or entry.key.lower() in seen:
            continue
        seen.add(entry.key.lower())
        if entry.block is not None:
            fields.read_block(entry, entry.block)
        else:
            fields.read_value(entry)
    if header:
        name = label_from_target(header)
    else:
        name = label or fields.environment.get("XPC_SERVICE_NAME") or ""
    ints, texts = fields.ints, fields.texts
    return ServiceInfo(
        label=name,
        state=texts.get("state"),
        pid=ints.get("pid"),
        last_exit_code=fields.last_exit_code,
        last_signal=fields.last_signal,
        last_exit_reason=fields.last_exit_reason,
        runs=ints.get("runs"),
        program=texts.get("program"),
        arguments=fields.arguments,
        environment=fields.environment,
        default_environment=fields.default_environment,
        inherited_environment=fields.inherited_environment,
        stdout_path=texts.get("stdout path"),
        stderr_path=texts.get("stderr path"),
        working_directory=texts.get("working directory"),
        exit_timeout=ints.get("exit timeout"),
        minimum_runtime=ints.get("minimum runtime"),
        run_interval=ints.get("run interval"),
        successive_crashes=ints.get("successive crashes"),
        path=texts.get("path"),
        type=texts.get("type"),
        domain=texts.get("domain"),
        properties=fields.properties,
        calendar=fields.calendar,
        extra=fields.extra,
    )


@dataclass
class _PrintFields:
    """What parse_print has read so far of the service's own top-level entries."""

    ints: dict[str, int | None] = field(default_factory=dict)
    texts: dict[str, str | None] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    default_environment: dict[str, str] = field(default_factory=dict)
    inherited_environment: dict[str, str] = field(default_factory=dict)
    arguments: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    calendar: tuple[dict[str, int], ...] | None = None
    extra: dict[str, str] = field(default_factory=dict)
    last_exit_code: int | None = None
    last_signal: int | None = None
    last_exit_reason: str | None = None

    def read_block(self, entry: _Entry, block: list[_Entry]) -> None:
        """A `key = { ... }` entry; blocks parse_print does not know are skipped."""
        key = (entry.key or "").lower()
        if key == "arguments":
            self.arguments = tuple(item.raw for item in block)
        elif key == "environment":
            self.environment = _environment(block)
        elif key == "default environment":
            self.default_environment = _environment(block)
        elif key in {"inherited environment", "global environment"}:
            self.inherited_environment.update(_environment(block))
        elif key == "properties":
            self.properties = _properties(entry)
        elif key == "event triggers":
            self.calendar = _calendar_triggers(block)

    def read_value(self, entry: _Entry) -> None:
        """A `key = value` entry; unknown keys go to `extra` as printed."""
        key = (entry.key or "").lower()
        value = (entry.value or "").strip()
        if key in _INT_FIELDS:
            self.ints[key] = _int(value)
        elif key in _TEXT_FIELDS:
            self.texts[key] = value or None
        elif key == "domain":
            self.texts[key] = _domain(value) or None
        elif key == "properties":
            self.properties = _properties(entry)
        elif key == "last exit code":
            self.last_exit_code = _int(value)
            if self.last_exit_code is None and value and value != "(never exited)":
                self.last_exit_reason = self.last_exit_reason or value.strip("()")
        elif key == "last terminating signal":
            self.last_signal = _signal_number(value)
        elif key == "last exit reason":
            self.last_exit_reason = value or None
        else:
            self.extra[entry.key or ""] = value


_CALENDAR_STREAM = "com.apple.launchd.calendarinterval"


def _calendar_triggers(block: list[_Entry]) -> tuple[dict[str, int], ...]:
    """The `descriptor` of every trigger on the calendar stream (print-02:
    `descriptor = { "Minute" => 5 }`); a value that is not an integer is left out."""
    found = []
    for trigger in block:
        if trigger.block is None:
            continue
        fields = {(e.key or "").lower(): e for e in trigger.block}
        stream = fields.get("stream")
        descriptor = fields.get("descriptor")
        if stream is None or (stream.value or "").strip() != _CALENDAR_STREAM:
            continue
        table: dict[str, int] = {}
        for item in (descriptor.block if descriptor is not None else None) or ():
            number = _int(_unquote(item.value or "")) if item.key else None
            if item.key and number is not None:
                table[item.key] = number
        found.append(table)
    return tuple(found)


# ----------------------------------------------------------------- print-disabled, print <domain>

_DISABLED = {"true": True, "disabled": True, "false": False, "enabled": False}


def _find_blocks(entries: list[_Entry], name: str) -> list[list[_Entry]]:
    found: list[list[_Entry]] = []
    for entry in entries:
        if entry.block is None:
            continue
        if (entry.key or "").lower() == name:
            found.append(entry.block)
        else:
            found.extend(_find_blocks(entry.block, name))
    return found


def parse_print_disabled(text: str) -> dict[str, bool]:
    """label -> True when disabled, from `print-disabled <domain>` or a `print <domain>`.

    Reads `"label" => true|false` (older) and `"label" => disabled|enabled` (current) inside
    `disabled services = { ... }`; other blocks (`login item associations`) are ignored. A
    fragment without that block is read line by line.
    """
    root = _tree(text)
    blocks = _find_blocks(root, "disabled services") or [root]
    result: dict[str, bool] = {}
    for block in blocks:
        for entry in block:
            if entry.key is None or entry.block is not None:
                continue
            state = _DISABLED.get((entry.value or "").strip().strip('"').lower())
            if state is not None:
                result[entry.key] = state
    return result


def parse_domain_services(text: str) -> list[ListEntry]:
    """The `services = { ... }` rows of `launchctl print <domain>` as ListEntry values.

    Rows are `<PID or 0> <status or - or (flags)> <label>`; PID 0 means not running (None), and
    a `-` or flag column such as macOS 26's `(pe)` gives last_exit None.
    """
    root = _tree(text)
    blocks = _find_blocks(root, "services") or [root]
    entries: list[ListEntry] = []
    for block in blocks:
        for item in block:
            if item.block is None and item.key is None:
                row = _row(item.raw, zero_pid_is_none=True)
                if row is not None:
                    entries.append(row)
    return entries


# ------------------------------------------------------------------------------ launchd's log


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
    for line in _lines(text):
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
                signal=_signal_number(killed[1]) if killed else None,
                path=path["path"].strip() if path else None,
            )
        )
    return events
