"""Pure parsers for what launchctl (and launchd's log) print: text in, typed values out.

No I/O and no process here. `lanekit.service.launchd.launchctl` re-exports every public name; import
them from there. Apple says `print` output "is NOT API" and it did change between releases
(header form, domain form, properties form, `(pe)` rows), so every parser is lenient: unknown
fields are kept or skipped, never fatal, and the same function reads every layout we have seen.

Shared input rules: CRLF or CR line ends, a BOM, tabs or runs of spaces, and leading `#` comment
lines (how captured samples are annotated; launchctl itself never starts a line with `#`) are
all accepted.

The package: `common` (signals, shared input rules), `listing` (`list`, `list <label>`),
`printout` (`print`, `print-disabled`, `print <domain>`) and `launchdlog` (launchd's log).
"""

from __future__ import annotations

from lanekit.service.launchd.parse.common import (
    DARWIN_SIGNALS,
    signal_name,
)
from lanekit.service.launchd.parse.launchdlog import (
    LaunchdLogEvent,
    parse_launchd_log,
)
from lanekit.service.launchd.parse.listing import (
    decode_wait_status,
    find_entry,
    parse_list,
    parse_list_label,
    split_list_status,
)
from lanekit.service.launchd.parse.printout import (
    label_from_target,
    parse_domain_services,
    parse_print,
    parse_print_disabled,
)

__all__ = [
    "DARWIN_SIGNALS",
    "LaunchdLogEvent",
    "decode_wait_status",
    "find_entry",
    "label_from_target",
    "parse_domain_services",
    "parse_launchd_log",
    "parse_list",
    "parse_list_label",
    "parse_print",
    "parse_print_disabled",
    "signal_name",
    "split_list_status",
]
