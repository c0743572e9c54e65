"""owned: private directories whatever the umask, and refusing state others could have written."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from lanekit.errors import ExitCode, UnsafeStateError
from lanekit.system.owned import (
    check_private,
    check_trusted,
    make_private_dirs,
    read_regular,
    unsafe_reason,
    untrusted_part,
)
from neighbours import SecondUser

OTHER_UID = 65534  # nobody: the tests run as root, so os.chown can hand a file to another user


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277])
def test_make_private_dirs_is_0700_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    """Every directory created (parents included) is exactly 0700 under umask 000, 022 and 277."""
    old = os.umask(umask)
    try:
        make_private_dirs(tmp_path / "a" / "b" / "c")
    finally:
        os.umask(old)
    for path in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert _mode(path) == 0o700, path


def test_make_private_dirs_leaves_existing_directories_alone(tmp_path: Path) -> None:
    """A directory that exists keeps its mode (check_private judges it, nothing is chmod-ed)."""
    existing = tmp_path / "shared"
    existing.mkdir()
    existing.chmod(0o755)
    make_private_dirs(existing / "mine")
    assert _mode(existing) == 0o755
    assert _mode(existing / "mine") == 0o700


def test_make_private_dirs_without_parents_makes_one_level(tmp_path: Path) -> None:
    """parents=False creates only the last level: a missing parent is an error."""
    with pytest.raises(FileNotFoundError):
        make_private_dirs(tmp_path / "missing" / "leaf", parents=False)
    assert not (tmp_path / "missing").exists()


def test_make_private_dirs_never_chmods_through_a_planted_symlink(tmp_path: Path) -> None:
    """A symlink where a directory would be created is left as it is, and its target's mode too."""
    victim = tmp_path / "victim"
    victim.mkdir()
    victim.chmod(0o755)
    (tmp_path / "state").symlink_to(victim)
    make_private_dirs(tmp_path / "state")
    assert _mode(victim) == 0o755


@pytest.mark.parametrize(
    ("mode", "owner", "reason"),
    [
        (0o600, None, None),
        (0o644, None, None),
        (0o660, None, "writable by group (mode 0660)"),
        (0o606, None, "writable by others (mode 0606)"),
        (0o666, None, "writable by group and others (mode 0666)"),
        (0o600, OTHER_UID, f"owned by uid {OTHER_UID}"),
    ],
)
def test_unsafe_reason_table(
    tmp_path: Path, mode: int, owner: int | None, reason: str | None
) -> None:
    """Who may have written a file, as a table: ours and not group/world-writable is trusted."""
    path = tmp_path / "f"
    path.write_bytes(b"x")
    path.chmod(mode)
    if owner is not None:
        os.chown(path, owner, -1)
    found = unsafe_reason(path.lstat())
    if reason is None:
        assert found is None
    else:
        assert found is not None
        assert reason in found


def test_check_private_names_the_file_and_a_quoted_fix(tmp_path: Path) -> None:
    """A too-open file of ours gets a quoted chmod; another user's gets a quoted mv aside; both
    exit 69 and name the file."""
    mine = tmp_path / "it's mine.json"
    mine.write_bytes(b"{}")
    mine.chmod(0o666)
    with pytest.raises(UnsafeStateError) as caught:
        check_private(mine, "lane snapshot")
    assert caught.value.exit_code is ExitCode.UNAVAILABLE
    assert str(mine) in caught.value.message
    assert caught.value.hint.startswith("chmod 600 '")
    assert "'\"'\"'" in caught.value.hint  # the quote in the name is shell-quoted
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, OTHER_UID, -1)
    with pytest.raises(UnsafeStateError) as caught:
        check_private(theirs, "state directory", directory=True)
    assert f"owned by uid {OTHER_UID}" in caught.value.message
    assert f"mv -- {theirs} {theirs}.untrusted" in caught.value.hint


def test_check_private_accepts_a_missing_path(tmp_path: Path) -> None:
    """Nothing there yet is nothing to distrust."""
    check_private(tmp_path / "none", "lane snapshot")


def test_read_regular_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    """A FIFO is refused by its type, before any read (which would block forever)."""
    fifo = tmp_path / "x.plist"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            read_regular(fifo, "plist", follow=True)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "read_regular blocked on a FIFO"
    assert isinstance(outcome[0], UnsafeStateError)
    assert "is a FIFO, not a regular file" in outcome[0].message


def test_read_regular_refuses_a_symlink_unless_asked_to_follow(tmp_path: Path) -> None:
    """Without follow, a symlink is refused by name; with it, the target's bytes are read."""
    target = tmp_path / "target"
    target.write_bytes(b"data")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(UnsafeStateError, match="is a symbolic link"):
        read_regular(link, "lane snapshot")
    read = read_regular(link, "plist", follow=True)
    assert read is not None
    assert read[0] == b"data"
    assert read_regular(tmp_path / "missing", "plist") is None


# -- issue 30 items 4 and 5: a path someone other than you or root could have written --------


def test_a_path_under_pytests_tmp_is_trusted(tmp_path: Path) -> None:
    """The chain the tests live in is acceptable: /tmp is sticky and root's, pytest's
    directories are ours; what is missing below a trusted part is the caller's to create."""
    config = tmp_path / "lanes.toml"
    config.write_text("")
    assert untrusted_part(config) is None
    assert untrusted_part(tmp_path / "not" / "yet") is None
    assert untrusted_part("/tmp") is None


@pytest.mark.parametrize(
    ("where", "mode", "reason"),
    [
        ("file", 0o664, "is writable by group (mode 0664)"),
        ("file", 0o646, "is writable by others (mode 0646)"),
        ("parent", 0o777, "is writable by group and others (mode 0777)"),
        ("grandparent", 0o775, "is writable by group (mode 0775)"),
    ],
)
def test_a_part_others_may_write_is_named(
    tmp_path: Path, where: str, mode: int, reason: str
) -> None:
    """The file itself or any directory above it (not sticky) that group or others may write."""
    parent = tmp_path / "a" / "b"
    parent.mkdir(parents=True)
    config = parent / "lanes.toml"
    config.write_text("")
    part = {"file": config, "parent": parent, "grandparent": parent.parent}[where]
    part.chmod(mode)
    found = untrusted_part(config)
    assert found is not None
    assert (found.part, found.reason) == (str(part), reason)
    assert not found.theirs


def test_a_sticky_directory_of_root_or_yours_is_fine_but_not_anothers(
    second_user: SecondUser,
) -> None:
    """Sticky and world-writable like /tmp: fine when root's (or yours: others may add names,
    never replace yours); another user's sticky directory is theirs to empty."""
    mine = second_user.mkdir("sticky", mode=0o1777, uid=0)
    (mine / "lanes.toml").write_text("")
    assert untrusted_part(mine / "lanes.toml") is None
    os.chown(mine, OTHER_UID, OTHER_UID)
    found = untrusted_part(mine / "lanes.toml")
    assert found is not None
    assert found.part == str(mine)
    assert found.reason == f"is owned by uid {OTHER_UID} (nobody), not by you (uid 0 (root))"
    assert found.theirs


def test_another_users_file_or_directory_is_named_even_through_a_symlink(
    second_user: SecondUser, tmp_path: Path
) -> None:
    """A directory of another user on the way, reached directly or through a symlink of ours,
    and the first existing part of a path that does not exist yet (what apply would create)."""
    theirs = second_user.mkdir("theirs")
    assert untrusted_part(theirs / "q" / "jobs").part == str(theirs)  # type: ignore[union-attr]
    link = tmp_path / "q"
    link.symlink_to(theirs)
    found = untrusted_part(link / "jobs")
    assert found is not None
    assert found.part == str(theirs)
    assert found.theirs
    config = tmp_path / "lanes.toml"
    config.write_text("")
    os.chown(config, OTHER_UID, OTHER_UID)
    found = untrusted_part(config)
    assert found is not None
    assert (found.part, found.theirs) == (str(config), True)


def test_a_symlink_another_user_owns_in_a_sticky_directory_is_refused(
    second_user: SecondUser, tmp_path: Path
) -> None:
    """In a sticky directory its owner may replace a symlink at will: it is judged too."""
    target = tmp_path / "lanes.toml"
    target.write_text("")
    link = second_user.shared / "lanes.toml"
    link.symlink_to(target)
    os.lchown(link, OTHER_UID, OTHER_UID)
    second_user.shared.chmod(0o1777)
    found = untrusted_part(link)
    assert found is not None
    assert found.part == str(link)


def test_directories_above_your_home_are_not_judged(tmp_path: Path) -> None:
    """The walk judges from your home down: a too-open directory above it is the system's."""
    above = tmp_path / "Users"
    home = above / "me"
    home.mkdir(parents=True)
    above.chmod(0o777)
    (home / "lanes.toml").write_text("")
    assert untrusted_part(home / "lanes.toml", home=home) is None
    found = untrusted_part(home / "lanes.toml", home=tmp_path / "elsewhere")
    assert found is not None
    assert found.part == str(above)


def test_the_fix_is_a_chmod_of_yours_and_never_a_chown_of_anothers_directory(
    second_user: SecondUser, tmp_path: Path
) -> None:
    """Exit 69 with one line each: your too-open part gets a quoted chmod; another user's
    directory the place of your own the caller names, never `chown` (which would take it
    over); another user's file in your directory a copy of your own."""
    config = tmp_path / "it's lanes.toml"
    config.write_text("")
    config.chmod(0o666)
    with pytest.raises(UnsafeStateError) as caught:
        check_trusted(config, "configuration", elsewhere="use ~/mine")
    assert caught.value.exit_code is ExitCode.UNAVAILABLE
    assert caught.value.message.startswith(f"{config}: configuration is writable by group")
    assert caught.value.hint.startswith("chmod go-w '")
    theirs = second_user.mkdir("theirs")
    with pytest.raises(UnsafeStateError) as caught:
        check_trusted(theirs / "q", "queue directory", elsewhere="use ~/mine")
    assert caught.value.message.startswith(
        f"{theirs / 'q'}: queue directory is reached through {theirs}, which is owned by uid "
        f"{OTHER_UID} (nobody)"
    )
    assert caught.value.hint == "use ~/mine"
    config.chmod(0o644)
    os.chown(config, OTHER_UID, OTHER_UID)
    with pytest.raises(UnsafeStateError) as caught:
        check_trusted(config, "configuration", elsewhere="use ~/mine")
    assert "chown" not in caught.value.hint
    assert caught.value.hint.startswith("check what it says, then replace it with a copy")
    for error in caught.value.message, caught.value.hint:
        assert "\n" not in error
