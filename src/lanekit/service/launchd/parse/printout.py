"""`launchctl print` of a service (every layout seen: header, domain, properties forms),
`print-disabled`, and the services of `print <domain>`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lanekit.service.launchd.model import ListEntry, ServiceInfo
from lanekit.service.launchd.parse.common import int_or_none, lines_of, signal_number, unquote
from lanekit.service.launchd.parse.listing import list_row


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
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped in {"}", "};"}:
            if len(stack) > 1:
                stack.pop()
            continue
        opened = _OPEN.match(stripped)
        if opened or stripped == "{":
            key = unquote(opened.group("key")) if opened else ""
            entry = _Entry(raw=stripped, key=key, block=[])
            stack[-1].append(entry)
            assert entry.block is not None
            stack.append(entry.block)
            continue
        leaf = _LEAF.match(stripped)
        if leaf:
            stack[-1].append(
                _Entry(
                    raw=stripped, key=unquote(leaf.group("key")), value=leaf.group("value") or ""
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
            if item.key and item.block is None and (int_or_none(item.value) or 0) != 0
        )
    # 11+: `properties = a | b | c`, possibly empty.
    return tuple(part.strip() for part in (entry.value or "").split("|") if part.strip())


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
            self.ints[key] = int_or_none(value)
        elif key in _TEXT_FIELDS:
            self.texts[key] = value or None
        elif key == "domain":
            self.texts[key] = _domain(value) or None
        elif key == "properties":
            self.properties = _properties(entry)
        elif key == "last exit code":
            self.last_exit_code = int_or_none(value)
            if self.last_exit_code is None and value and value != "(never exited)":
                self.last_exit_reason = self.last_exit_reason or value.strip("()")
        elif key == "last terminating signal":
            self.last_signal = signal_number(value)
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
            number = int_or_none(unquote(item.value or "")) if item.key else None
            if item.key and number is not None:
                table[item.key] = number
        found.append(table)
    return tuple(found)


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
                row = list_row(item.raw, zero_pid_is_none=True)
                if row is not None:
                    entries.append(row)
    return entries
