"""Whether launchd started this process as a lane's job (lanekit.run.jobenv)."""

from __future__ import annotations

from lanekit.run.jobenv import TRY_LABEL, lane_process_env, started_by_launchd


def test_started_by_launchd_knows_the_lane_and_try_label() -> None:
    """The lane's own label, and `try`'s one label (every try loads a lane's plist under it),
    mean launchd started the process; a terminal (no name, `0`, an app's name) does not."""
    assert started_by_launchd({"XPC_SERVICE_NAME": "com.x.funnel"}, "com.x.funnel")
    assert started_by_launchd({"XPC_SERVICE_NAME": TRY_LABEL}, "com.x.funnel")
    for terminal in ({}, {"XPC_SERVICE_NAME": "0"}, {"XPC_SERVICE_NAME": "com.x.other"}):
        assert not started_by_launchd(terminal, "com.x.funnel")


def test_a_try_run_keeps_launchds_environment() -> None:
    """Under `try`'s label the process's own environment is launchd's: it is kept as it is,
    not rebuilt from the lane's EnvironmentVariables."""
    environ = {"XPC_SERVICE_NAME": TRY_LABEL, "PATH": "/usr/bin", "ONLY_HERE": "1"}
    assert lane_process_env(environ, "com.x.funnel", {"A": "1"}) is environ
