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
