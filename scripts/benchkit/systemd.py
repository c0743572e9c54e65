"""(s): lanekit on a real systemd user manager: `lanekit status` on 5 systemd lanes vs `python -c
"import typer"`, and how many daemon-reloads and `systemctl show` calls apply and status make.

The user manager is the test suite's (tests/usermanager.py: root, a mount namespace and a
cgroup of its own); without one the figure says why and is not met."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchkit.common import LANEKIT, PY, REPO, Figure, fresh, median, run_cmd, timed


def _lanes(where: Path, count: int) -> str:
    text = f'[defaults]\nlabel_prefix = "local.benchsd"\n\n[queues.q]\ndir = "{where / "q"}"\n'
    for n in range(count):
        text += (
            f'\n[lanes.l{n}]\nqueue = "q"\ncommand = ["/bin/true", "{{job}}"]\n'
            f'schedule = "{n % 60} {3 + n // 60} * * *"\n'
        )
    return text


def bench_systemd(root: Path, runs: int) -> Figure:
    """(s): see the module docstring."""
    sys.path.insert(0, str(REPO / "tests"))
    import pytest

    from usermanager import start

    try:
        user = start()
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:
        return Figure("s", "`lanekit status` on 5 systemd lanes", 0.0, "<= 2x", False, [str(exc)])
    try:
        return _measure(root, user, runs)
    finally:
        user.stop()


def _measure(root: Path, user: Any, runs: int) -> Figure:
    from lanekit.config import load_config
    from lanekit.reconcile import apply
    from lanekit.service.systemd.manager import SystemdManager
    from lanekit.service.systemd.systemctl import Systemctl
    from lanekit.state.paths import Paths
    from lanekit.status.lanes import status_of

    where = fresh(root, "systemd")
    env = {
        k: v for k, v in user.env.items() if k not in {"LANEKIT_LAUNCHD", "LANEKIT_LAUNCH_AGENTS"}
    }
    env.update({"LANEKIT_STATE_DIR": str(where / "state"), "NO_COLOR": "1"})
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    config = where / "lanes.toml"
    config.write_text(_lanes(where, 5), encoding="utf-8")
    subprocess.run([*LANEKIT, "apply", "-c", str(config)], env=env, check=True, capture_output=True)
    subprocess.run([PY, "-m", "compileall", "-q", str(REPO / "src" / "lanekit")], check=False)

    # What one status and one apply of 20 lanes ask of systemd, counted in the adapter.
    paths = Paths(home=where, launch_agents=where / "agents", state=where / "state", cwd=where)
    systemctl = Systemctl(env)
    manager = SystemdManager(systemctl, user.unit_dir, paths.state)
    loaded = load_config(config, paths)
    status_of(list(loaded.lanes.values()), paths, manager)
    shows = sum(1 for call in systemctl.calls if "show" in call)
    twenty = where / "twenty.toml"
    twenty.write_text(_lanes(where, 20).replace("benchsd", "benchsd20"), encoding="utf-8")
    before = len(systemctl.calls)
    apply(load_config(twenty, paths), paths, manager)
    reloads = sum(1 for call in systemctl.calls[before:] if "daemon-reload" in call)
    calls = len(systemctl.calls) - before

    status = [*LANEKIT, "status", "-c", str(config)]
    baseline = [PY, "-c", "import typer"]
    run_cmd(status, env)
    times: dict[str, list[float]] = {"typer": [], "status": []}
    cpu: dict[str, list[float]] = {"typer": [], "status": []}
    for _ in range(runs):
        for name, argv in (("typer", baseline), ("status", status)):
            wall, used = timed(argv, env)
            times[name].append(wall)
            cpu[name].append(used)
    rounds = [t / b for t, b in zip(times["status"], times["typer"], strict=True)]
    ratio = median(rounds)
    return Figure(
        key="s",
        title='`lanekit status` on 5 systemd lanes vs `python -c "import typer"`',
        ratio=ratio,
        target="<= 2x",
        met=ratio <= 2,
        rounds=rounds,
        detail=[
            f"`lanekit status` (5 lanes, a real systemd user manager): "
            f'{median(times["status"]) * 1e3:.1f} ms; `python -c "import typer"`: '
            f"{median(times['typer']) * 1e3:.1f} ms; {runs} rounds, each ratio against the "
            f"round's own typer run, median; in CPU time of the process tree "
            f"{median(cpu['status']) / median(cpu['typer']):.2f}x",
            f"one status makes {shows} `systemctl --user show` call(s) for all 5 lanes; applying "
            f"20 new lanes made {reloads} daemon-reload(s) in {calls} systemctl calls",
            f"Python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.2f}",
        ],
        limits="status's own imports and work as on launchd (figure i), plus one `systemctl "
        "--user show` process for every unit of every lane (systemctl's start-up and one "
        "round trip to the manager).",
    )
