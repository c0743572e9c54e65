"""launchctl's codes by name: each name is the number launchctl prints with the words it prints,
the groups lanekit acts on hold what they say, and no module compares a code to a bare number."""

from __future__ import annotations

import ast

import pytest

from lanekit.service.launchd.codes import (
    ABSENT,
    ABSENT_OR_GONE,
    NOT_LOADED,
    STILL_LOADED,
    LaunchctlCode,
)
from lanekit.service.launchd.launchctl import error_text
from places import SRC


@pytest.mark.parametrize(
    ("code", "number", "words"),
    [
        (LaunchctlCode.NOT_PERMITTED, 1, "Operation not permitted"),
        (LaunchctlCode.NO_SUCH_FILE, 2, "No such file or directory"),
        (LaunchctlCode.NO_SUCH_PROCESS, 3, "No such process"),
        (LaunchctlCode.IO_ERROR, 5, "Input/output error"),
        (LaunchctlCode.FILE_EXISTS, 17, "File exists"),
        (LaunchctlCode.STILL_STOPPING, 36, "Operation now in progress"),
        (LaunchctlCode.ALREADY_IN_PROGRESS, 37, "Operation already in progress"),
        (LaunchctlCode.TIMED_OUT, 60, "Operation timed out"),
        (LaunchctlCode.USAGE, 64, "Usage error"),
        (LaunchctlCode.INVALID_PLIST, 109, "Invalid property list"),
        (LaunchctlCode.NO_DOMAIN, 112, "Could not find specified domain"),
        (LaunchctlCode.NO_SERVICE, 113, "Could not find specified service"),
        (LaunchctlCode.DISABLED, 119, "Service is disabled"),
        (LaunchctlCode.BAD_PERMISSIONS, 122, "Path had bad ownership/permissions"),
        (LaunchctlCode.DOMAIN_UNSUPPORTED, 125, "Domain does not support specified action"),
        (LaunchctlCode.WRONG_SESSION, 134, "Service cannot load in requested session"),
        (
            LaunchctlCode.SIP,
            150,
            "Operation not permitted while System Integrity Protection is engaged",
        ),
        (LaunchctlCode.NOT_PLATFORM_BINARY, 154, "Requestor is not a platform binary"),
    ],
)
def test_each_name_is_launchctls_number_and_words(
    code: LaunchctlCode, number: int, words: str
) -> None:
    """The name stands for the number launchctl prints, and `launchctl error N` says `words`."""
    assert code == number
    assert f"{code}" == str(number)  # in messages a code reads as launchctl printed it
    assert error_text(code) == words


def test_every_code_is_in_the_table() -> None:
    """The table above names every member (a new name must be pinned to its words)."""
    assert len(LaunchctlCode) == 18


def test_groups() -> None:
    """Not loaded: 3 (bootout) and 113 (print); still loaded: 5 and 37 (bootstrap); absent
    from this domain: 112, 113, 125, and bootout's 3 besides."""
    assert {3, 113} == NOT_LOADED
    assert {5, 37} == STILL_LOADED
    assert {112, 113, 125} == ABSENT
    assert {3, 112, 113, 125} == ABSENT_OR_GONE


def _bare_code_comparisons(source: str) -> list[int]:
    """Lines of `x.code == 36`, `x.code in {3, 113}` and the like: a code compared to a bare
    number."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(isinstance(s, ast.Attribute) and s.attr == "code" for s in sides):
            continue
        for side in sides:
            items = side.elts if isinstance(side, ast.Set | ast.Tuple | ast.List) else [side]
            if any(isinstance(i, ast.Constant) and type(i.value) is int for i in items):
                found.append(node.lineno)
    return found


def test_no_launchctl_code_is_compared_to_a_bare_number() -> None:
    """Everywhere in src/lanekit a launchctl code is compared by name
    (lanekit.service.launchd.codes)."""
    offenders = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        for line in _bare_code_comparisons(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_bare_number_finder_finds_them() -> None:
    """The finder sees `exc.code != 36` and `exc.code in {3, 113}` (so an empty list means
    something), and leaves a named comparison alone."""
    sample = "if exc.code != 36: pass\nif exc.code in {3, 113}: pass\nif exc.code in ABSENT: pass\n"
    assert _bare_code_comparisons(sample) == [1, 2]
