"""`lanekit validate`: lanes.toml read, every lane rendered, and what `apply` would refuse.

Every check `apply` makes before it installs a lane is made here too (lanekit.reconcile.preflight),
so a
lane that validates is not refused by apply for anything lanes.toml says. Errors are collected,
not raised: one run reports every problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lanekit.config import Config, config_warnings, display_path, read_config
from lanekit.errors import ConfigError
from lanekit.reconcile.preflight import cannot_start, preflight
from lanekit.service.launchd.plist import render_lane
from lanekit.state.paths import Paths


@dataclass(frozen=True, slots=True)
class ConfigCheck:
    """`lanekit validate`: every error (config, schedules, templates) and every warning."""

    display: str
    """The config file as messages name it."""
    config: Config | None
    """The loaded config; None when there is any error."""
    errors: tuple[ConfigError, ...]
    warnings: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when nothing is wrong (warnings allowed)."""
        return not self.errors


def check_config(
    config_path: Path, paths: Paths, *, interpreter: str, templates: Path | None = None
) -> ConfigCheck:
    """Validate lanes.toml and render every valid lane, collecting all errors and warnings.

    Every check `apply` makes before it installs a lane is made here too
    (lanekit.reconcile.preflight):
    a lane that validates is not refused by apply for anything lanes.toml says."""
    display = display_path(config_path, paths.cwd)
    config, config_errors = read_config(config_path, paths)
    errors = list(config_errors)
    warnings: list[str] = []
    if config is not None:
        seen = {error.message for error in errors}
        units = _systemd_chosen(config)
        for lane in config.lanes.values():
            try:
                rendered = render_lane(
                    lane,
                    interpreter=interpreter,
                    snapshot=paths.snapshot_for(lane.label),
                    templates=templates or config.templates,
                )
                if units:
                    # What the systemd backend refuses (launchd-only keys, its templates).
                    from lanekit.service.systemd.units import rendered_units

                    rendered_units(
                        lane,
                        interpreter=interpreter,
                        snapshot=paths.snapshot_for(lane.label),
                        templates=templates or config.templates,
                    )
            except ConfigError as exc:
                # A broken template fails every lane the same way: report it once.
                same = exc.message.removeprefix(f"lane {lane.name}: ")
                if same not in seen:
                    seen.add(same)
                    errors.append(exc)
                continue
            # What `apply` refuses (without --force), validate reports: the same check.
            errors.extend(
                ConfigError(f"{display}: lanes.{lane.name}.command: {problem.message}", problem.fix)
                for problem in cannot_start(lane, rendered, paths)
            )
        checked = [preflight(lane) for lane in config.lanes.values()]
        for lane, found in zip(config.lanes.values(), checked, strict=True):
            for refusal in found.refusals:
                # The refusals are the queue's: one error per queue, however many lanes.
                message = f"{display}: queues.{lane.queue.name}.dir: {refusal.message}"
                if message not in seen:
                    seen.add(message)
                    errors.append(ConfigError(message, refusal.hint))
        if not errors:
            warnings = config_warnings(config) + [w for c in checked for w in c.warnings]
    return ConfigCheck(
        display=display,
        config=None if errors else config,
        errors=tuple(errors),
        warnings=tuple(warnings),
    )


def _systemd_chosen(config: Config) -> bool:
    """Whether systemd runs this config's lanes (lanekit.state.backend.manager_choice)."""
    import os
    import sys

    from lanekit.state.backend import manager_choice

    return manager_choice(os.environ, sys.platform, config.service_manager)[0] == "systemd"
