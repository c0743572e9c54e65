"""The lean pass's readers of launchctl output (lanekit.watch.launchdrows) give what the adapter's
parsers (lanekit.service.launchd.parse) give, on every real capture and on generated variations: the
lean pass fingerprints launchd with them, the full pass's checks read the adapter's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanekit.service.launchd.launchctl import parse_domain_services, parse_print_disabled
from lanekit.watch.launchdrows import disabled_services, service_rows
from places import SAMPLES

CAPTURES = sorted(path for path in SAMPLES.rglob("*.txt") if path.is_file())


def adapter_rows(text: str) -> list[tuple[int | None, int | None, str]]:
    """The adapter's reading of the same text, as tuples."""
    return [(entry.pid, entry.last_exit, entry.label) for entry in parse_domain_services(text)]


def test_every_capture_is_read_as_the_adapter_reads_it() -> None:
    """Each capture (whole file and its body after `# ---`): the same services rows and the
    same disabled entries, whatever command it was taken from."""
    assert len(CAPTURES) > 40
    for path in CAPTURES:
        whole = path.read_text(encoding="utf-8")
        for text in (whole, whole.partition("# ---\n")[2]):
            assert service_rows(text) == adapter_rows(text), path.name
            assert disabled_services(text) == parse_print_disabled(text), path.name


def test_the_captures_have_rows_and_disabled_entries_to_compare() -> None:
    """The comparison above is not vacuous: the domain and print-disabled captures give rows
    and entries (running and not, disabled and enabled)."""
    domain = (SAMPLES / "print-domain-01.txt").read_text(encoding="utf-8")
    assert service_rows(domain) == [
        (887, None, "net.jwpconsulting.postgresql"),
        (866, None, "com.apple.syncdefaultsd"),
    ]
    assert disabled_services(domain) == {"com.apple.rcd": True}
    disabled = disabled_services((SAMPLES / "print-disabled-01.txt").read_text("utf-8"))
    assert disabled["com.apple.Siri.agent"] is True
    assert disabled["com.docker.helper"] is False
    assert "version.com.docker.helper" not in disabled


ROW_VARIANTS = [
    "\t\t     887      - \tnet.example.a",
    "\t0\t0\tcom.lane.b",
    "0 1 com.lane.c",
    "123 -9 com.lane.with space",
    "0 - (pe) com.lane.flagged",
    "0 (pe) com.lane.flag-status",
    "0\t(pe)\tcom.lane.tabbed",
    "- 78 com.lane.dash-pid",
    "12 +3 com.lane.plus",
    "x 0 com.lane.bad-pid",
    "0 0",
    "0 -- com.lane.bad-status",
    "0 ( com.lane.open-flag",
    "0 - (a b) com.lane.spaced-flag",
    "0 - (a(b) com.lane.nested-flag",
    "0 - () com.lane.empty-flag",
    "0 - (pe)com.lane.glued-flag",
    "0 - (pe)",
    "0 0 com.lane.eq = value",
    "0 0 com.lane.arrow => x",
    "0 0 com.lane.opens = {",
    "0 0 com.lane.open-arrow => {",
    "0 0 com.lane.brace{",
    "\u0661\u0662 0 com.lane.arabic-digits",
    "0\t0\tcom.lane.tab\tin label",
]


def _domain(rows: list[str], disabled: list[str]) -> str:
    return "\n".join(
        [
            "gui/501 = {",
            "\ttype = login",
            "\tservices = {",
            *rows,
            "\t}",
            "\tdisabled services = {",
            *disabled,
            "\t}",
            "}",
        ]
    )


@pytest.mark.parametrize("row", ROW_VARIANTS)
def test_each_row_form_is_read_as_the_adapter_reads_it(row: str) -> None:
    """Tabs or spaces, flag columns, odd pids and statuses, labels with spaces or an operator
    in them: one row inside a domain printout, read the same way."""
    text = _domain([row], [])
    assert service_rows(text) == adapter_rows(text)


DISABLED_VARIANTS = [
    '\t"com.lane.a" => true',
    '\t"com.lane.b" => false',
    '\t"com.lane.c" => disabled',
    '\t"com.lane.d" => enabled',
    '\t"com.lane.e" => "disabled"',
    "\tcom.lane.f => TRUE",
    '\t"com.lane.g" =>true',
    '\t"com.lane.h" = true',
    '\t"com.lane.i" => maybe',
    '\t"com.lane.j" =>',
    '\t"com.lane.k with space" => true',
    '\t"com.lane.l" => true => false',
    "\t=> true",
]


@pytest.mark.parametrize("line", DISABLED_VARIANTS)
def test_each_disabled_form_is_read_as_the_adapter_reads_it(line: str) -> None:
    """Old and new words, quotes or none, odd spacing and operators: read the same way."""
    text = _domain([], [line])
    assert disabled_services(text) == parse_print_disabled(text)


_PIECES = st.sampled_from(
    [
        *ROW_VARIANTS,
        *DISABLED_VARIANTS,
        "services = {",
        "disabled services = {",
        "\tendpoints = {",
        "SERVICES => {",
        "{",
        "}",
        "};",
        "",
        "# a comment",
        "\ufeffgui/501 = {",
        "key = value",
        "\r",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=20), st.sampled_from(["\n", "\r\n", "\r"]))
def test_any_arrangement_of_blocks_and_lines_is_read_alike(pieces: list[str], end: str) -> None:
    """Blocks nested, unclosed, repeated or missing, stray braces, comments, a BOM and any
    line ending: both readers find the same rows and disabled entries."""
    text = end.join(pieces)
    assert service_rows(text) == adapter_rows(text)
    assert disabled_services(text) == parse_print_disabled(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('0123-+()=>{}\t \n"ab.;\u00a0\u2028')), max_size=60))
def test_any_text_is_read_alike(text: str) -> None:
    """Arbitrary text over the characters the rules turn on: the same answers."""
    assert service_rows(text) == adapter_rows(text)
    assert disabled_services(text) == parse_print_disabled(text)
