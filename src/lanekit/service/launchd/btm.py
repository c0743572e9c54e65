"""`sfltool dumpbtm`: macOS 13+'s Background Task Management records, parsed (pure).

Each record is a block of `Key: value` lines under ` #N:`; what matters for a lane is its
`Disposition`: `[enabled, allowed, ...]`, where `disallowed` means the user switched it off under
System Settings > General > Login Items & Extensions ("Allow in the Background"), and launchd
then does not run it. Captures: tests/launchd/samples/macos-tools/dumpbtm-*.txt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

_RECORD = re.compile(r"^\s*#\d+:\s*$")
_FIELD = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z .]*?):\s(?P<value>.*)$")
_UID = re.compile(r"Records for UID (?P<uid>-?\d+)")


@dataclass(frozen=True, slots=True)
class BtmItem:
    """One Background Task Management record."""

    uid: int | None
    name: str | None
    type: str | None
    """`legacy agent`, `app`, `login item` ... (the hex value dropped)."""
    disposition: tuple[str, ...]
    identifier: str | None
    url: str | None
    executable: str | None

    @property
    def allowed(self) -> bool | None:
        """False when switched off under "Allow in the Background"; None when not stated."""
        if "disallowed" in self.disposition:
            return False
        if "allowed" in self.disposition:
            return True
        return None

    @property
    def path(self) -> str | None:
        """The file the URL names (percent-decoded), for `file://` URLs."""
        if self.url is None or not self.url.startswith("file://"):
            return None
        return unquote(urlsplit(self.url).path)


def parse_dumpbtm(text: str) -> list[BtmItem]:
    """Every record, in order; indented `Embedded Item Identifiers` rows are not records."""
    items: list[BtmItem] = []
    uid: int | None = None
    fields: dict[str, str] | None = None
    record_uid: int | None = None

    def flush() -> None:
        if fields:
            items.append(_item(record_uid, fields))

    for line in text.replace("\r", "\n").split("\n"):
        if found := _UID.search(line):
            flush()
            fields = None
            uid = int(found.group("uid"))
            continue
        if _RECORD.match(line) and len(line) - len(line.lstrip()) <= 2:
            flush()
            fields, record_uid = {}, uid
            continue
        if fields is not None and (field := _FIELD.match(line)):
            fields.setdefault(field.group("key").strip(), field.group("value").strip())
    flush()
    return items


def _item(uid: int | None, fields: dict[str, str]) -> BtmItem:
    def value(key: str) -> str | None:
        text = fields.get(key)
        return None if text in (None, "", "(null)") else text

    kind = value("Type")
    disposition = value("Disposition") or ""
    flags = disposition.partition("]")[0].lstrip("[")
    return BtmItem(
        uid=uid,
        name=value("Name"),
        type=kind.rsplit(" (", 1)[0] if kind else None,
        disposition=tuple(f.strip() for f in flags.split(",") if f.strip()),
        identifier=value("Identifier"),
        url=value("URL"),
        executable=value("Executable Path"),
    )


def find_item(items: list[BtmItem], *, label: str, plist: str | None) -> BtmItem | None:
    """The record of a LaunchAgent: by its plist path, else by `<type>.<label>` identifier."""
    for item in items:
        if plist is not None and item.path == plist:
            return item
    for item in items:
        if item.identifier is not None and item.identifier.partition(".")[2] == label:
            return item
    return None
