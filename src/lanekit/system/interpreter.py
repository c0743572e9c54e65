"""The Python interpreter every lane's plist runs, and what happens when an upgrade removes it.

A venv's `bin/python` is a symlink into the base interpreter. After `brew upgrade python@3.x`
(and `brew cleanup`) removes the old keg, or after uv/pipx drop a patch-versioned or cached
Python, the symlink dangles: every lane then exits 78 with empty lanekit logs, and the lanekit
command itself dies with "bad interpreter" (pypa/pipx #633, #965; astral-sh/uv #1640, #7634,
#8514, #9739). So:

- at `apply`, while the CLI surely works, `inspect` resolves the real interpreter and
  `apply_notes` warns when it lives where upgrades remove it;
- doctor's `program.missing` names a dangling symlink's target and the reinstall fix;
- `apply` installs a rescue script (POSIX sh, no Python) next to the snapshots that says the
  same when the CLI cannot start: `sh <state>/rescue.sh`;
- and the watchdog's guard (POSIX sh, no Python) that launchd runs in front of the watchdog:
  when the interpreter cannot import lanekit it sends a notice with osascript and pings the
  heartbeat's `/fail` with curl (both ship with macOS), so the owner hears of it although
  nothing lanekit wrote in Python can run.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from lanekit.system.atomic import write_atomic
from lanekit.system.owned import make_private_dirs
from lanekit.system.quoting import shell_quote

RESCUE_NAME = "rescue.sh"
RESCUE_MODE = 0o600
"""Private like every file lanekit writes; it is run as `sh rescue.sh`, so it needs no x bit."""
BROKEN_EXIT = 69
"""The rescue script's exit when the interpreter is gone (EX_UNAVAILABLE, as lanekit's 69)."""
GUARD_NAME = "watchdog-guard.sh"
GUARD_EXIT = 78
"""The guard's exit when the interpreter cannot start lanekit: what every lane's launchd job
exits with then (EX_CONFIG), so doctor and status read the watchdog like any lane."""
SH = "/bin/sh"
IMPORT_CHECK = ("-I", "-c", "import lanekit")
"""How rescue.sh, the guard and `apply` ask whether an interpreter can start lanekit: with -I,
as every lane runs it, so a user-site or PYTHONPATH install (which -I ignores) fails here too."""

_FRAGILE: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"/Cellar/python@[\d.]+/[\d.]+[^/]*/"),
        "a Homebrew keg of one patch release, which `brew upgrade` and `brew cleanup` remove",
    ),
    (
        re.compile(r"/uv/python/cpython-\d+\.\d+\.\d+[^/]*/"),
        "a uv-managed Python of one patch release, which `uv python upgrade` replaces",
    ),
    (
        re.compile(r"/(?:\.cache|Caches)/uv/|/uv/archive-v\d+/|/pipx/\.cache/"),
        "a temporary tool environment (uvx / pipx run), which the tool deletes",
    ),
)


@dataclass(frozen=True, slots=True)
class Interpreter:
    """What an interpreter path in a plist really points at."""

    path: str
    """As written in ProgramArguments[0]."""
    resolved: str
    """The end of its symlink chain (see `links`), possibly a path that no longer exists."""
    exists: bool
    dangling: bool
    """A symlink somewhere on the way points at nothing: the base Python was removed."""
    fragile: str | None = None
    """Why `resolved` is a place upgrades remove, None when it is not."""
    checkout: str | None = None
    """The source checkout lanekit runs from (an editable install), None for an installed
    package: its environment is rebuilt from the checkout, never from the package index."""

    @property
    def fix(self) -> str:
        """The command that recreates the environment lanekit is installed in."""
        return reinstall_fix(self.path, self.checkout)


def links(path: str, limit: int = 40) -> list[str]:
    """The file-level symlink chain from `path`: each link's target as written (made absolute
    against the link's directory), without resolving directory symlinks on the way.

    Judging these, not realpath, matters: `/opt/homebrew/opt/python@3.12/bin/python3.12` is a
    stable name whose realpath is a Cellar keg; a venv linked to the opt name survives patch
    upgrades, one linked to the keg itself does not.
    """
    chain: list[str] = []
    current = Path(path)
    for _ in range(limit):
        try:
            target = current.readlink()
        except OSError:
            break
        # normpath, not resolve(): directory symlinks on the way stay as written.
        current = Path(os.path.normpath(current.parent / target))
        chain.append(str(current))
    return chain


def inspect(path: str) -> Interpreter:
    """Resolve `path` (a lane's interpreter) and judge where it really lives."""
    chain = links(path)
    exists = Path(path).exists()
    dangling = not exists and bool(chain)
    resolved = chain[-1] if chain else path
    fragile = next(
        (why for hop in (path, *chain) for pattern, why in _FRAGILE if pattern.search(hop)),
        None,
    )
    return Interpreter(path, resolved, exists, dangling, fragile, lanekit_checkout())


def lanekit_checkout() -> str | None:
    """The source checkout this lanekit is imported from (`pip install -e`, scripts/setup),
    None when it is an installed package (under site-packages)."""
    import lanekit

    package = Path(lanekit.__file__).resolve().parent
    root = package.parent.parent  # <checkout>/src/lanekit
    if "site-packages" in package.parts or not (root / "pyproject.toml").is_file():
        return None
    return str(root)


def import_problem(path: str, timeout: float = 60.0) -> str | None:
    """Why `path` cannot import lanekit the way every lane runs it (`-I`: no user site, no
    PYTHONPATH), in words; None when it can. Run once per `apply`."""
    import subprocess

    try:
        ran = subprocess.run(
            [path, *IMPORT_CHECK],
            capture_output=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    except subprocess.TimeoutExpired:
        return f"it did not finish within {timeout:g} s"
    if ran.returncode == 0:
        return None
    lines = ran.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit {ran.returncode}"


def reinstall_fix(path: str, checkout: str | None = None) -> str:
    """`pipx reinstall lanekit`, `uv tool install --reinstall lanekit`, or how to rebuild the
    venv that holds `path` (from `checkout` when lanekit runs from one: the index may hold
    another package of that name), each followed by `lanekit apply` (it rewrites every
    plist)."""
    if "/pipx/venvs/" in path:
        return "pipx reinstall lanekit && lanekit apply"
    if "/uv/tools/" in path:
        return "uv tool install --reinstall lanekit && lanekit apply"
    venv = Path(path).parent.parent
    source = "lanekit" if checkout is None else f"-e {shell_quote(checkout)}"
    return (
        f"python3 -m venv --clear {shell_quote(venv)} && "
        f"{shell_quote(venv / 'bin' / 'pip')} install {source} && lanekit apply"
    )


_VERSION = re.compile(r"python@(\d+\.\d+)|cpython-(\d+\.\d+)|python(\d+\.\d+)")


def stable_python(interpreter: Interpreter) -> str:
    """How to reinstall lanekit on a Python that survives patch upgrades, of the same minor
    version: Homebrew's `opt/python@3.x` path (it follows every upgrade of that keg), or uv's
    `--python 3.x`. Never /usr/bin/python3: that is Apple's 3.9, and lanekit needs 3.11+."""
    import sys

    found = next(
        (m for hop in (interpreter.resolved, interpreter.path) for m in _VERSION.finditer(hop)),
        None,
    )
    version = (
        next(g for g in found.groups() if g)
        if found is not None
        else f"{sys.version_info.major}.{sys.version_info.minor}"
    )
    cellar = interpreter.resolved.find("/Cellar/")
    prefix = interpreter.resolved[:cellar] if cellar > 0 else "/opt/homebrew"
    opt = f"{prefix}/opt/python@{version}/bin/python{version}"
    return (
        f"`pipx reinstall --python {shell_quote(opt)} lanekit` (Homebrew's opt path follows "
        f"every upgrade of python@{version}) or `uv tool install --python {version} lanekit`"
    )


def apply_notes(interpreter: Interpreter) -> tuple[str, ...]:
    """What `apply` says about the interpreter it writes into every plist."""
    if interpreter.fragile is None:
        return ()
    return (
        f"lanes run {interpreter.path}, which is {interpreter.resolved}: {interpreter.fragile}. "
        "When it goes, every lane exits 78; reinstall lanekit on a Python that survives "
        f"upgrades, e.g. {stable_python(interpreter)}, and run `lanekit apply`",
    )


def rescue_script(interpreter: Interpreter) -> bytes:
    """A POSIX sh script that needs no Python: it says whether lanekit's interpreter still
    runs, and if not, which file vanished (the end of the symlink chain as it was at `apply`)
    and the reinstall commands. Every baked-in value is shell-quoted."""
    lines = [
        "#!/bin/sh",
        "# lanekit rescue: written by `lanekit apply`; runs without Python.",
        "# Usage: sh <this file>. Exit 0: the interpreter works; 69: it is gone.",
        # Plain shlex.quote here, not quoting.shell_quote: its $'...' form is not POSIX sh.
        f"interpreter={shlex.quote(interpreter.path)}",
        f"target={shlex.quote(interpreter.resolved)}",
        f"fix={shlex.quote(interpreter.fix)}",
        f'if [ -x "$interpreter" ] && "$interpreter" {_IMPORT_ARGS} 2>/dev/null; then',
        '  echo "lanekit\'s interpreter works: $interpreter"',
        '  echo "lanes should run; check them with: lanekit doctor"',
        "  exit 0",
        "fi",
        'if [ -L "$interpreter" ] && [ ! -e "$interpreter" ]; then',
        "  echo \"lanekit's Python is gone: $interpreter is a symlink to $target, which no "
        'longer exists (Python was upgraded or removed)."',
        "else",
        '  echo "lanekit\'s Python cannot run lanekit: $interpreter"',
        "fi",
        'echo "Every lane exits 78 and the lanekit command fails until you reinstall:"',
        'echo "  $fix"',
        f"exit {BROKEN_EXIT}",
        "",
    ]
    return "\n".join(lines).encode()


_IMPORT_ARGS = " ".join(shlex.quote(arg) for arg in IMPORT_CHECK)

GUARD_SCRIPT = r"""#!/bin/sh
# lanekit watchdog guard: installed by `lanekit apply`; runs without Python.
# launchd runs: /bin/sh <this file> HEARTBEAT_FILE LABEL PYTHON ARGS...
# When PYTHON can import lanekit (isolated, as every lane runs it) this becomes the watchdog
# (exec). Otherwise every lane fails too and no lanekit code can say so: send a notice
# (osascript) and ping the heartbeat's /fail (curl), both found on the lane's PATH; exit @EXIT@.
heartbeat_file=$1
label=$2
shift 2
python=$1
if [ -x "$python" ] && "$python" @IMPORT@ 2>/dev/null; then
  exec "$@"
fi
rescue="$(dirname "$0")/rescue.sh"
message="lanekit's Python cannot start lanekit ($python): every lane and the watchdog"
message="$message $label fail until it is reinstalled. Run: sh '$rescue'"
echo "lanekit watchdog guard: $message" >&2
osascript -e 'on run argv' \
  -e 'display notification (item 1 of argv) with title (item 2 of argv)' -e 'end run' \
  "$message" "lanekit: the watchdog cannot run" >/dev/null 2>&1
# The URL is a secret: read from a private file, never an argument (curl reads it from its
# config on stdin, so it is not in the process list either).
if [ -f "$heartbeat_file" ] && [ ! -L "$heartbeat_file" ]; then
  IFS= read -r url < "$heartbeat_file"
  case $url in
    *'"'* | *'\'*) url= ;;
    http://* | https://*) ;;
    *) url= ;;
  esac
  if [ -n "$url" ]; then
    # Already <url>/fail: apply wrote it so (lanekit.config.watch.fail_url).
    printf 'url = "%s"\n' "$url" |
      curl -fsS -m 10 --retry 2 --data-binary "$message" -K - >/dev/null 2>&1
  fi
fi
exit @EXIT@
""".replace("@EXIT@", str(GUARD_EXIT)).replace("@IMPORT@", _IMPORT_ARGS)
"""Fixed text, nothing baked in: what it needs arrives as arguments from the plist."""


def guard_path(state: Path) -> Path:
    """Where `apply` installs the watchdog's guard: next to rescue.sh, which it names."""
    return state / GUARD_NAME


def install_guard(state: Path) -> Path:
    """Write the guard atomically (0600: it is run as `/bin/sh GUARD`) and return its path."""
    make_private_dirs(state)
    path = guard_path(state)
    write_atomic(path, GUARD_SCRIPT.encode(), RESCUE_MODE)
    return path


def rescue_path(state: Path) -> Path:
    """Where `apply` installs the rescue script: next to the lane snapshots."""
    return state / RESCUE_NAME


def install_rescue(state: Path, interpreter: Interpreter) -> Path:
    """Write the rescue script atomically (0600, in a 0700 state dir) and return its path."""
    make_private_dirs(state)
    path = rescue_path(state)
    write_atomic(path, rescue_script(interpreter), RESCUE_MODE)
    return path
