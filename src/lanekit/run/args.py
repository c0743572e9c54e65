"""The arguments of `lanekit run`: `LANE [--snapshot PATH]`, parsed without argparse.

Both the empty-run fast path (lanekit.run.entry) and the full run (lanekit.run.runner) read them the
same way; builtin modules only, for the fast path's start-up.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs start-up time; mypy still reads these imports
if TYPE_CHECKING:
    from collections.abc import Sequence

USAGE = "usage: lanekit run LANE [--snapshot PATH]"


def split_args(argv: Sequence[str]) -> tuple[str, str | None] | None:
    """`LANE [--snapshot PATH]` (either order, or `--snapshot=PATH`) -> (lane, snapshot);
    None for anything else (lanekit.run.runner.parse_args turns that into the usage error)."""
    lane: str | None = None
    snapshot: str | None = None
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--snapshot":
            if i + 1 >= len(args) or snapshot is not None:
                return None
            snapshot = args[i + 1]
            i += 2
            continue
        if arg.startswith("--snapshot="):
            if snapshot is not None:
                return None
            snapshot = arg.partition("=")[2]
        elif arg.startswith("-") or lane is not None or not arg:
            return None
        else:
            lane = arg
        i += 1
    if lane is None:
        return None
    return lane, snapshot
