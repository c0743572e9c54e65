"""Values from outside lanekit made safe to show a person: quoted for a shell, escaped for a
terminal. Labels, paths, job ids and log text come from plists, lanes.toml, queue directories
and job output that anyone may have written; a fix a user pastes must run exactly the command it
names, and a label must not be able to move the cursor or recolour the screen.

Two owners, used everywhere rather than re-derived:

- `shell_quote(value)` / `cmdline(*argv)`: every value interpolated into a command lanekit
  suggests (doctor's fixes, error hints, status and apply messages, `try`, `logs`). Built on
  `shlex.quote`; a value holding a control character is written `$'...'` with `\\xNN` escapes
  instead, so that the command shows no raw control and still names the exact file when pasted
  (bash and zsh read `$'...'`). One decision about `~`: a value that lanekit or the user wrote as
  `~` or `~/...` means the home directory (config.py expands exactly those two forms and no
  other, and launchd expands none), so the leading `~/` stays bare for the shell to expand and
  only the rest is quoted: `~/'Library/Application Support/x'`. Every other `~` (`~user/...`,
  a `~` later in the value) is quoted literally, like any other character.
- `printable(text)`: every piece of human output, through the renderers in `lanekit.cli.render`
  and the CLI's error printer. It escapes what a terminal would act on: C0 controls (newline,
  ESC, BEL, backspace, carriage return, ...), DEL, C1 controls (0x80-0x9f: some terminals treat
  U+009B as CSI) and the Unicode bidirectional overrides and isolates (text that displays in a
  different order than it reads). Tab is kept: it moves the cursor right and nothing else.
  JSON output is not passed through here: json.dumps already escapes C0, and it is for programs.
"""

from __future__ import annotations

import os

_HOME = "~"
_HOME_PREFIX = "~/"

_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


# str.translate, not re: the lane entrypoint imports this and must stay light (test_entry.py).
_ESCAPES = {
    ord(char): _escape(char)
    for char in (*map(chr, range(0x20)), *map(chr, range(0x7F, 0xA0)), *_BIDI)
    if char != "\t"
}


def shell_quote(value: str | os.PathLike[str] | int) -> str:
    """`value` as one shell word: `'a b'`, `'x; touch P'`, `~/'A B'` (see the module doc)."""
    import shlex  # only when a command is suggested: shlex pulls in re and enum

    text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    if any(ord(char) in _ESCAPES for char in text):
        return _ansi_c(text)
    if text == _HOME:
        return text
    if text.startswith(_HOME_PREFIX):
        rest = text[len(_HOME_PREFIX) :]
        return _HOME_PREFIX + shlex.quote(rest) if rest else _HOME_PREFIX
    return shlex.quote(text)


def _ansi_c(text: str) -> str:
    """`$'...'` (bash and zsh, also macOS's bash 3.2): the only quoting that shows a control
    character as visible text and still yields the exact value when pasted. Controls become
    their UTF-8 bytes as `\\xNN`, so C1 and bidi characters round-trip too."""
    out = []
    for char in text:
        if char in "\\'":
            out.append("\\" + char)
        elif ord(char) in _ESCAPES:
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8"))
        else:
            out.append(char)
    return "$'" + "".join(out) + "'"


def cmdline(*argv: str | os.PathLike[str] | int) -> str:
    """A command line to suggest: each argument quoted by `shell_quote`, joined by spaces.

    Operators (`&&`) and prose do not belong in argv: join two commands as
    `f"{cmdline(...)} && {cmdline(...)}"`.
    """
    return " ".join(shell_quote(arg) for arg in argv)


def printable(text: str) -> str:
    """`text` with every terminal control escaped (`\\n`, `\\x1b`, `\\u202e`); tabs kept."""
    return text.translate(_ESCAPES)
