"""The page: self-contained (no URL in any src or href, no script), escaped (hostile text stays
text), and rendered by a real browser: Debian's chromium headless, asserting on its DOM."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from lanekit.timeline.build import TimelineResult
from lanekit.timeline.html import page, page_name, run_title, save
from lanekit.timeline.model import LaneInfo, build_timeline
from timeline_world import NY, at, day_window, events, incident_result, line, run_lines

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


class _Collect(HTMLParser):
    """Every tag, and every attribute that could load something."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in {"src", "href", "xlink:href", "srcset", "action", "poster", "data"}:
                self.links.append(value or "")


def test_page_is_self_contained() -> None:
    """No script, no external stylesheet, image or font: no src/href at all, and no
    `http:`/`https:` anywhere in the page (the CSS has no url() either)."""
    text = page(incident_result(), NY)
    found = _Collect()
    found.feed(text)
    assert "script" not in found.tags
    assert "link" not in found.tags
    assert found.links == []
    assert not re.search(r"https?:", text)
    assert "url(" not in text
    assert "@import" not in text and "@font-face" not in text
    assert "prefers-color-scheme: dark" in text


def test_hostile_text_is_escaped() -> None:
    """An error text with markup, quotes and ampersands appears as text, never as markup."""
    nasty = "</title><script>alert(\"x\")</script> & <b onmouseover='y'>"
    lines = run_lines("a", at("10:40"), ["j1"], fail=["j1"], exit_code=1)
    lines.insert(-1, line(at("10:40:01"), "a", "failed", job="j1", exit=3, error=nasty))
    timeline = build_timeline(events(lines), [LaneInfo("a", "q")], day_window(), read_to_now=True)
    text = page(TimelineResult(timeline, day_window().start.astimezone(NY).date()), NY)
    assert "<script" not in text
    assert "<b onmouseover" not in text
    assert "&lt;/title&gt;&lt;script&gt;" in text
    assert "&amp;" in text
    assert nasty in run_title(timeline.rows[0].runs[0], NY)


def test_save_names_a_directory_page_by_day(tmp_path: Path) -> None:
    """A directory gets timeline-YYYY-MM-DD.html (a digest can link a day's page by name)."""
    written = save(incident_result(), tmp_path, NY)
    assert written == tmp_path / page_name(incident_result().day)  # type: ignore[arg-type]
    assert written.name == "timeline-2026-11-30.html"


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The incident page as chromium headless sees it: (its DOM, its screenshot)."""
    browser = _chromium()
    if browser is None:
        pytest.skip(
            "chromium is not installed (.ci/run installs it as root: apt-get install chromium)"
        )
    root = tmp_path_factory.mktemp("chromium")
    page_file = save(incident_result(), root / "day.html", NY)
    profile = root / "profile"
    argv = [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
    env = {**os.environ, "HOME": str(root)}
    url = page_file.as_uri()
    dom = subprocess.run(
        [*argv, "--dump-dom", url], capture_output=True, text=True, timeout=60, env=env, check=True
    ).stdout
    shot = root / "day.png"
    subprocess.run(
        [*argv, "--window-size=1280,1300", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=60,
        env=env,
        check=True,
    )
    return dom, shot


def test_chromium_renders_the_lanes_the_burst_and_the_missed_run(
    rendered: tuple[str, Path],
) -> None:
    """In the DOM chromium built: one row per lane, the burst box over queue notes with its
    caption, digest's missed 16:40, funnel's skipped reload and publish's failed run; and a
    screenshot was taken (a PNG, not blank-sized)."""
    dom, shot = rendered
    for lane in ("funnel", "thumbs", "social", "portraits", "digest", "publish"):
        assert f'id="lane-{lane}"' in dom
    assert re.search(r'<g class="burst" id="burst-1" data-queue="notes">', dom)
    assert "burst · 5 lanes · 17 claims" in dom
    assert re.search(r'class="marker missed" data-lane="digest"', dom)
    assert re.search(r'class="marker reload-skipped" data-lane="funnel"', dom)
    assert re.search(r'class="run error"[^>]*data-lane="publish"', dom)
    assert "digest: missed run at 16:40:00" in dom
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000


def test_each_marker_has_its_own_shape_and_a_legend_entry() -> None:
    """An install is drawn as a triangle, not in the diamond of a skipped reload, and the
    legend names every marker a chart may draw (installed included)."""
    lines = [
        line(at("06:00"), "a", "applied", action="create", by="apply"),
        line(at("09:00"), "a", "skipped", reason="running", pid=7, by="apply"),
    ]
    timeline = build_timeline(events(lines), [LaneInfo("a", "q")], day_window(), read_to_now=True)
    text = page(TimelineResult(timeline, day_window().start.astimezone(NY).date()), NY)

    def shapes(kind: str) -> set[str]:
        """The outlines (after the starting point) of the markers of `kind` in the page."""
        pattern = rf'<path d="M[\d.]+ [\d.]+ ([^"]+)" class="marker {kind}"'
        return set(re.findall(pattern, text))

    installed, skipped = shapes("installed"), shapes("reload-skipped")
    assert installed and skipped
    assert installed.isdisjoint(skipped)
    legend = text.split('<ul class="legend">', 1)[1].split("</ul>", 1)[0]
    for words in ("installed by apply", "reload skipped", "missed run", "reloaded by apply"):
        assert words in legend


def test_the_watchdogs_exit_1_is_an_undelivered_alert_not_a_failed_run() -> None:
    """The watchdog lane runs no jobs: its pass's exit 1 (a channel refused) is drawn and
    counted as an alert not delivered, never among the "runs that failed"."""
    lines = run_lines("watch", at("10:40"), [], exit_code=1)
    timeline = build_timeline(
        events(lines), [LaneInfo("watch", "watch")], day_window(), read_to_now=True
    )
    assert [run.outcome for run in timeline.rows[0].runs] == ["undelivered"]
    text = page(TimelineResult(timeline, day_window().start.astimezone(NY).date()), NY)
    assert "run that failed" not in text.replace("0 runs that failed", "")
    assert 'class="run undelivered"' in text


def test_a_day_of_many_bursts_keeps_its_page_small_and_its_captions_apart() -> None:
    """39 bursts three minutes apart (six lanes of one queue): at most MAX_CLOSE_UPS close-ups,
    each of the burst's lanes only, a line saying where the others are, and no two captions
    of the day's chart drawn over each other."""
    from datetime import timedelta

    from lanekit.timeline.html import CAPTION_CHAR, MAX_CLOSE_UPS

    lanes = [f"l{i}" for i in range(6)]
    lines = []
    for n in range(39):
        start = at("08:00") + timedelta(minutes=3 * n)
        for lane in lanes:
            lines += run_lines(lane, start, [f"j{n}{lane}"])
    lines.sort(key=lambda text: text.split(" ")[0])
    infos = [LaneInfo(lane, "q") for lane in lanes]
    timeline = build_timeline(events(lines), infos, day_window(), read_to_now=True)
    assert len(timeline.bursts) == 39
    text = page(TimelineResult(timeline, day_window().start.astimezone(NY).date()), NY)
    assert text.count('class="close-up"') == MAX_CLOSE_UPS
    assert f"the other {39 - MAX_CLOSE_UPS} are on the chart above" in text
    assert len(text) < 250_000
    day_chart = text.split('class="close-up"', 1)[0]
    spans = []
    for x, y, anchor, caption in re.findall(
        r'<text x="([\d.]+)" y="([\d.]+)" text-anchor="(\w+)">(burst[^<]*|#\d+)</text>', day_chart
    ):
        width = CAPTION_CHAR * len(caption)
        left = float(x) - width if anchor == "end" else float(x)
        spans.append((float(y), left, left + width))
    assert spans
    for i, (y, left, right) in enumerate(spans):
        for other_y, other_left, other_right in spans[i + 1 :]:
            assert not (y == other_y and left < other_right and other_left < right)
