"""Checks on the plist file itself: does it parse, is it named and owned the way launchd wants,
and is it what `lanekit apply` would write today."""

from __future__ import annotations

import plistlib
import pwd
from collections.abc import Iterator, Mapping
from typing import Any

from lanekit.doctor import DoctorContext, Problem, Severity, Target, check, lane_interpreter


@check(
    "plist.invalid",
    summary="the plist does not parse or is not a launchd job (launchd refuses to load it)",
    needs_plist=False,
)
def invalid(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A file launchd rejects with `Invalid property list` or never finds a program in."""
    if target.plist is not None or target.plist_path is None or target.plist_error is None:
        return
    path = target.plist_path
    if target.lane is not None:
        fix = f"run `lanekit apply {target.lane.name}` to write it again"
    else:
        fix = f"fix {path} (on macOS `plutil -lint {path}` names the broken line)"
    yield Problem(
        Severity.ERROR, f"{path} {target.plist_error}, so launchd refuses to load it.", fix
    )


@check(
    "plist.label-mismatch",
    summary="the file name is not <Label>.plist (tools that look jobs up by name miss it)",
)
def label_mismatch(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """launchd loads the file anyway, but every tool that finds a job by its file name does not."""
    path, label = target.plist_path, target.label
    if not target.installed or path is None or label is None or path.stem == label:
        return
    yield Problem(
        Severity.WARNING,
        f"{path.name} holds Label {label}: tools that find a job by its file name miss it.",
        f"mv {path} {path.with_name(label + '.plist')}",
    )


@check(
    "plist.permissions",
    summary="the plist is group/world-writable or owned by someone else (launchd refuses it)",
)
def permissions(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """launchd refuses `Path had bad ownership/permissions` (seen with umask 000: 0666 files)."""
    path = target.plist_path
    if not target.installed or path is None:
        return
    try:
        st = path.stat()
    except OSError:
        return
    mode = st.st_mode & 0o7777
    if mode & 0o022:
        yield Problem(
            Severity.ERROR,
            f"{path} has mode {mode:04o} (group or world writable), so launchd refuses to load "
            "it (bad ownership/permissions).",
            f"chmod 644 {path}",
        )
    if st.st_uid not in {ctx.uid, 0}:
        owner = _user_name(st.st_uid)
        me = _user_name(ctx.uid)
        yield Problem(
            Severity.ERROR,
            f"{path} is owned by {owner}, not by {me}, so launchd refuses to load it "
            "(bad ownership/permissions).",
            f"chown {me} {path}",
        )


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


@check(
    "plist.drift",
    summary="the installed plist or run snapshot differs from what `lanekit apply` would write",
    needs_lane=True,
)
def drift(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """lanes.toml changed (or someone edited the plist) and `apply` has not run since."""
    from lanekit.config import run_spec
    from lanekit.plist import render_lane

    lane, path = target.lane, target.plist_path
    if lane is None or path is None or not target.installed or target.plist is None:
        return
    snapshot_path = ctx.paths.snapshot_for(lane.label)
    templates = ctx.config.templates if ctx.config is not None else None
    want = render_lane(
        lane,
        interpreter=lane_interpreter(target.plist),
        snapshot=snapshot_path,
        templates=templates,
    )
    changed: list[str] = []
    if path.read_bytes() != want:
        keys = _changed_keys(target.plist, plistlib.loads(want))
        changed.append("plist (" + (", ".join(keys) if keys else "formatting") + ")")
    try:
        have_snapshot: str | None = snapshot_path.read_text(encoding="utf-8")
    except OSError:
        have_snapshot = None
    if have_snapshot != run_spec(lane).to_json():
        changed.append("run snapshot" if have_snapshot is not None else "run snapshot (missing)")
    if changed:
        yield Problem(
            Severity.WARNING,
            f"the installed {' and '.join(changed)} differ from lanes.toml: launchd still runs "
            "the old lane.",
            f"lanekit apply {lane.name}",
        )


def _changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    keys = set(before) | set(after)
    return sorted(k for k in keys if before.get(k) != after.get(k))
