"""Another local user on this machine, for the hostile-neighbour tests (issue 30 items 4 and 5):
the `second_user` fixture (tests/conftest.py) hands one out where the tests run as root."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SECOND_UID = 65534
"""nobody: the unprivileged second local user the hostile-neighbour tests act as."""
THIRD_UID = 65533
"""A third local user (no account needed: a uid owns files all the same), for the directory
of someone else when the second user is the one running lanekit."""


@dataclass(frozen=True)
class SecondUser:
    """Another local user on this machine, and a place under /tmp both can reach."""

    uid: int
    shared: Path
    """A directory under /tmp (root's, mode 0755, removed after the test): pytest's tmp_path
    is 0700 and root's, so another user could not reach anything inside it."""

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        input: str | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run `argv` as this user (setpriv drops root's uid, gid and groups)."""
        user = (f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups")
        return subprocess.run(
            ["setpriv", *user, *argv],
            env={**os.environ, **(env or {}), "PYTHONDONTWRITEBYTECODE": "1"},
            cwd=cwd,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def mkdir(self, name: str, *, mode: int = 0o755, uid: int | None = None) -> Path:
        """A directory `shared/name` owned by this user (or by `uid`), with `mode`."""
        path = self.shared / name
        path.mkdir(parents=True)
        path.chmod(mode)
        os.chown(path, self.uid if uid is None else uid, self.uid if uid is None else uid)
        return path
