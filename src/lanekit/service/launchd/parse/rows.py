"""One `PID Status Label` row of `launchctl list`, or of the services block of `launchctl print
<domain>`, read with str methods only.

Its one reader for the adapter's parsers (lanekit.service.launchd.parse.listing) and for the
watchdog's lean pass (lanekit.watch.launchdrows), which reads launchd's state on every pass on
a Mac and cannot pay for lanekit.service.launchd's package or `re` (benchmark figure (j)). Builtin
modules only (none at all).
"""

from __future__ import annotations

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
