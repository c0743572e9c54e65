"""What a plist says about how launchd will start the job, read the way launchd reads it.

Shared by the check modules and by `lanekit try`: the program launchd execs, the PATH and
working directory the job gets, the files launchd opens for it, and whether a given user may
write somewhere (judged from mode bits, so a test can ask for another uid than its own).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from lanekit.doctor import Target
from lanekit.service.artifacts import JobDefinition

LAUNCHD_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
"""The PATH launchd gives a job whose plist sets none (launchd-semantics.md section 3)."""

LOG_KEYS = ("StandardOutPath", "StandardErrorPath")

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})

SHELL_WORDS = frozenset(
    {
        "!",
        "[",
        "[[",
        "{",
        ".",
        ":",
        "alias",
        "case",
        "cd",
        "command",
        "echo",
        "eval",
        "exec",
        "exit",
        "export",
        "for",
        "if",
        "printf",
        "pwd",
        "read",
        "return",
        "set",
        "shift",
        "source",
        "test",
        "trap",
        "true",
        "false",
        "type",
        "ulimit",
        "umask",
        "unset",
        "until",
        "wait",
        "while",
    }
)
"""Builtins and keywords: a script starting with one is not looked up on PATH."""

_PLAIN_WORD = re.compile(r"[A-Za-z0-9_.+@%-]+|/[A-Za-z0-9_.+@%/-]+")

_UNEXPANDED = re.compile(r"(?:^|[:=\s])~|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")


def program(defined: JobDefinition) -> str | None:
    """What launchd execs: Program, else ProgramArguments[0]."""
    return defined.program


def arguments(defined: JobDefinition) -> list[str]:
    """ProgramArguments (argv), or [Program] when only Program is set."""
    return list(defined.argv)


def environment(defined: JobDefinition) -> dict[str, str]:
    """EnvironmentVariables with string values only (launchd ignores the others)."""
    return dict(defined.env)


def job_path(defined: JobDefinition) -> str:
    """The PATH the job runs with: its own, else launchd's default. Never the caller's."""
    return environment(defined).get("PATH", LAUNCHD_PATH)


def workdir(defined: JobDefinition) -> str | None:
    """WorkingDirectory when set."""
    return defined.cwd


def cwd(defined: JobDefinition) -> str:
    """Where the job starts: WorkingDirectory, else `/` (launchd's default)."""
    return workdir(defined) or "/"


def absolute(value: str, defined: JobDefinition) -> Path:
    """A path from the plist as the job sees it (relative paths start at its cwd)."""
    path = Path(value)
    return path if path.is_absolute() else Path(cwd(defined)) / path


def defined_logs(defined: JobDefinition) -> list[tuple[str, Path]]:
    """(key, path) of the job's stdout and stderr files, relative ones from its cwd; named by
    launchd's keys, the words of the plist a finding points at."""
    start = Path(defined.cwd or "/")
    return [
        (key, path if path.is_absolute() else start / path)
        for key, value in zip(LOG_KEYS, (defined.stdout, defined.stderr), strict=True)
        if value is not None
        for path in (Path(value),)
    ]


def resolve(name: str, defined: JobDefinition) -> str | None:
    """Where the job would find command `name`: on its own PATH, from its own cwd."""
    from lanekit.service.launchd.launch import resolve_command

    return resolve_command(name, job_path(defined), cwd(defined))


def caller_has(name: str) -> str | None:
    """Where the caller's shell finds `name` (only ever used to word a fix, never a verdict)."""
    return shutil.which(name)


def is_shell_c(argv: Sequence[str]) -> bool:
    """argv runs a shell script given inline (`sh -c '...'`): `$VAR` there is the shell's job."""
    return _shell_c_at(argv) is not None


def _shell_c_at(argv: Sequence[str]) -> int | None:
    """The index of the shell's own `-c` (among its options, before any operand: in `sh
    SCRIPT ARGS`, a `-c` after SCRIPT is the script's argument, e.g. the watchdog guard's
    `python -I -c ...`), or None."""
    if not argv or Path(argv[0]).name not in SHELLS:
        return None
    for index, arg in enumerate(argv[1:], start=1):
        if arg == "-c":
            return index
        if not arg.startswith("-") or arg == "--":
            return None
    return None


def shell_command(argv: Sequence[str]) -> str | None:
    """The command an inline `sh -c 'tool args...'` script starts with, when it is a plain
    word (not a builtin, keyword, assignment or expansion) that the shell looks up on PATH."""
    at = _shell_c_at(argv)
    if at is None:
        return None
    index = at + 1
    if index >= len(argv):
        return None
    try:
        words = shlex.split(argv[index])
    except ValueError:
        return None
    if not words or not _PLAIN_WORD.fullmatch(words[0]) or words[0] in SHELL_WORDS:
        return None
    return words[0]


def unexpanded(value: str) -> bool:
    """True when `value` uses `~` or `$VAR`, which launchd passes through literally."""
    return bool(_UNEXPANDED.search(value))


def expand(value: str, home: Path) -> str:
    """`value` with `~` and `$HOME` expanded as a shell would for this user (for fix texts)."""
    text = re.sub(r"(^|[:=\s])~(?=/|$|:)", lambda m: m.group(1) + str(home), value)
    return re.sub(r"\$\{?HOME\}?", str(home), text)


def may_write(st: os.stat_result, uid: int, gids: frozenset[int]) -> bool:
    """Whether `uid` may write the file or create entries in the directory `st` describes."""
    if uid == 0:
        return True
    need_exec = stat.S_ISDIR(st.st_mode)
    if st.st_uid == uid:
        bits = (stat.S_IWUSR, stat.S_IXUSR)
    elif st.st_gid in gids:
        bits = (stat.S_IWGRP, stat.S_IXGRP)
    else:
        bits = (stat.S_IWOTH, stat.S_IXOTH)
    if not st.st_mode & bits[0]:
        return False
    return not need_exec or bool(st.st_mode & bits[1])


def read_only_fs(path: Path) -> bool:
    """True when `path` is on a filesystem mounted read-only (root cannot write there either)."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def nearest_existing(path: Path) -> Path:
    """The closest ancestor of `path` (or `path` itself) that exists in some form."""
    current = path
    while not os.path.lexists(current) and current != current.parent:
        current = current.parent
    return current


def shebang(path: Path) -> list[str] | None:
    """The `#!` line of a script split into words, or None for binaries and unreadable files."""
    try:
        with path.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return line.split() or None


def is_executable_file(path: Path) -> bool:
    """A regular file with at least one execute bit (root cannot exec a file without one)."""
    try:
        st = path.stat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111)


def path_fix(target: Target, directory: str) -> str:
    """The edit that puts `directory` on the job's PATH, worded for a lane or for a plist."""
    if target.lane is not None:
        return (
            f'add "{directory}" to `path` of [lanes.{target.lane.name}] in lanes.toml, '
            "then run `lanekit apply`"
        )
    where = target.plist_path or "the plist"
    if target.definition is not None and "PATH" in environment(target.definition):
        return f"add {directory} to the PATH in EnvironmentVariables of {where}"
    return (
        f"add <key>PATH</key><string>{directory}:{LAUNCHD_PATH}</string> to "
        f"EnvironmentVariables of {where}"
    )
