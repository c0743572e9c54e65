"""The state directory `uninstall --all` deletes whole: only a private directory of lanekit's,
never one that is or holds a home directory ($LANEKIT_STATE_DIR can name any)."""

from __future__ import annotations

from pathlib import Path

from lanekit.reconcile.uninstall import _not_deletable


def test_a_home_or_a_shared_directory_is_never_deleted_whole(tmp_path: Path) -> None:
    """The home itself, a directory above it and a 0755 directory are refused with the reason;
    a 0700 directory of lanekit's is not."""
    home = tmp_path / "users" / "me"
    home.mkdir(parents=True)
    assert "home directory" in (_not_deletable(home, home) or "")
    assert "home directory" in (_not_deletable(tmp_path / "users", home) or "")
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    assert "private directory" in (_not_deletable(shared, home) or "")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    assert _not_deletable(state, home) is None
