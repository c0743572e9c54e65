"""program.*, path.command-missing and env.* checks, on real files and real PATHs.

The key property: commands are looked up on the job's OWN PATH. Each PATH test puts the tool
on the test process's PATH (where a shell finds it) and not on the job's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from doctor_world import HEALTHY, World, job_plist, tool

from lanekit.doctor import Severity


@pytest.fixture
def shell_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on the test's PATH (the "user's shell") that no job PATH contains."""
    directory = tmp_path / "shell-bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", f"{directory}:/usr/bin:/bin")
    return directory


def test_missing_program_is_an_error(tmp_path: Path) -> None:
    """ProgramArguments[0] that does not exist: the job can never start."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(ProgramArguments=[str(tmp_path / "gone" / "tool")]))
    [finding] = world.run("program.missing", target)
    assert finding.severity is Severity.ERROR
    assert str(tmp_path / "gone" / "tool") in finding.message
    assert finding.fix == (
        f"install {tmp_path / 'gone' / 'tool'}, or point ProgramArguments of "
        f"{target.plist_path} at it"
    )


def test_dangling_lane_interpreter_is_missing_with_the_reinstall_fix(tmp_path: Path) -> None:
    """A lane whose pipx venv python points at a removed Homebrew keg: program.missing names
    the vanished target and the pipx reinstall, and program.not-executable stays quiet (no
    `chmod +x` on a dangling symlink)."""
    world = World.make(tmp_path)
    keg = tmp_path / "Cellar/python@3.12/3.12.4/bin/python3.12"
    venv_bin = tmp_path / "pipx/venvs/lanekit/bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(keg)
    job = job_plist(
        ProgramArguments=[str(venv_bin / "python"), "-c", "pass"],
        EnvironmentVariables={"LANEKIT_LANE": "funnel"},
    )
    target = world.foreign(job)
    [finding] = world.run("program.missing", target)
    assert f"is a symlink to {keg}, which no longer exists" in finding.message
    assert finding.fix == "pipx reinstall lanekit && lanekit apply"
    assert world.run("program.not-executable", target) == []


def test_tilde_program_is_missing_because_launchd_does_not_expand(tmp_path: Path) -> None:
    """The seed's `~/.claude/scripts/guard.py`: launchd looks for a directory named `~`."""
    world = World.make(tmp_path)
    tool(world.paths.home / ".claude" / "scripts", "guard.py")
    target = world.foreign(job_plist(ProgramArguments=["~/.claude/scripts/guard.py", "--"]))
    [finding] = world.run("program.missing", target)
    assert "does not expand" in finding.message
    expanded = world.paths.home / ".claude" / "scripts" / "guard.py"
    assert finding.fix.startswith(f"write the absolute path {expanded} in ")


def test_program_without_execute_bit(tmp_path: Path) -> None:
    """A script without +x cannot be exec'd, not even by root: fix `chmod +x`."""
    world = World.make(tmp_path)
    script = tool(tmp_path / "bin", "job.sh", mode=0o644)
    [finding] = world.run(
        "program.not-executable", world.foreign(job_plist(ProgramArguments=[str(script)]))
    )
    assert finding.fix == f"chmod +x {script}"


def test_job_command_without_execute_bit(tmp_path: Path) -> None:
    """A lane's job command given as a path is checked too (the runner execs it per job)."""
    script = tool(tmp_path / "bin", "process.sh", mode=0o600)
    world = World.make(tmp_path, HEALTHY.replace('["true", "{job}"]', f'["{script}", "{{job}}"]'))
    [finding] = world.run("program.not-executable", world.target())
    assert finding.message.startswith("the job command")
    assert finding.fix == f"chmod +x {script}"


def test_shebang_naming_a_missing_interpreter(tmp_path: Path) -> None:
    """`#!/usr/local/bin/python3` on a machine without it: exec fails before line one."""
    world = World.make(tmp_path)
    script = tmp_path / "bin" / "job.py"
    script.parent.mkdir()
    script.write_text(f"#!{tmp_path}/nowhere/python3\nprint('hi')\n")
    script.chmod(0o755)
    [finding] = world.run(
        "program.bad-interpreter", world.foreign(job_plist(ProgramArguments=[str(script)]))
    )
    assert f"#!{tmp_path}/nowhere/python3" in finding.message
    assert finding.fix == f"fix the #! line of {script} to name an installed interpreter"


def test_env_shebang_looks_on_the_jobs_path(tmp_path: Path, shell_tools: Path) -> None:
    """`#!/usr/bin/env nodeish` works from the shell (on its PATH), not under the job's PATH."""
    tool(shell_tools, "nodeish")
    world = World.make(tmp_path)
    script = tmp_path / "bin" / "job.js"
    script.parent.mkdir()
    script.write_text("#!/usr/bin/env nodeish\n")
    script.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin"}
    target = world.foreign(job_plist(ProgramArguments=[str(script)], EnvironmentVariables=env))
    [finding] = world.run("program.bad-interpreter", target)
    assert f"your shell finds it at {shell_tools / 'nodeish'}" in finding.message
    assert finding.fix == (
        f"add {shell_tools} to the PATH in EnvironmentVariables of {target.plist_path}"
    )


def test_job_command_missing_from_the_lane_path(tmp_path: Path, shell_tools: Path) -> None:
    """The seed's jq: on the user's PATH, not on the lane's. Error; fix adds the dir to `path`."""
    tool(shell_tools, "jqish")
    world = World.make(tmp_path, HEALTHY.replace('["true", "{job}"]', '["jqish", "{job}"]'))
    assert shutil.which("jqish") == str(shell_tools / "jqish")  # the shell does find it
    [finding] = world.run("path.command-missing", world.target())
    assert finding.severity is Severity.ERROR
    assert "the job command jqish is not on the job's PATH (/usr/bin:/bin:/usr/sbin:/sbin)" in (
        finding.message
    )
    assert finding.fix == (
        f'add "{shell_tools}" to `path` of [lanes.funnel] in lanes.toml, then run `lanekit apply`'
    )


def test_job_command_on_the_lane_path_is_fine(tmp_path: Path, shell_tools: Path) -> None:
    """With the tool's directory in the lane's path, nothing is reported."""
    tool(shell_tools, "jqish")
    text = HEALTHY.replace('["true", "{job}"]', '["jqish", "{job}"]').replace(
        'path = ["/usr/bin"', f'path = ["{shell_tools}", "/usr/bin"'
    )
    world = World.make(tmp_path, text)
    assert world.run("path.command-missing", world.target()) == []


def test_bare_program_without_path_uses_launchds_default(tmp_path: Path, shell_tools: Path) -> None:
    """No PATH in the plist: the lookup uses /usr/bin:/bin:/usr/sbin:/sbin, never the caller's."""
    tool(shell_tools, "codexish")
    world = World.make(tmp_path)
    target = world.foreign(job_plist(ProgramArguments=["codexish", "exec"]))
    [finding] = world.run("path.command-missing", target)
    assert "(/usr/bin:/bin:/usr/sbin:/sbin)" in finding.message
    assert finding.fix.startswith(f"add <key>PATH</key><string>{shell_tools}:/usr/bin")


def test_inline_shell_script_command_is_looked_up(tmp_path: Path, shell_tools: Path) -> None:
    """`sh -c 'jqish ...'`: the shell looks jqish up on the job's PATH, so doctor does too."""
    tool(shell_tools, "jqish")
    world = World.make(tmp_path)
    target = world.foreign(job_plist(ProgramArguments=["/bin/sh", "-c", "jqish .flag job.json"]))
    [finding] = world.run("path.command-missing", target)
    assert finding.message.startswith("the command the inline shell script runs jqish")


def test_missing_command_nowhere_at_all(tmp_path: Path, shell_tools: Path) -> None:
    """A command the shell cannot find either: install it, or write its absolute path."""
    world = World.make(
        tmp_path, HEALTHY.replace('["true", "{job}"]', '["no-such-tool-xyz", "{job}"]')
    )
    [finding] = world.run("path.command-missing", world.target())
    assert "your shell finds it" not in finding.message
    assert finding.fix.startswith("install no-such-tool-xyz, or write its absolute path in ")


def test_path_unset_warns_with_the_default(tmp_path: Path) -> None:
    """No EnvironmentVariables PATH: the job gets launchd's four directories only."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(EnvironmentVariables={}))
    [finding] = world.run("env.path-unset", target)
    assert finding.severity is Severity.WARNING
    assert "/usr/bin:/bin:/usr/sbin:/sbin" in finding.message
    assert finding.fix == (
        "add <key>PATH</key><string>/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:"
        f"/sbin</string> to EnvironmentVariables of {target.plist_path}"
    )


def test_lanekit_lane_always_sets_path(tmp_path: Path) -> None:
    """lanekit writes an explicit PATH into every plist, so its lanes never trip env.path-unset."""
    world = World.make(tmp_path)
    world.install()
    assert world.run("env.path-unset", world.target()) == []


def test_unexpanded_tilde_in_an_environment_value(tmp_path: Path) -> None:
    """`CODEX_HOME=~/.codex` reaches the job literally; the fix writes the expanded path."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(EnvironmentVariables={"CODEX_HOME": "~/.codex"}))
    [finding] = world.run("env.unexpanded", target)
    assert finding.message.startswith('EnvironmentVariables CODEX_HOME is "~/.codex"')
    assert finding.fix == f'write "{world.paths.home}/.codex" instead in {target.plist_path}'


def test_unexpanded_variable_in_a_log_path(tmp_path: Path) -> None:
    """`$HOME/logs/x.log` as StandardErrorPath is a path that starts with `$HOME`, literally."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(StandardErrorPath="$HOME/logs/err.log"))
    [finding] = world.run("env.unexpanded", target)
    assert finding.message.startswith("StandardErrorPath")


def test_inline_shell_variables_are_the_shells_business(tmp_path: Path) -> None:
    """`sh -c 'echo $HOME'` expands in the shell: not reported."""
    world = World.make(tmp_path)
    target = world.foreign(job_plist(ProgramArguments=["/bin/sh", "-c", "echo $HOME"]))
    assert world.run("env.unexpanded", target) == []
