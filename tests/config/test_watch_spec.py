"""`[watch]` in lanes.toml: the spec it loads to, the watchdog lane it adds, and one clear
error line per bad key (never a webhook's secret parts)."""

from __future__ import annotations

from datetime import time
from pathlib import Path

import pytest

from lanekit.config import Config, load_config, validate_config
from lanekit.config.watch import (
    DEFAULT_EVERY,
    WATCH_COMMAND,
    WatchSpec,
    default_notify,
    redact_url,
    watch_dir,
)
from lanekit.errors import ConfigError
from lanekit.state.paths import Paths

BASE = """\
[defaults]
label_prefix = "com.example"

[queues.notes]
dir = "~/notes"

[lanes.funnel]
queue = "notes"
command = ["/bin/cat", "{job}"]
"""


def _load(tmp_path: Path, text: str) -> tuple[Paths, Config]:
    paths = Paths.under(tmp_path)
    path = tmp_path / "lanes.toml"
    path.write_text(text, encoding="utf-8")
    return paths, load_config(path, paths)


def _errors(tmp_path: Path, text: str) -> list[str]:
    paths = Paths.under(tmp_path)
    path = tmp_path / "lanes.toml"
    path.write_text(text, encoding="utf-8")
    _, errors = validate_config(path, paths)
    return [f"{e.message} | {e.hint}" for e in errors]


def test_no_watch_table_no_watchdog(tmp_path: Path) -> None:
    """Without [watch] there is no watchdog lane and no spec."""
    _, config = _load(tmp_path, BASE)
    assert config.watch is None
    assert list(config.lanes) == ["funnel"]


def test_every_key_is_read(tmp_path: Path) -> None:
    """Each key of [watch] lands in the spec, durations in seconds, digest as a time."""
    text = BASE + (
        '[watch]\nevery = "2m"\nmissed_after = "20m"\nstale_claim_after = "30m"\n'
        'repeat = "0"\ndigest = "08:05"\nnotify = ["macos"]\n'
        'command = ["~/bin/notify", "--flag"]\nwebhook = "https://ntfy.example/topic"\n'
    )
    paths, config = _load(tmp_path, text)
    assert config.watch == WatchSpec(
        every=120,
        missed_after=1200,
        stale_claim_after=1800,
        repeat=0,
        digest=time(8, 5),
        notify=("macos",),
        command=(str(paths.home / "bin" / "notify"), "--flag"),
        webhook="https://ntfy.example/topic",
    )
    assert config.watch is not None
    assert config.watch.channels == ("macos", "command", "webhook")


def test_defaults_and_the_watchdog_lane(tmp_path: Path) -> None:
    """An empty [watch] gives the defaults and a lane `watch` labelled <prefix>.watch that runs
    `lanekit watch --config <lanes.toml>` every 5 minutes, its files under the state dir."""
    paths, config = _load(tmp_path, BASE + "[watch]\n")
    watch = config.watch
    assert watch is not None
    assert watch.every == DEFAULT_EVERY == 300
    assert watch.notify == default_notify(__import__("sys").platform)
    lane = config.lanes["watch"]
    assert lane.label == "com.example.watch"
    assert lane.schedule.interval == 300
    assert lane.command == WATCH_COMMAND
    assert lane.entrypoint == ("watch", "--config", str((tmp_path / "lanes.toml").resolve()))
    assert lane.queue.dir == watch_dir(paths.state, "com.example.watch")
    assert lane.log_path.parent == lane.queue.dir / "logs"
    assert lane.env["LANEKIT_STATE_DIR"] == str(paths.state)


def test_default_notify_is_macos_on_a_mac_only() -> None:
    """Notification Center is the default channel on macOS, none elsewhere."""
    assert default_notify("darwin") == ("macos",)
    assert default_notify("linux") == ()


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ('every = "soon"', 'lanes.toml: watch.every: duration "soon" is not valid'),
        ("every = 0", "lanes.toml: watch.every: must be at least 1, got 0"),
        ('missed_after = "-1m"', "lanes.toml: watch.missed_after:"),
        ('repeat = "x"', "lanes.toml: watch.repeat:"),
        ('digest = "25:00"', 'lanes.toml: watch.digest: "25:00" is not a time of day'),
        ("digest = 8", "lanes.toml: watch.digest: expected a string"),
        ('notify = ["sms"]', 'lanes.toml: watch.notify: unknown channel "sms"'),
        ('notify = "macos"', "lanes.toml: watch.notify: expected an array of channel names"),
        ("command = []", "lanes.toml: watch.command: is empty"),
        ('webhook = "ftp://host/x"', "lanes.toml: watch.webhook: ftp://host/… is not an"),
        ('everyy = "5m"', 'lanes.toml: watch.everyy: unknown key; did you mean "every"?'),
    ],
)
def test_each_bad_key_is_one_line(tmp_path: Path, lines: str, expected: str) -> None:
    """A bad value is exactly one error naming the file and the key, with a hint."""
    errors = _errors(tmp_path, BASE + f"[watch]\n{lines}\n")
    assert len(errors) == 1, errors
    assert errors[0].startswith(expected), errors
    assert " | " in errors[0] and not errors[0].endswith(" | ")


def test_a_bad_webhook_never_shows_its_secret(tmp_path: Path) -> None:
    """The error for a webhook URL names scheme and host only: no user, password, token."""
    text = BASE + '[watch]\nwebhook = "gopher://alice:hunter2@hooks.example/T0/B1/s3cret?k=v"\n'
    [error] = _errors(tmp_path, text)
    assert "gopher://hooks.example/…" in error
    for secret in ("alice", "hunter2", "s3cret", "k=v", "T0"):
        assert secret not in error


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://u:p@ntfy.sh/mytopic?auth=x", "https://ntfy.sh/…"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("https://hooks.slack.com/services/T/B/SECRET", "https://hooks.slack.com/…"),
        ("no-scheme", "(a URL without a scheme)"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    """Only scheme, host and port survive redaction."""
    assert redact_url(url) == shown


@pytest.mark.parametrize("section", ["lanes", "queues"])
def test_the_watch_names_are_taken(tmp_path: Path, section: str) -> None:
    """With [watch], a lane or a queue named `watch` is refused, naming the fix."""
    extra = (
        '[lanes.watch]\nqueue = "notes"\ncommand = ["/bin/cat"]\n'
        if section == "lanes"
        else '[queues.watch]\ndir = "~/w"\n'
    )
    errors = _errors(tmp_path, BASE + extra + "[watch]\n")
    taken = f"lanes.toml: {section}.watch: the name watch is the watchdog's"
    assert any(e.startswith(taken) for e in errors), errors


def test_a_lane_named_watch_is_fine_without_the_table(tmp_path: Path) -> None:
    """Without [watch], `watch` is an ordinary lane name."""
    _, config = _load(tmp_path, BASE + '[lanes.watch]\nqueue = "notes"\ncommand = ["/bin/cat"]\n')
    assert config.lanes["watch"].entrypoint is None


def test_load_config_raises_the_first_error(tmp_path: Path) -> None:
    """load_config refuses a bad [watch] like any other bad key (exit 2, one line)."""
    with pytest.raises(ConfigError, match=r"watch\.every"):
        _load(tmp_path, BASE + '[watch]\nevery = "never"\n')
