"""Checks on what launchd (real or emulated) says about the job: loaded, disabled, and how its
last run ended. Exit statuses are decoded into what happened and which finding explains it."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Sequence

from lanekit.doctor import DoctorContext, Finding, Problem, Severity, Target, check
from lanekit.service.exits import signal_label
from lanekit.state.paths import is_paused
from lanekit.system.quoting import cmdline

CRASH_LOOP_RUNS = 5
"""At least this many runs since load, all failing, before a loop is called a loop."""

LOOP_STATES = frozenset({"spawn scheduled"})
"""The launchd state of a job waiting out its ThrottleInterval before the next respawn."""

EXIT_78_CAUSES = (
    "logs.dir-missing",
    "logs.unwritable",
    "workdir.missing",
    "program.missing",
    "program.not-executable",
    "program.bad-interpreter",
    "path.command-missing",
)
EXIT_126_CAUSES = ("program.not-executable", "program.bad-interpreter")
EXIT_127_CAUSES = ("path.command-missing", "program.bad-interpreter", "program.missing")


def _label(target: Target) -> str:
    label = target.label
    assert label is not None  # the runner only passes targets with a label to launchd checks
    return label


def _loaded(target: Target, ctx: DoctorContext) -> bool:
    return target.label is not None and ctx.seen(target.label).loaded


def _causes(target: Target, ctx: DoctorContext, ids: Sequence[str]) -> list[Finding]:
    found: list[Finding] = []
    for check_id in ids:
        found.extend(ctx.findings(check_id, target))
    return found


def _explained(
    target: Target, ctx: DoctorContext, what: str, ids: Sequence[str], fallback: str
) -> Problem:
    causes = _causes(target, ctx, ids)
    if causes:
        first = causes[0]
        cause = f"; likely cause: {first.id} ({first.message.rstrip('.')})"
        return Problem(Severity.ERROR, f"{what}{cause}.", first.fix)
    return Problem(Severity.ERROR, f"{what}.", fallback)


def _stderr_hint(target: Target) -> str:
    if target.lane is not None:
        return cmdline("lanekit", "logs", target.lane.name, "--err")
    err = target.plist.get("StandardErrorPath") if target.plist is not None else None
    if isinstance(err, str):
        return cmdline("tail", err)
    return cmdline("lanekit", "try", "--plist", str(target.plist_path))


@check(
    "launchd.not-loaded",
    summary="launchd does not have the job loaded, so it never fires",
    needs_launchd=True,
    alert=True,
)
def not_loaded(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """An installed plist is loaded at login, or by bootstrap; until then nothing runs."""
    label = target.label
    if label is None or _loaded(target, ctx) or ctx.seen(label).disabled:
        return
    if target.lane is not None:
        state = "is not installed" if not target.installed else "is installed but not loaded"
        yield Problem(
            Severity.ERROR,
            f"lane {target.lane.name} {state} in launchd ({ctx.domain}), so it never runs.",
            cmdline("lanekit", "apply", target.lane.name),
        )
        return
    yield Problem(
        Severity.WARNING,
        f"{label} is not loaded in launchd ({ctx.domain}), so it never runs.",
        cmdline("launchctl", "bootstrap", ctx.domain, str(target.plist_path)),
    )


@check(
    "launchd.disabled",
    summary="launchd has the job disabled (it cannot be loaded until enabled); or paused",
    needs_launchd=True,
    alert=True,
)
def disabled(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """The disabled override lives in launchd's own database, not in the plist, and survives
    reboots; bootstrap then fails with 119 (or a bare 5)."""
    label = target.label
    if label is None or not ctx.seen(label).disabled:
        return
    if target.lane is not None and is_paused(ctx.paths, label):
        yield Problem(
            Severity.INFO,
            f"lane {target.lane.name} is paused (`lanekit pause`): disabled in launchd, and "
            "its runs claim nothing until it is resumed.",
            cmdline("lanekit", "resume", target.lane.name),
        )
        return
    if _loaded(target, ctx):
        yield Problem(
            Severity.WARNING,
            f"{label} is disabled in launchd ({ctx.domain}) but still loaded: it keeps firing "
            "and can be kicked until its next bootout (or reboot), then it cannot be loaded. "
            "To stop a lane deliberately, pause it.",
            cmdline("launchctl", "enable", f"{ctx.domain}/{label}")
            + (
                f"  (or: {cmdline('lanekit', 'pause', target.lane.name)})"
                if target.lane is not None
                else ""
            ),
        )
        return
    then = (
        cmdline("lanekit", "apply", target.lane.name)
        if target.lane is not None
        else cmdline("launchctl", "bootstrap", ctx.domain, str(target.plist_path))
    )
    yield Problem(
        Severity.ERROR,
        f"{label} is disabled in launchd ({ctx.domain}), so it cannot be loaded and never runs.",
        f"{cmdline('launchctl', 'enable', f'{ctx.domain}/{label}')} && {then}",
    )


@check(
    "launchd.exit-78",
    summary="last exit 78: launchd could not set the job up and the program never ran",
    needs_launchd=True,
    alert=True,
)
def exit_78(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """Modern launchd reports 78 (EX_CONFIG) when it cannot open a log path, chdir, or exec;
    the program never ran, so its own logs are empty. lanekit's runner never exits 78."""
    if not _loaded(target, ctx) or ctx.seen(_label(target)).last_exit != os.EX_CONFIG:
        return
    yield _explained(
        target,
        ctx,
        "last exit 78 (EX_CONFIG): launchd could not set the job up, so the program never ran",
        EXIT_78_CAUSES,
        "check that StandardOutPath/StandardErrorPath directories exist and are writable and "
        f"that WorkingDirectory exists, then run `{cmdline('lanekit', 'try', target.lane.name)}`"
        if target.lane is not None
        else f"check the log paths and WorkingDirectory of {target.plist_path}",
    )


@check(
    "launchd.exit-126",
    summary="last exit 126: a command was found but could not be executed",
    needs_launchd=True,
    alert=True,
)
def exit_126(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A shell's "permission denied" / bad interpreter status."""
    if not _loaded(target, ctx) or ctx.seen(_label(target)).last_exit != 126:
        return
    yield _explained(
        target,
        ctx,
        "last exit 126: a command was found but could not be executed",
        EXIT_126_CAUSES,
        f"see which command in the job's stderr: {_stderr_hint(target)}",
    )


@check(
    "launchd.exit-127",
    summary="last exit 127: a command was not found (usually the job's PATH)",
    needs_launchd=True,
    alert=True,
)
def exit_127(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A shell's "command not found": the tool is on your PATH, not on the job's."""
    if not _loaded(target, ctx) or ctx.seen(_label(target)).last_exit != 127:
        return
    yield _explained(
        target,
        ctx,
        "last exit 127: a command was not found under the job's PATH",
        EXIT_127_CAUSES,
        f"see which command in the job's stderr: {_stderr_hint(target)}",
    )


@check(
    "launchd.killed",
    summary="the last run was killed by a signal (bootout past ExitTimeOut, kill -9, a crash)",
    needs_launchd=True,
    alert=True,
)
def killed(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A negative status in `launchctl list` is minus the signal that ended the run."""
    if not _loaded(target, ctx):
        return
    status = ctx.seen(_label(target)).last_exit
    if status is None or status >= 0:
        return
    number = -status
    name = signal_label(number)
    if number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        why = "it was stopped (bootout, unload or logout)"
    elif number == signal.SIGKILL:
        why = "it was killed outright (kill -9, memory pressure, or a stop past ExitTimeOut)"
    else:
        why = "it crashed"
    if target.lane is not None:
        fix = (
            f"{cmdline('lanekit', 'recover', target.lane.name)}  (puts back any job the run "
            "held), then "
            f"`{_stderr_hint(target)}` for why"
        )
    else:
        fix = f"see why in the job's stderr: {_stderr_hint(target)}"
    yield Problem(
        Severity.WARNING,
        f"the last run ended by {name} ({number}): {why}.",
        fix,
    )


@check(
    "launchd.crash-loop",
    summary="the job keeps failing and launchd keeps respawning it, throttled",
    needs_launchd=True,
    alert=True,
)
def crash_loop(target: Target, ctx: DoctorContext) -> Iterator[Problem]:
    """A kept-alive or fast-repeating job that fails at once is respawned every
    ThrottleInterval forever (`runs = 38771`), burning CPU and flooding its log."""
    if not _loaded(target, ctx):
        return
    label = _label(target)
    info = ctx.seen(label).definition
    status = ctx.seen(label).last_exit
    if info is None or info.runs is None or info.runs < CRASH_LOOP_RUNS or status in (None, 0):
        return
    job = target.plist or {}
    respawning = (
        bool(job.get("KeepAlive"))
        or (info.state or "") in LOOP_STATES
        or (info.successive_crashes or 0) >= 2
    )
    interval = job.get("StartInterval")
    throttle = info.minimum_runtime or job.get("ThrottleInterval") or 10
    fast_timer = isinstance(interval, int) and isinstance(throttle, int) and interval <= throttle
    if not (respawning or fast_timer):
        return
    outcome = f"killed by {signal_label(-status)}" if status < 0 else f"exit {status}"
    yield Problem(
        Severity.ERROR,
        f"{label} is in a crash loop: {info.runs} runs since it was loaded, the last one "
        f"{outcome}, each respawn throttled to one per {throttle} s.",
        f"stop it with `{cmdline('launchctl', 'bootout', f'{ctx.domain}/{label}')}`, then find "
        "the failure: "
        f"{_stderr_hint(target)}",
    )
