"""jobfacts' reading of a job's argv: a shell's own `-c` is among its options, before the
script operand (issue 32: the watchdog's guard is `/bin/sh GUARD ... python -I -c CODE`)."""

from __future__ import annotations

import pytest

from lanekit.doctor.checks.jobfacts import is_shell_c, shell_command


@pytest.mark.parametrize(
    ("argv", "inline", "command"),
    [
        (["/bin/sh", "-c", "jq . x"], True, "jq"),
        (["/bin/bash", "-e", "-c", "rsync -a a b"], True, "rsync"),
        (["/bin/sh", "/state/watchdog-guard.sh", "h", "l", "/py", "-I", "-c", "code"], False, None),
        (["/bin/sh", "--", "script.sh", "-c", "x"], False, None),
        (["/usr/bin/python3", "-c", "print()"], False, None),
        (["/bin/sh", "-c"], True, None),
    ],
)
def test_the_shells_own_dash_c_only(argv: list[str], inline: bool, command: str | None) -> None:
    assert is_shell_c(argv) is inline
    assert shell_command(argv) == command
