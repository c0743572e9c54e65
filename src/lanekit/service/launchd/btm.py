"""`sfltool dumpbtm`: macOS 13+'s Background Task Management records, parsed (pure).

Each record is a block of `Key: value` lines under ` #N:`; what matters for a lane is its
`Disposition`: `[enabled, allowed, notified] (0xb)`. Two separate bits decide whether launchd
runs an agent: `enabled` (0x1) and `allowed` (0x2); the words `disabled` and `disallowed` are
those bits clear (`[enabled, disallowed, notified] (0x9)`, `[disabled, allowed, not notified]
(0x2)` in the captures). The bit values are those objective-see's DumpBTM decodes the same
records by (https://github.com/objective-see/DumpBTM, library/code/dumpBTM.m,
`dispositionDetails`: enabled 0x1, allowed 0x2, hidden 0x4, notified 0x8). Sources disagree on
which one the "Allow in the Background" switch (System Settings > General > Login Items &
Extensions) clears, so either one counts as switched off. The words are read when present, else
the bits of the number after them (hex as sfltool prints it; decimal, as DumpBTM prints it,
is read too). Captures: tests/service/launchd/samples/macos-tools/dumpbtm-*.txt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

_RECORD = re.compile(r"^\s*#\d+:\s*$")
_FIELD = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z .]*?):\s(?P<value>.*)$")
_UID = re.compile(r"Records for UID (?P<uid>-?\d+)")
_BITS = re.compile(r"\((?P<bits>0x[0-9a-fA-F]+|\d+)\)")
ENABLED = 0x1
"""Disposition bit: the item is enabled (clear: `disabled`)."""
ALLOWED = 0x2
"""Disposition bit: the item is allowed to run in the background (clear: `disallowed`)."""
_TYPE_PREFIX = re.compile(r"\d+\.")
"""An identifier's type prefix: `8.` (agent), `16.` (daemon), `2.` (app) before the label."""


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
    bits: int | None = None
    """The disposition's number (`(0x9)`), None when not printed."""

    def _flag(self, on: str, off: str, bit: int) -> bool | None:
        if off in self.disposition:
            return False
        if on in self.disposition:
            return True
        return None if self.bits is None else bool(self.bits & bit)

    @property
    def enabled(self) -> bool | None:
        """The `enabled` bit (0x1): False for `disabled`; None when not stated."""
        return self._flag("enabled", "disabled", ENABLED)

    @property
    def allowed(self) -> bool | None:
        """The `allowed` bit (0x2): False for `disallowed`; None when not stated."""
        return self._flag("allowed", "disallowed", ALLOWED)

    @property
    def switched_off(self) -> bool:
        """True when launchd will not run it: `disabled` or `disallowed` (either bit clear)."""
        return self.enabled is False or self.allowed is False

    @property
    def label(self) -> str | None:
        """The launchd label in the identifier: `8.com.example.lane` -> `com.example.lane`;
        only an all-digit type prefix is dropped (`uk.co.example` stays as it is)."""
        if self.identifier is None:
            return None
        found = _TYPE_PREFIX.match(self.identifier)
        return self.identifier[found.end() :] if found else self.identifier

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
    flags, _, rest = disposition.partition("]")
    flags = flags.lstrip("[") if "[" in disposition else ""
    number = _BITS.search(rest if "[" in disposition else disposition)
    return BtmItem(
        uid=uid,
        name=value("Name"),
        type=kind.rsplit(" (", 1)[0] if kind else None,
        disposition=tuple(f.strip() for f in _words(flags) if f.strip()),
        identifier=value("Identifier"),
        url=value("URL"),
        executable=value("Executable Path"),
        bits=int(number.group("bits"), 0) if number else None,
    )


def _words(flags: str) -> list[str]:
    """sfltool separates the words with commas (`not notified` is one word); a list without
    commas (DumpBTM's `[enabled allowed visible notified]`) is split at spaces."""
    return flags.split(",") if "," in flags else flags.split()


def find_item(items: list[BtmItem], *, label: str, plist: str | None) -> BtmItem | None:
    """The record of a LaunchAgent: by its plist path, else by `<type>.<label>` identifier."""
    for item in items:
        if plist is not None and item.path == plist:
            return item
    for item in items:
        if item.label == label:
            return item
    return None
