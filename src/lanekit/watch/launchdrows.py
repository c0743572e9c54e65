"""`launchctl print <domain>`'s services rows and `print-disabled`, read with str methods only.

The watchdog's lean pass (lanekit.watch.entry) fingerprints launchd's state on a Mac from these
two outputs on every pass. The adapter's parsers (lanekit.service.launchd.parse:
parse_domain_services,
parse_print_disabled) are the truth, but importing them costs the lean pass
lanekit.service.launchd's
package (dataclasses, pathlib, typing) and `re`: about 60 ms on the machine figure (j) is
measured on, against a budget of 3x an empty `lanekit run` (25 ms) of which the pass already
spends 45. So this module reads the same text the same way, rule for rule (each function
names the regular expression it stands for), and tests/watch/test_launchdrows.py holds the
two to the same answer on every capture in tests/launchd/samples and on generated variations
(tabs or spaces, flag columns, labels with spaces, nested and missing blocks, stray braces).

The rows themselves are read by lanekit.service.launchd.parse.rows, which the adapter's parsers use
too;
this module keeps the blocks around them. Builtin modules only (lanekit.service.launchd.parse.rows
imports
none at all): the lean pass imports this on every pass on a Mac.
"""

from __future__ import annotations

from lanekit.service.launchd.parse.rows import Row, split_row

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


_DISABLED = {"true": True, "disabled": True, "false": False, "enabled": False}
"""lanekit.service.launchd.parse.printout._DISABLED."""


def _lines(text: str) -> list[str]:
    """lanekit.service.launchd.parse.common.lines_of: any line end, no BOM, no leading # block."""
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = 0
    while start < len(lines) and lines[start].lstrip().startswith("#"):
        start += 1
    return lines[start:]


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    return text


def _opened(stripped: str) -> str | None:
    """The key of a block opener (`_OPEN`: `^(?P<key>.*?)\\s*(?:=>|=)\\s*\\{$`, or a bare
    `{`), unquoted; None for any other line."""
    if stripped == "{":
        return ""
    if not stripped.endswith("{"):
        return None
    head = stripped[:-1].rstrip()
    if head.endswith("=>"):
        return _unquote(head[:-2].rstrip())
    if head.endswith("="):
        return _unquote(head[:-1].rstrip())
    return None


def _leaf(stripped: str) -> tuple[str, str] | None:
    """(key, value) of a `key = value` / `key => value` line (`_LEAF`:
    `^(?P<key>\\S.*?)\\s+(?P<op>=>|=)(?:\\s+(?P<value>.*))?$`): the first run of white
    space after the key's first character that an operator follows, the operator followed by
    white space or the end; None when there is none."""
    size = len(stripped)
    pos = 1
    while pos < size:
        if not stripped[pos].isspace():
            pos += 1
            continue
        start = pos
        while pos < size and stripped[pos].isspace():
            pos += 1
        for op in ("=>", "="):
            after = pos + len(op)
            if stripped.startswith(op, pos) and (after == size or stripped[after].isspace()):
                return _unquote(stripped[:start]), stripped[after:].lstrip()
    return None


def _items(text: str, name: str) -> Iterator[tuple[str, str] | str]:
    """The direct entries of every block named `name` (lanekit.service.launchd.parse.printout's
    `_tree` and `_find_blocks`: braces give the structure, a matching block is not searched
    inside), in order; the top level's when no block has that name. A leaf is (key, value),
    a bare line its stripped text; nested blocks are not yielded."""
    found: list[tuple[str, str] | str] = []
    top: list[tuple[str, str] | str] = []
    matched = False
    # Each open block: 1 = a block named `name` (collect), 2 = inside one (skip), 0 = other.
    stack: list[int] = []
    for line in _lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped in ("}", "};"):
            if stack:
                stack.pop()
            continue
        key = _opened(stripped)
        if key is not None:
            outer = stack[-1] if stack else 0
            if outer:
                stack.append(2)
            elif key.lower() == name:
                stack.append(1)
                matched = True
            else:
                stack.append(0)
            continue
        entry: tuple[str, str] | str = _leaf(stripped) or stripped
        if not stack:
            top.append(entry)
        elif stack[-1] == 1:
            found.append(entry)
    yield from found if matched else top


def _row(line: str) -> Row | None:
    """lanekit.service.launchd.parse.listing.list_row(line, zero_pid_is_none=True): the same row
    reader
    (lanekit.service.launchd.parse.rows), PID 0 meaning not running."""
    row = split_row(line)
    if row is None:
        return None
    pid, status, label = row
    return (pid or None, status, label)


def service_rows(text: str) -> list[Row]:
    """The `services = { ... }` rows of `launchctl print <domain>`, in order, as
    lanekit.service.launchd.parse.parse_domain_services reads them (PID 0 is None)."""
    rows: list[Row] = []
    for item in _items(text, "services"):
        if isinstance(item, str):
            row = _row(item)
            if row is not None:
                rows.append(row)
    return rows


def disabled_services(text: str) -> dict[str, bool]:
    """label -> True when disabled, from `print-disabled <domain>`, as
    lanekit.service.launchd.parse.parse_print_disabled reads it."""
    result: dict[str, bool] = {}
    for item in _items(text, "disabled services"):
        if isinstance(item, tuple):
            key, value = item
            state = _DISABLED.get(value.strip().strip('"').lower())
            if state is not None:
                result[key] = state
    return result
