"""Typed values from the parsed TOML (strings, integers, durations, choices, paths), each
problem recorded with its key path."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lanekit.config.model import MAX_INT, MAX_NAME_LENGTH, PROCESS_TYPES, SESSION_TYPES
from lanekit.config.text import (
    Key,
    describe_value,
    did_you_mean,
    expand_home,
    key_path,
    one_line,
    plist_safe,
    quoted,
)
from lanekit.errors import ConfigError
from lanekit.schedule import (
    ScheduleError,
    parse_duration,
)
from lanekit.state.paths import Paths

_VAR_RE = re.compile(r"\$(\{[^}]*\}?|[A-Za-z_][A-Za-z0-9_]*)")
_ZERO_DURATION_RE = r"(?i)0+[smhd]?"
"""Compiled on first use (re caches it): only a duration written as text asks."""
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class ConfigReader:
    """Reads typed values out of the parsed TOML, collecting every error (with its key path)
    instead of stopping at the first; lanekit.config.reader builds the specs on top of it.
    lanekit.config.watch reads `[watch]` through it (its ValueReader protocol)."""

    def __init__(self, display: str, paths: Paths) -> None:
        self.display = display
        self.paths = paths
        self.home = paths.home
        self.failures: list[tuple[Key, ConfigError]] = []

    @property
    def errors(self) -> list[ConfigError]:
        return [error for _, error in self.failures]

    def fail(self, key: Key, message: str, hint: str) -> None:
        where = f"{self.display}: {key_path(key)}: " if key else f"{self.display}: "
        self.failures.append((key, ConfigError(one_line(where + message), one_line(hint))))

    def in_file_order(self, since: int, table: Mapping[str, Any], depth: int) -> None:
        """Sort the failures recorded since `since` by where their key sits in `table`."""
        order = {name: index for index, name in enumerate(table)}

        def position(failure: tuple[Key, ConfigError]) -> int:
            key = failure[0]
            return order.get(str(key[depth]), len(order)) if len(key) > depth else -1

        self.failures[since:] = sorted(self.failures[since:], key=position)

    def known_keys(
        self, table: Mapping[str, Any], key: Key, allowed: Sequence[str], what: str
    ) -> None:
        for name, value in table.items():
            if name not in allowed:
                kind = "table" if isinstance(value, dict) else "key"
                self.fail(
                    (*key, name),
                    f"unknown {kind}{did_you_mean(name, allowed)}",
                    f"{what}: {', '.join(allowed)}",
                )

    def table(self, parent: Mapping[str, Any], key: Key) -> dict[str, Any]:
        value = parent.get(str(key[-1]))
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(
                key, f"expected a table, got {describe_value(value)}", f"write [{key_path(key)}]"
            )
            return {}
        return value

    def valid_name(self, key: Key, name: str, what: str) -> bool:
        if _NAME_RE.fullmatch(name) and len(name) <= MAX_NAME_LENGTH:
            return True
        if len(name) > MAX_NAME_LENGTH:
            problem = f"is {len(name)} characters long (at most {MAX_NAME_LENGTH})"
        else:
            problem = "is not a safe name"
        self.fail(
            key,
            f"{what} name {quoted(name)} {problem}",
            f"{what} names become file names: use letters, digits, _ . - "
            "(starting with a letter or digit)",
        )
        return False

    def options(self, table: Mapping[str, Any], key: Key) -> dict[str, Any]:
        read: dict[str, Callable[[Key], object]] = {
            "max_jobs": lambda k: self.integer(table, k, 1, MAX_INT),
            "max_seconds": lambda k: self.duration(table, k, minimum=1),
            "max_attempts": lambda k: self.integer(table, k, 1, MAX_INT),
            "stale_after": lambda k: self.duration(table, k, minimum=1),
            "timeout": lambda k: self.duration(table, k, minimum=1),
            "kill_grace": lambda k: self.duration(table, k, minimum=0),
            "nice": lambda k: self.integer(table, k, -20, 20),
            "low_priority_io": lambda k: self.boolean(table, k),
            "process_type": lambda k: self.choice(table, k, PROCESS_TYPES),
            "session_type": lambda k: self.choices(table, k, SESSION_TYPES),
            "throttle_interval": lambda k: self.duration(table, k, minimum=0),
            "exit_timeout": lambda k: self.duration(table, k, minimum=0),
            "run_at_load": lambda k: self.boolean(table, k),
        }
        options: dict[str, Any] = {}
        for name in table:  # file order, so errors come out in the order they are written
            reader = read.get(name)
            if reader is not None and (value := reader((*key, name))) is not None:
                options[name] = value
        return options

    def string(self, table: Mapping[str, Any], key: Key) -> str | None:
        value = table.get(str(key[-1]))
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(key, f"expected a string, got {describe_value(value)}", "quote the value")
            return None
        problem = plist_safe(value)
        if problem is not None:
            self.fail(key, problem, "remove the character")
            return None
        return value

    def boolean(self, table: Mapping[str, Any], key: Key) -> bool | None:
        value = table.get(str(key[-1]))
        if value is None or isinstance(value, bool):
            return value
        self.fail(
            key,
            f"expected a boolean, got {describe_value(value)}",
            f"write {key[-1]} = true or {key[-1]} = false (no quotes)",
        )
        return None

    def integer(self, table: Mapping[str, Any], key: Key, low: int, high: int) -> int | None:
        value = table.get(str(key[-1]))
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            example = value if isinstance(value, str) and value.strip().isdigit() else max(low, 0)
            self.fail(
                key,
                f"expected an integer, got {describe_value(value)}",
                f"write a whole number without quotes, e.g. {key[-1]} = {example}",
            )
            return None
        return self.in_range(key, value, low, high)

    def in_range(self, key: Key, value: int, low: int, high: int) -> int | None:
        if low <= value <= high:
            return value
        if high == MAX_INT:
            self.fail(key, f"must be at least {low}, got {value}", f"use a value >= {low}")
        else:
            self.fail(key, f"{value} is out of range {low}..{high}", f"use {low}..{high}")
        return None

    def duration(self, table: Mapping[str, Any], key: Key, *, minimum: int) -> int | None:
        value = table.get(str(key[-1]))
        if value is None:
            return None
        hint = f'write seconds or a duration, e.g. {key[-1]} = "90s", "15m", "1h" or "2d"'
        if isinstance(value, bool) or not isinstance(value, int | str):
            self.fail(
                key,
                f"expected a duration (text or whole seconds), got {describe_value(value)}",
                hint,
            )
            return None
        if isinstance(value, int):
            return self.in_range(key, value, minimum, MAX_INT)
        if minimum == 0 and re.fullmatch(_ZERO_DURATION_RE, value.strip()):
            # parse_duration refuses zero, but ThrottleInterval 0 / ExitTimeOut 0 mean something.
            return 0
        try:
            seconds = parse_duration(value)
        except ScheduleError as exc:
            self.fail(key, exc.message, exc.hint or hint)
            return None
        return self.in_range(key, seconds, minimum, MAX_INT)

    def choice(self, table: Mapping[str, Any], key: Key, choices: Sequence[str]) -> str | None:
        value = self.string(table, key)
        if value is None or value in choices:
            return value
        self.fail(
            key,
            f"{quoted(value)} is not one of {', '.join(choices)}" + did_you_mean(value, choices),
            f"{key[-1]} allows: {', '.join(choices)}",
        )
        return None

    def choices(
        self, table: Mapping[str, Any], key: Key, choices: Sequence[str]
    ) -> tuple[str, ...] | None:
        """One choice or a non-empty array of distinct choices, as a tuple."""
        value = table.get(str(key[-1]))
        if value is None:
            return None
        items = [value] if isinstance(value, str) else value
        first, second = choices[0], choices[1]
        hint = f'write {key[-1]} = "{first}", or an array such as ["{first}", "{second}"]'
        problem = None
        if not isinstance(items, list):
            problem = f"expected a string or an array of strings, got {describe_value(value)}"
        elif not items:
            problem = "needs at least one value"
        elif len(set(map(str, items))) != len(items):
            problem = "lists a value twice"
        if problem is not None:
            self.fail(key, problem, hint)
            return None
        picked: list[str] = []
        for item in items:
            chosen = self.choice({str(key[-1]): item}, key, choices)
            if chosen is None:
                return None
            picked.append(chosen)
        return tuple(picked)

    def path(self, table: Mapping[str, Any], key: Key) -> Path | None:
        text = self.string(table, key)
        if text is None:
            return None
        checked = self.absolute(key, text)
        return None if checked is None else Path(checked)

    def absolute(self, key: Key, text: str) -> str | None:
        expanded = expand_home(text, self.home)
        hint = "write the absolute path (launchd expands neither ~ nor $VARIABLES)"
        if expanded.startswith("~"):
            user = expanded.split("/", 1)[0]
            self.fail(key, f"{quoted(text)}: {user} is not expanded, only ~ and ~/...", hint)
            return None
        variable = _VAR_RE.search(expanded)
        if variable is not None:
            self.fail(
                key,
                f"{quoted(text)} uses {variable[0]}; only a leading ~ or $HOME is expanded",
                hint,
            )
            return None
        if not expanded.startswith("/"):
            self.fail(
                key,
                f"{quoted(text)} is relative; launchd runs jobs from / "
                "— use an absolute path or ~/...",
                f'write "~/{text}" or "/full/path/{text}"'
                if text and text not in (".", "..")
                else "write an absolute path",
            )
            return None
        return expanded

    def dir_list(self, table: Mapping[str, Any], key: Key) -> tuple[str, ...] | None:
        value = table.get(str(key[-1]))
        if value is None:
            return None
        hint = 'write path = ["/opt/homebrew/bin", "/usr/bin", "/bin"]'
        if not isinstance(value, list):
            self.fail(key, f"expected an array of directories, got {describe_value(value)}", hint)
            return None
        if not value:
            self.fail(key, "is empty; the job would find no commands", hint)
            return None
        dirs: list[str] = []
        for index, item in enumerate(value):
            item_key = (*key, index)
            if not isinstance(item, str):
                self.fail(item_key, f"expected a string, got {describe_value(item)}", hint)
                continue
            if (problem := plist_safe(item)) is not None:
                self.fail(item_key, problem, "remove the character")
                continue
            checked = self.absolute(item_key, item)
            if checked is None:
                continue
            if ":" in checked:
                self.fail(
                    item_key,
                    f"{quoted(item)} contains ':', the PATH separator",
                    "rename the directory or link it from a path without ':'",
                )
                continue
            dirs.append(checked)
        return tuple(dirs) if len(dirs) == len(value) else None
