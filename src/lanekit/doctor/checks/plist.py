"""Checks on the plist file itself: does it parse, is it named and owned the way launchd wants,
and is it what `lanekit apply` would write today."""

from __future__ import annotations

import pwd
from collections.abc import Iterator

from lanekit.doctor import DoctorContext, Problem, Severity, Target, check, lane_interpreter
from lanekit.errors import LanekitError
from lanekit.system.quoting import cmdline


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
        fix = f"run `{cmdline('lanekit', 'apply', target.lane.name)}` to write it again"
    else:
        fix = f"fix {path} (on macOS `{cmdline('plutil', '-lint', path)}` names the broken line)"
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
    if "/" in label or label in {".", ".."}:
        # No file can be named after such a label, and `launchctl print gui/<uid>/<label>`
        # cannot address it unambiguously: the Label itself is what needs to change.
        yield Problem(
            Severity.WARNING,
            f"{path.name} holds Label {label}, which cannot be a file name (it contains a / or "
            "is . or ..): tools that find a job by its file name, or address it as "
            "<domain>/<label>, miss it.",
            f"change the Label in {path} to a reverse-DNS name without / (e.g. "
            f"{_label_suggestion(label)}), then rename the file to match",
        )
        return
    yield Problem(
        Severity.WARNING,
        f"{path.name} holds Label {label}: tools that find a job by its file name miss it.",
        cmdline("mv", path, path.with_name(label + ".plist")),
    )


def _label_suggestion(label: str) -> str:
    """`com.example.x` from `com/example/x`: the label with each `/` made a `.`."""
    parts = [part for part in label.split("/") if part not in {"", ".", ".."}]
    return ".".join(parts) or "com.example.job"


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
            cmdline("chmod", "644", path),
        )
    if st.st_uid not in {ctx.uid, 0}:
        owner = _user_name(st.st_uid)
        me = _user_name(ctx.uid)
        yield Problem(
            Severity.ERROR,
            f"{path} is owned by {owner}, not by {me}, so launchd refuses to load it "
            "(bad ownership/permissions).",
            cmdline("chown", me, path),
        )


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


@check(
    "plist.drift",
    summary="the installed plist, the run snapshot or the job launchd has loaded differs from "
    "what `lanekit apply` would install",
    needs_lane=True,
    uses_launchd=True,
    alert=True,
)
def drift(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """lanes.toml changed (or someone edited or replaced the plist) and `apply` has not run
    since. The answer is `plan`'s own comparison (lanekit.service.launchd.drift.lane_drift, on
    the files as apply reads them: lanekit.service.installs), so doctor and plan cannot
    disagree: a file that differs in formatting only is no warning, a loaded job older than
    its file is."""
    from lanekit.service.installs import desired_lane, installed_lane
    from lanekit.service.launchd.drift import lane_drift

    lane, path = target.lane, target.plist_path
    if lane is None or path is None or not target.installed or target.plist is None:
        return
    want = desired_lane(
        lane,
        ctx.paths,
        interpreter=lane_interpreter(target.plist, lane),
        templates=ctx.config.templates if ctx.config is not None else None,
        manager=ctx.manager,
    )
    try:
        have = installed_lane(ctx.paths, lane.label, target.plist)
    except (OSError, LanekitError):
        return  # unreadable or not ours: plist.permissions and the state checks say so
    loaded = ctx.seen(lane.label).definition if ctx.launchd_available else None
    found = lane_drift(
        want_plist=want.plist,
        wanted=want.job,
        want_snapshot=want.snapshot,
        have_plist=have.plist if have else None,
        have_snapshot=have.snapshot if have else None,
        loaded=loaded,
    )
    changed: list[str] = []
    if found.plist_meaning:
        changed.append(f"plist ({found.plist_change})")
    if found.snapshot:
        changed.append(f"run snapshot ({found.snapshot_change})")
    if changed:
        yield Problem(
            Severity.WARNING,
            f"the installed {' and '.join(changed)} differ from lanes.toml: launchd still runs "
            "the old lane.",
            cmdline("lanekit", "apply", lane.name),
        )
    if found.plist_bytes and not found.plist_meaning:
        yield Problem(
            Severity.INFO,
            f"{path} differs from what `lanekit apply` writes in formatting only (same keys and "
            "values): apply rewrites it without a reload.",
            cmdline("lanekit", "apply", lane.name),
        )
    if found.loaded:
        yield Problem(
            Severity.WARNING,
            f"{found.loaded_change}: the plist file was replaced without a reload, so launchd "
            "still runs the job it loaded before.",
            f"{cmdline('lanekit', 'apply', lane.name)}  (reloads it)",
        )
