"""`launchctl list` (the table) and `launchctl list <label>` (the old-style dictionary)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lanekit.service.launchd.model import ListEntry
from lanekit.service.launchd.parse.common import DARWIN_SIGNALS, lines_of

Row = tuple[int | None, int | None, str]
"""(pid, last exit status, label): pid None for `-` (0 is kept: `launchctl print` prints 0 for a
job that is not running, `launchctl list` never does); status None for `-` or a flag column
such as `(pe)`; otherwise an exit code, or minus the signal."""


def split_row(line: str) -> Row | None:
    """One row (tabs or spaces), or None for headers, blanks and garbage.

    With tabs the label is whatever follows the last tab of the status column, so labels with
    spaces, brackets or colons survive; with spaces the label is the rest of the line. A flag
    column after the status (`0 - (pe) label`) is not part of the label.
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
    close = label.find(")") if label.startswith("(") else -1
    if close > 0 and close + 1 < len(label) and label[close + 1].isspace():
        inner = label[1:close]
        if "(" not in inner and not any(char.isspace() for char in inner):
            label = label[close + 1 :].lstrip()
    # str.isdecimal is what `\d` matches in a str pattern (a Unicode decimal digit).
    if not label or not (pid_text == "-" or pid_text.isdecimal()):
        return None
    signed = status_text[1:] if status_text[:1] in ("-", "+") else status_text
    numeric = signed.isdecimal()
    flagged = len(status_text) >= 2 and status_text[0] == "(" and status_text[-1] == ")"
    if not (status_text == "-" or numeric or flagged):
        return None
    pid = None if pid_text == "-" else int(pid_text)
    return (pid, int(status_text) if numeric else None, label)


def list_row(line: str, *, zero_pid_is_none: bool = False) -> ListEntry | None:
    """One `PID Status Label` row (tabs or spaces), or None for headers, blanks and garbage
    (split_row reads it); `zero_pid_is_none` for `launchctl print`'s rows, where PID 0 means
    not running."""
    row = split_row(line)
    if row is None:
        return None
    pid, status, label = row
    if zero_pid_is_none and pid == 0:
        pid = None
    return ListEntry(pid=pid, last_exit=status, label=label)


def parse_list(text: str) -> list[ListEntry]:
    """The rows of `launchctl list`, in order.

    `PID` is None for `-`; `last_exit` is the Status column as printed: an exit code, or minus
    the signal number (`-9`), kept as-is even when it is no signal (iOS prints `-43`); None for
    `-` (10.9 while running) or a flag column like `(pe)`. The header, blank lines, elisions
    (`...`) and anything that is not a row are skipped.
    """
    entries: list[ListEntry] = []
    for line in lines_of(text):
        entry = list_row(line)
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
    tokens = _tokens("\n".join(lines_of(text)))
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
