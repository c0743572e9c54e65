"""What every launchctl parser shares: macOS signal numbers and names, and the line,
integer and quoting rules of launchctl's output."""

from __future__ import annotations

import re
from collections.abc import Mapping

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

SIGNAL_BY_TEXT = {text.lower(): number for number, (_, text) in DARWIN_SIGNALS.items()}
SIGNAL_BY_NAME = {name.lower(): number for number, (name, _) in DARWIN_SIGNALS.items()}


def signal_name(number: int) -> str:
    """`SIGTERM` for 15 (macOS numbering); `signal N` for numbers outside the table."""
    known = DARWIN_SIGNALS.get(number)
    return known[0] if known else f"signal {number}"


def signal_number(text: str) -> int | None:
    """9 from `Killed: 9`, `9`, `SIGKILL` or `Killed`; None when unrecognisable."""
    text = text.strip()
    match = re.search(r"(\d+)\s*$", text)
    if match:
        return int(match.group(1))
    lowered = text.lower()
    return SIGNAL_BY_TEXT.get(lowered) or SIGNAL_BY_NAME.get(lowered)


def lines_of(text: str) -> list[str]:
    """Lines with any line-end convention, without a BOM or a leading `#` comment block."""
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = 0
    while start < len(lines) and lines[start].lstrip().startswith("#"):
        start += 1
    return lines[start:]


def int_or_none(text: str | None) -> int | None:
    """The integer a value starts with (`10`, `300 seconds`, `78: EX_CONFIG`), else None."""
    if text is None:
        return None
    match = re.match(r"\s*(-?\d+)", text)
    return int(match.group(1)) if match else None


def unquote(text: str) -> str:
    """A value without its surrounding double quotes (launchctl quotes some, not others)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    return text
