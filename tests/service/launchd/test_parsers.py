"""The launchctl parsers against every real capture, plus the variations real output shows.

Each file in tests/launchd/samples (byte-identical copies of ../shared/launchctl-samples) is a
test case with the values it must produce. A sample file is read unchanged; its capture is the
text after the `# ---` line, and parsing the whole file (header comments included) must give
the same result.
"""

from __future__ import annotations

import os
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lanekit.service.launchd import LaunchctlError, ListEntry, ServiceInfo
from lanekit.service.launchd.launchctl import (
    ERROR_TEXT,
    decode_wait_status,
    error_for,
    error_text,
    find_entry,
    label_from_target,
    parse_domain_services,
    parse_error,
    parse_launchd_log,
    parse_list,
    parse_list_label,
    parse_print,
    parse_print_disabled,
    reports_failure,
    signal_name,
    split_list_status,
)
from places import REPO

SAMPLES = Path(__file__).resolve().parent / "samples"


def shared_samples() -> Path:
    """The shared research folder's captures: $LANEKIT_SAMPLES, else ../shared next to the repo."""
    override = os.environ.get("LANEKIT_SAMPLES")
    return Path(override) if override else REPO.parent / "shared" / "launchctl-samples"


def whole(name: str) -> str:
    """The sample file exactly as stored."""
    return (SAMPLES / f"{name}.txt").read_text(encoding="utf-8")


def body(name: str) -> str:
    """The captured output: everything after the `# ---` line, unchanged."""
    head, sep, captured = whole(name).partition("# ---\n")
    assert sep, f"{name}: no '# ---' line"
    assert all(line.startswith("#") for line in head.splitlines()), name
    return captured


# ------------------------------------------------------------------------- expected values

LIST_CASES: dict[str, tuple[int, list[ListEntry]]] = {
    "list-01": (
        34,
        [
            ListEntry(None, 0, "com.apple.CoreAuthentication.daemon"),
            ListEntry(279, 0, "com.apple.Finder"),
            ListEntry(399, 0, "com.apple.mdworker.shared.04000000-0000-0000-0000-000000000000"),
            ListEntry(None, 0, "com.apple.java.InstallOnDemand"),
        ],
    ),
    "list-02": (
        6,
        [
            ListEntry(805, 0, "homebrew.mxcl.elasticsearch"),
            ListEntry(None, 78, "homebrew.mxcl.postgresql"),
            ListEntry(807, 0, "homebrew.mxcl.redis"),
        ],
    ),
    "list-04": (
        16,
        [
            ListEntry(355, 0, "com.wacom.DataStoreMgr"),
            ListEntry(None, 0, "com.wireguard.macos.login-item-helper"),
            ListEntry(598, 0, "com.vmware.fusion.15568"),
            ListEntry(1320, 0, "com.microsoft.onenote.mac.18712"),
        ],
    ),
    "list-06": (
        3,
        [
            ListEntry(84650, 0, "com.northpolesec.santa.metricservice"),
            ListEntry(None, 0, "com.northpolesec.santa.bundleservice"),
            ListEntry(84623, 0, "ZMCG7MLDV9.com.northpolesec.santa.daemon"),
        ],
    ),
    "list-08": (1, [ListEntry(None, -43, "com.apple.CallHistorySyncHelper")]),
    "list-10": (
        6,
        [
            ListEntry(None, 0, "com.apple.SafariHistoryServiceAgent"),
            ListEntry(61509, -9, "com.apple.progressd"),
            ListEntry(84600, 0, "application.com.sublimetext.4.1845546.1845552"),
            ListEntry(2156, 0, "com.apple.Finder"),
        ],
    ),
}

LIST_LABEL_CASES: dict[str, dict[str, object]] = {
    "list-label-01": {
        "Label": "homebrew.mxcl.node_exporter",
        "PID": 40425,
        "LastExitStatus": 0,
        "OnDemand": True,
        "LimitLoadToSessionType": "Aqua",
        "StandardOutPath": "/usr/local/var/log/node_exporter.log",
        "StandardErrorPath": "/usr/local/var/log/node_exporter.err.log",
        "Program": "/usr/local/opt/node_exporter/bin/node_exporter_brew_services",
        "ProgramArguments": ["/usr/local/opt/node_exporter/bin/node_exporter_brew_services"],
        "last_exit": 0,
        "last_exit_code": 0,
        "last_signal": None,
    },
    "list-label-03": {
        "Label": "mouse.fix.helper",
        "PID": 709,
        "LastExitStatus": 0,
        "OnDemand": False,
        "LimitLoadToSessionType": "Aqua",
        "StandardOutPath": "/dev/null",
        "StandardErrorPath": "/dev/null",
        "Program": "/Applications/Mac Mouse Fix.app/Contents/Library/LoginItems/"
        "Mac Mouse Fix Helper.app/Contents/MacOS/Mac Mouse Fix Helper",
        "MachServices": {"com.nuebling.mac-mouse-fix.helper": "mach-port-object"},
        "PerJobMachServices": {
            "com.apple.tsm.portname": "mach-port-object",
            "com.apple.axserver": "mach-port-object",
        },
        "last_exit": 0,
        "last_exit_code": 0,
        "last_signal": None,
    },
}

_BROKKR = (
    "/private/var/folders/d8/hvxvltxn0fl4rmnd52sncbth0000gn/T/brokkr-seatbelt-probe-startup-48523.1"
)
_S2 = f"{_BROKKR}/startup-48523-S2.launchd.unboxed"
_S3 = f"{_BROKKR}/startup-48523-S3.launchd.seatbelt"
_HELPER = "/Users/runner/work/brokkr/brokkr/target/debug/seatbelt-probe-helper"
_SHIPIT = (
    "/Users/user1/Applications/Visual Studio Code - Insiders.app/Contents/Frameworks/"
    "Squirrel.framework/Resources/ShipIt"
)
_SHIPIT_CACHE = "/Users/user1/Library/Caches/com.microsoft.VSCodeInsiders.ShipIt"
_DEFAULT_PATH = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
_NEW_PROPS = ("runatload", "inferred program", "system service", "tle system")

PRINT_CASES: dict[str, dict[str, object]] = {
    "print-01": {
        "label": "com.microsoft.VSCodeInsiders.ShipIt",
        "state": "running",
        "pid": 3087,
        "last_exit_code": None,
        "last_signal": None,
        "last_exit_reason": None,
        "runs": 1,
        "program": _SHIPIT,
        "arguments": (
            _SHIPIT,
            "com.microsoft.VSCodeInsiders.ShipIt",
            f"{_SHIPIT_CACHE}/ShipItState.plist",
        ),
        "environment": {"XPC_SERVICE_NAME": "com.microsoft.VSCodeInsiders.ShipIt"},
        "default_environment": _DEFAULT_PATH,
        "inherited_environment": {
            "Apple_PubSub_Socket_Render": "/private/tmp/com.apple.launchd.ZqVikU4Yim/Render",
            "SSH_AUTH_SOCK": "/private/tmp/com.apple.launchd.lx5o1GBYry/Listeners",
        },
        "stdout_path": f"{_SHIPIT_CACHE}/ShipIt_stdout.log",
        "stderr_path": f"{_SHIPIT_CACHE}/ShipIt_stderr.log",
        "working_directory": None,
        "exit_timeout": 5,
        "minimum_runtime": 2,
        "run_interval": None,
        "successive_crashes": 0,
        "path": "(submitted by Electron.3066)",
        "type": None,
        "domain": "com.apple.xpc.launchd.user.domain.501.100009.Aqua",
        "properties": ("inferred program", "endpoints initialized"),
    },
    "print-03": {
        "label": "org.brokkr.seatbelt.probe.startup-48523.1.48523.startup.1.S2.launchd.unboxed",
        "state": "running",
        "pid": 48630,
        "last_exit_code": None,
        "last_signal": None,
        "runs": 1,
        "program": _HELPER,
        "arguments": (
            _HELPER,
            "startup",
            "--root",
            _S2,
            "--nonce",
            "48523-1789030276013157000",
            "--exit",
            "clean",
        ),
        "environment": {
            "OSLogRateLimit": "64",
            "XPC_SERVICE_NAME": (
                "org.brokkr.seatbelt.probe.startup-48523.1.48523.startup.1.S2.launchd.unboxed"
            ),
        },
        "default_environment": _DEFAULT_PATH,
        "inherited_environment": {
            "SSH_AUTH_SOCK": "/var/run/com.apple.launchd.CFkKnLTePe/Listeners"
        },
        "stdout_path": f"{_S2}/startup.out",
        "stderr_path": f"{_S2}/startup.err",
        "exit_timeout": 5,
        "minimum_runtime": 10,
        "successive_crashes": None,
        "path": f"{_S2}/startup.plist",
        "type": "LaunchAgent",
        "domain": "gui/501",
        "properties": _NEW_PROPS,
    },
    "print-05": {
        "label": "org.brokkr.seatbelt.probe.startup-48523.1.48523.startup.2.S3.launchd.seatbelt",
        "state": "not running",
        "pid": None,
        "last_exit_code": 2,
        "last_signal": None,
        "runs": 1,
        "program": "/usr/bin/sandbox-exec",
        "arguments": (
            "/usr/bin/sandbox-exec",
            "-f",
            f"{_S3}/inputs/policy.sb",
            _HELPER,
            "startup",
            "--root",
            _S3,
            "--nonce",
            "48523-1789030276013157000",
            "--exit",
            "clean",
        ),
        "stdout_path": f"{_S3}/startup.out",
        "stderr_path": f"{_S3}/startup.err",
        "exit_timeout": 5,
        "minimum_runtime": 10,
        "path": f"{_S3}/startup.plist",
        "type": "LaunchAgent",
        "domain": "gui/501",
        "properties": _NEW_PROPS,
    },
    "print-07": {
        "label": "com.wazuh.agent",
        "state": "running",
        "pid": 1486,
        "last_exit_code": 0,
        "runs": 3,
        "program": "/Library/StartupItems/WAZUH/Wazuh-launcher",
        "arguments": ("/Library/StartupItems/WAZUH/Wazuh-launcher",),
        "environment": {"XPC_SERVICE_NAME": "com.wazuh.agent"},
        "default_environment": _DEFAULT_PATH,
        "inherited_environment": {},
        "exit_timeout": 5,
        "minimum_runtime": 10,
        "successive_crashes": 0,
        "path": "/Library/LaunchDaemons/com.wazuh.agent.plist",
        "domain": "com.apple.xpc.launchd.domain.system",
        "properties": (),
    },
    "print-09": {
        "label": "com.apple.CallHistorySyncHelper",
        "state": "running",
        "pid": 518,
        "last_exit_code": None,
        "runs": 1,
        "program": (
            "/System/Library/PrivateFrameworks/CallHistory.framework/Support/CallHistorySyncHelper"
        ),
        "arguments": (
            "/System/Library/PrivateFrameworks/CallHistory.framework/Support/CallHistorySyncHelper",
        ),
        "environment": {"XPC_SERVICE_NAME": "com.apple.CallHistorySyncHelper"},
        "default_environment": _DEFAULT_PATH,
        "exit_timeout": 5,
        "minimum_runtime": 10,
        "successive_crashes": 0,
        "path": "/System/Library/LaunchDaemons/com.apple.CallHistorySyncHelper.plist",
        "type": None,
        "domain": "com.apple.xpc.launchd.domain.system",
        "properties": (
            "supports transactions",
            "supports pressured exit",
            "inferred program",
            "endpoints initialized",
            "platform binary",
        ),
    },
    "print-11": {
        "label": "com.whirl.research.probeC",
        "state": "running",
        "pid": None,
        "runs": None,
        "program": "/bin/sh",
        "arguments": (),
        "environment": {},
        "stdout_path": "/tmp/whirl-probe-c.out",
        "stderr_path": "/tmp/whirl-probe-c.err",
        "exit_timeout": 5,
        "minimum_runtime": 10,
        "path": (
            "/Users/govind.rajpurohit/Workspace/Personal/whirl/.worktrees/t_b9e349e6/docs/"
            "research/probes/com.whirl.research.probeC.plist"
        ),
        "type": "LaunchAgent",
        "domain": "gui/501",
        "properties": (),
    },
    "print-13": {
        "label": "",
        "state": None,
        "pid": None,
        "last_exit_code": 78,
        "last_signal": None,
        "arguments": ("/opt/homebrew/Cellar/skhd-zig/0.0.17/bin/skhd",),
        "program": None,
        "exit_timeout": None,
    },
}

PRINT_EXTRA: dict[str, dict[str, str]] = {
    "print-01": {"asid": "100009", "nice": "-1", "immediate reason": "semaphore"},
    "print-03": {"asid": "100002", "immediate reason": "speculative", "spawn type": "daemon (3)"},
    "print-05": {"asid": "100002", "active count": "0"},
    "print-07": {"immediate reason": "one-shot", "forks": "3"},
    "print-09": {"username": "mobile", "immediate reason": "ipc (mach)"},
    "print-11": {"active count": "1"},
    "print-13": {},
}

DISABLED_CASES: dict[str, dict[str, bool]] = {
    "print-disabled-01": {
        "com.docker.helper": False,
        "com.apple.ManagedClientAgent.enrollagent": True,
        "at.obdev.littlesnitch.agent": False,
        "5A4RE8SF68.com.tencent.xinWeChat.IPCHelper": True,
        "com.citrix.ServiceRecords": True,
        "com.apple.Siri.agent": True,
        "com.microsoft.update.agent": False,
        "io.tailscale.ipn.macos.login-item-helper": True,
        "com.cisco.anyconnect.notification": True,
        "com.citrix.ReceiverHelper": True,
        "com.apple.FolderActionsDispatcher": False,
        "com.oray.sunlogin.desktopagent": True,
        "com.citrix.AuthManager_Mac": True,
        "com.apple.appleseed.seedusaged.postinstall": True,
        "com.apple.ScriptMenuApp": True,
    },
}

DOMAIN_CASES: dict[str, tuple[list[ListEntry], dict[str, bool]]] = {
    "print-domain-01": (
        [
            ListEntry(887, None, "net.jwpconsulting.postgresql"),
            ListEntry(866, None, "com.apple.syncdefaultsd"),
        ],
        {"com.apple.rcd": True},
    ),
    "print-domain-03": ([], {}),
}

ERROR_CASES: dict[str, tuple[int | None, int, str, str, str]] = {
    # name: (exit status as stated, or None when the capture does not show it),
    #        expected code, one-line message, a word of the meaning, a part of the hint
    "errors-01": (
        5,
        5,
        "Bootstrap failed: 5: Input/output error",
        "refused without saying why",
        "sudo launchctl bootstrap gui/501 "
        "/Users/mkr/Library/LaunchAgents/homebrew.mxcl.noclamshell.plist",
    ),
    "errors-03": (
        None,
        5,
        "Load failed: 5: Input/output error",
        "refused without saying why",
        "lanekit doctor",
    ),
    "errors-05": (
        None,
        36,
        "Boot-out failed: 36: Operation now in progress",
        "still exiting",
        "reports it missing, then continue",
    ),
    "errors-07": (64, 64, "Unrecognized target specifier.", "command line", "launchctl help"),
    "errors-09": (
        113,
        113,
        'Could not find service "com.iamkroot.trakt-scrobbler" in domain for port',
        "no job with this label is loaded",
        "launchctl print system/com.iamkroot.trakt-scrobbler",
    ),
    "errors-11": (
        119,
        119,
        "/Library/LaunchDaemons/org.nixos.darwin-store.plist: Service is disabled",
        "disabled override",
        "launchctl enable system/org.nixos.darwin-store",
    ),
    "errors-13": (
        None,
        125,
        "Bootstrap failed: 125: Domain does not support specified action",
        "without a GUI login session",
        "LANEKIT_LAUNCHD_DOMAIN=user",
    ),
    "errors-15": (
        None,
        112,
        "Could not find domain for",
        "logged in at the Mac's screen",
        "LANEKIT_LAUNCHD_DOMAIN=user",
    ),
    "errors-17": (
        None,
        112,
        "Could not find domain for",
        "logged in at the Mac's screen",
        "launchctl bootstrap user/502",
    ),
    "errors-19": (
        None,
        122,
        "/Library/LaunchDaemons/com.github.outset.boot.plist: Path had bad ownership/permissions",
        "not owned by",
        "sudo chown root:wheel /Library/LaunchDaemons/com.github.outset.boot.plist && "
        "sudo chmod 644 /Library/LaunchDaemons/com.github.outset.boot.plist",
    ),
    "errors-21": (
        None,
        122,
        "launchctl: Dubious ownership on file (skipping): "
        "/Library/LaunchDaemons/org.asterisk.asterisk.plist",
        "not owned by",
        "sudo chown root:wheel /Library/LaunchDaemons/org.asterisk.asterisk.plist",
    ),
    "errors-23": (
        None,
        113,
        "launchctl: Error unloading: homebrew.mxcl.postgresql",
        "no job with this label is loaded",
        "launchctl print system/homebrew.mxcl.postgresql",
    ),
    "errors-25": (
        None,
        113,
        "/Users/<My user>/Library/LaunchAgents/LocationChanger.plist: "
        "Could not find specified service",
        "no job with this label is loaded",
        "'/Users/<My user>/Library/LaunchAgents/LocationChanger.plist'",
    ),
    "errors-27": (
        None,
        5,
        "Unload failed: 5: Input/output error",
        "ran as root",
        "without sudo",
    ),
    "errors-29": (
        None,
        150,
        "/System/Library/LaunchDaemons/com.apple.mDNSResponder.plist: "
        "Operation not permitted while System Integrity Protection is engaged",
        "System Integrity Protection",
        "leave jobs under /System alone",
    ),
    "errors-31": (
        None,
        113,
        "2018-10-26 08:46:07-04 Amits-MacBook-Air installd[495]: ./postinstall: "
        "/Library/LaunchDaemons/com.bearisdriving.BGM.XPCHelper.plist: "
        "Could not find specified service",
        "no job with this label is loaded",
        "launchctl bootstrap system /Library/LaunchDaemons/com.bearisdriving.BGM.XPCHelper.plist",
    ),
    "errors-33": (
        113,
        113,
        "Error: Failure while executing; `/bin/launchctl\\ list\\ \\'homebrew.mxcl.dnsmasq\\'` "
        "exited with 113. Here's the output:",
        "no job with this label is loaded",
        "lanekit apply",
    ),
    "errors-35": (
        5,
        5,
        "Bootstrap failed: 5: Input/output error",
        "refused without saying why",
        "lanekit doctor",
    ),
}

LOG_CASES: dict[str, list[dict[str, object]]] = {
    "launchd-log-01": [
        {"label": "com.apple.CoreLocationAgent", "pid": 94894, "ran_for": None},
        {
            "label": "com.apple.finder.FinderSync.IsExtensionEnabled",
            "pid": None,
            "ran_for": 0,
            "respawn_in": 10,
        },
        {"label": "com.apple.KernelEventAgent", "ran_for": 4, "respawn_in": 6},
        {"label": None, "domain": "com.apple.xpc.launchd.user.domain.501.100006.Aqua"},
        {"label": "com.apple.apsd", "ran_for": 4, "respawn_in": 6},
        {"label": "com.apple.metadata.mds", "ran_for": 4, "respawn_in": 6},
        {"label": "com.apple.corebrightnessd", "ran_for": 4, "respawn_in": 6},
        {"label": "com.apple.eoshostd", "ran_for": 4, "respawn_in": 6},
    ],
    "launchd-log-02": [
        {"label": "org.pmbuko.kerbminder", "ran_for": 29, "respawn_in": 16},
    ],
    "launchd-log-03": [
        {
            "label": None,
            "domain": "com.apple.xpc.launchd.user.domain.501.100006.Aqua",
            "path": "/Users/udomkarn/Library/LaunchAgents/net.hannesschmidt.EnvAgent.plist",
        },
    ],
    "launchd-log-04": [
        {"label": None, "domain": "system"},
        {"label": None, "domain": "system"},
        {"label": "org.nixos.darwin-store", "domain": "system", "state": None},
        {"label": "org.nixos.darwin-store", "state": "spawn scheduled", "pid": None},
        {"label": "org.nixos.darwin-store", "state": "spawning"},
        {"label": "org.nixos.darwin-store", "message": "launching: speculative"},
        {"label": "org.nixos.darwin-store", "pid": 70},
        {"label": "org.nixos.darwin-store", "pid": 70, "state": None},
        {"label": "org.nixos.darwin-store", "pid": 70, "state": "xpcproxy"},
        {"label": "org.nixos.nix-daemon", "pid": None},
        {"label": "org.nixos.nix-daemon", "state": "spawn scheduled"},
        {"label": "org.nixos.nix-daemon", "state": "spawning"},
        {"label": "org.nixos.nix-daemon", "message": "launching: speculative"},
    ],
    "launchd-log-05": [
        {"label": "[0x0-0x3b03b].org.hackety.hacketyhack", "pid": 503, "exit_code": 126},
    ],
}

ALL_CASES = (
    set(LIST_CASES)
    | set(LIST_LABEL_CASES)
    | set(PRINT_CASES)
    | set(DISABLED_CASES)
    | set(DOMAIN_CASES)
    | set(ERROR_CASES)
    | set(LOG_CASES)
)


# ------------------------------------------------------------------------- the fixtures


def test_every_sample_has_expected_values() -> None:
    """Each capture in tests/launchd/samples is a test case; a new capture without
    expectations fails here instead of going untested."""
    names = {path.stem for path in SAMPLES.glob("*.txt")}
    assert names, "no samples found"
    assert names == ALL_CASES


def test_samples_match_the_shared_folder() -> None:
    """The repo's copies are byte-identical to ../shared/launchctl-samples (when present)."""
    shared = shared_samples()
    if not shared.is_dir():
        pytest.skip(f"{shared} is not present (only in the development checkout)")
    theirs = {path.name: path.read_bytes() for path in shared.glob("*.txt")}
    ours = {path.name: path.read_bytes() for path in SAMPLES.glob("*.txt")}
    assert sorted(theirs) == sorted(ours)
    assert [name for name in ours if ours[name] != theirs[name]] == []


# ------------------------------------------------------------------------------ list


@pytest.mark.parametrize("name", sorted(LIST_CASES))
def test_list_samples(name: str) -> None:
    """`launchctl list` captures give the stated rows, count and values, labels whole."""
    count, expected_rows = LIST_CASES[name]
    entries = parse_list(body(name))
    assert len(entries) == count
    for row in expected_rows:
        assert find_entry(entries, row.label) == row
    assert parse_list(whole(name)) == entries


def test_list_header_is_skipped_and_first_row_kept() -> None:
    """The `PID Status Label` header is not a row; the row after it is."""
    entries = parse_list(body("list-01"))
    assert entries[0] == ListEntry(None, 0, "com.apple.CoreAuthentication.daemon")
    assert all(entry.label != "Label" for entry in entries)


def test_list_without_header_and_with_elision() -> None:
    """A grep'd table (no header) and a trailing `...` line parse to the real rows only."""
    assert parse_list(body("list-02"))[0].label == "homebrew.mxcl.elasticsearch"
    assert parse_list(body("list-10"))[-1] == ListEntry(2156, 0, "com.apple.Finder")


def test_find_entry_is_exact() -> None:
    """find_entry matches the whole label, not a prefix (mysql vs mysql@5.7)."""
    entries = parse_list("-\t0\thomebrew.mxcl.mysql@5.7\n12\t0\thomebrew.mxcl.mysql\n")
    assert find_entry(entries, "homebrew.mxcl.mysql") == ListEntry(12, 0, "homebrew.mxcl.mysql")
    assert find_entry(entries, "homebrew.mxcl") is None
    assert find_entry(entries, "HOMEBREW.MXCL.MYSQL") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PID\tStatus\tLabel\r\n12\t0\tcom.x\r\n", [ListEntry(12, 0, "com.x")]),
        ("12   -15   com.x  \n", [ListEntry(12, -15, "com.x")]),
        (
            "-\t0\tUIKitApplication:com.apple.InCallService[0x287]\n",
            [ListEntry(None, 0, "UIKitApplication:com.apple.InCallService[0x287]")],
        ),
        ("-\t0\tMy Agent (beta) v2\n", [ListEntry(None, 0, "My Agent (beta) v2")]),
        ("- 0 My Agent v2\n", [ListEntry(None, 0, "My Agent v2")]),
        ("-\t-\tcom.x\n", [ListEntry(None, None, "com.x")]),
        ("0 (pe) com.x\n", [ListEntry(0, None, "com.x")]),
        ("-\t78\tcom.yang.hello.plist\n", [ListEntry(None, 78, "com.yang.hello.plist")]),
        ("\ufeffPID\tStatus\tLabel\n\n   \nnot a row\n12 0\n", []),
        ("garbage here today\nabc\t0\tcom.x\n", []),
    ],
)
def test_list_variations(text: str, expected: list[ListEntry]) -> None:
    """CRLF, runs of spaces, labels with brackets/colons/spaces, `-` statuses, flag columns,
    BOMs, blank and garbage lines: rows come out whole, everything else is skipped."""
    assert parse_list(text) == expected


@pytest.mark.parametrize(
    ("status", "expected"),
    [(0, (0, None)), (78, (78, None)), (-9, (None, 9)), (-15, (None, 15)), (-43, (None, None))],
)
def test_split_list_status(status: int, expected: tuple[int | None, int | None]) -> None:
    """A list status is an exit code, minus a signal, or (iOS -43) neither."""
    assert split_list_status(status) == expected


_LABEL_CHARS = st.characters(
    blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Zs"), blacklist_characters="\ufeff"
)
_LABELS = st.text(alphabet=st.one_of(_LABEL_CHARS, st.just(" ")), min_size=1, max_size=40).filter(
    lambda s: s == s.strip() and not s.startswith("(")
)
_ENTRIES = st.lists(
    st.builds(
        ListEntry,
        pid=st.none() | st.integers(min_value=1, max_value=99999),
        last_exit=st.none() | st.integers(min_value=-200, max_value=255),
        label=_LABELS,
    ),
    max_size=12,
)


def _render(entries: list[ListEntry], separator: str) -> str:
    lines = [separator.join(["PID", "Status", "Label"])]
    for entry in entries:
        pid = "-" if entry.pid is None else str(entry.pid)
        status = "-" if entry.last_exit is None else str(entry.last_exit)
        lines.append(separator.join([pid, status, entry.label]))
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(entries=_ENTRIES, separator=st.sampled_from(["\t", " ", "   ", " \t"]))
def test_list_round_trips(entries: list[ListEntry], separator: str) -> None:
    """A generated table, tab- or space-separated, parses back to exactly its rows."""
    assert parse_list(_render(entries, separator)) == entries


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parsers_never_crash(text: str) -> None:
    """Arbitrary text never raises from any parser; the error parser always gives one line."""
    assert isinstance(parse_list(text), list)
    assert isinstance(parse_list_label(text), dict)
    assert isinstance(parse_print(text), ServiceInfo)
    assert isinstance(parse_print_disabled(text), dict)
    assert isinstance(parse_domain_services(text), list)
    assert isinstance(parse_launchd_log(text), list)
    error = parse_error(text, 5)
    assert error.code == 5
    assert "\n" not in error.message
    assert error.meaning
    assert error.hint


# ------------------------------------------------------------------------ list <label>


@pytest.mark.parametrize("name", sorted(LIST_LABEL_CASES))
def test_list_label_samples(name: str) -> None:
    """`launchctl list <label>` captures parse to their keys, nested dicts and decoded exit."""
    parsed = parse_list_label(body(name))
    assert parsed == LIST_LABEL_CASES[name]
    assert parse_list_label(whole(name)) == parsed


@pytest.mark.parametrize(
    ("raw", "exit_code", "signal", "last_exit"),
    [
        (0, 0, None, 0),
        (256, 1, None, 1),
        (19968, 78, None, 78),
        (15, None, 15, -15),
        (9, None, 9, -9),
        (134, None, 6, -6),
    ],
)
def test_list_label_decodes_the_wait_status(
    raw: int, exit_code: int | None, signal: int | None, last_exit: int
) -> None:
    """LastExitStatus is a raw wait(2) status: 256 is exit 1, 19968 exit 78, 15 SIGTERM."""
    text = f'{{\n\t"Label" = "com.x";\n\t"LastExitStatus" = {raw};\n}};\n'
    parsed = parse_list_label(text)
    assert (parsed["last_exit_code"], parsed["last_signal"], parsed["last_exit"]) == (
        exit_code,
        signal,
        last_exit,
    )
    assert parsed["LastExitStatus"] == raw
    assert "PID" not in parsed


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(0, (0, None)), (256, (1, None)), (19968, (78, None)), (78, (78, None)), (0x7F, (None, None))],
)
def test_decode_wait_status_edges(raw: int, expected: tuple[int | None, int | None]) -> None:
    """Values that are no valid wait status (78 is no signal) are read as plain exit codes;
    a stopped status (0x7f) is neither an exit nor a death."""
    assert decode_wait_status(raw) == expected


def test_list_label_variations() -> None:
    """CRLF, no outer braces, nested arrays of dicts, escapes, negative ints and junk survive."""
    text = (
        '"Label" = "a \\"quoted\\" label";\r\n"TimeOut" = 30;\r\n"Nice" = -5;\r\n'
        '"Sockets" = ( { "Port" = "80"; }; "x"; );\r\n'
        '"LimitLoadToSessionType" = "System";\r\n'
    )
    parsed = parse_list_label(text)
    assert parsed["Label"] == 'a "quoted" label'
    assert parsed["TimeOut"] == 30
    assert parsed["Nice"] == -5
    assert parsed["Sockets"] == [{"Port": "80"}, "x"]
    assert parsed["last_exit"] is None
    assert parse_list_label(body("errors-09")) == {
        "last_exit": None,
        "last_exit_code": None,
        "last_signal": None,
    }


# ------------------------------------------------------------------------------- print


@pytest.mark.parametrize("name", sorted(PRINT_CASES))
def test_print_samples(name: str) -> None:
    """`launchctl print` captures, old and new layouts and fragments, give their values."""
    info = parse_print(body(name))
    actual = {key: getattr(info, key) for key in PRINT_CASES[name]}
    assert actual == PRINT_CASES[name]
    for key, value in PRINT_EXTRA[name].items():
        assert info.extra[key] == value
    assert parse_print(whole(name)) == info


def test_print_nested_blocks_do_not_leak() -> None:
    """Fields inside nested blocks (coalition `state = active`, endpoint `active = 0`, event
    trigger `state = 0`) never overwrite the service's own top-level fields."""
    assert parse_print(body("print-03")).state == "running"
    assert parse_print(body("print-03")).type == "LaunchAgent"
    assert parse_print(body("print-09")).state == "running"
    assert "port" not in parse_print(body("print-01")).extra
    assert "stream" not in parse_print(body("print-09")).extra


def test_print_fragment_takes_the_callers_label() -> None:
    """A headerless fragment uses the label the caller asked about."""
    assert parse_print(body("print-13"), label="com.jackielii.skhd").label == ("com.jackielii.skhd")
    assert parse_print(body("print-07"), label="ignored").label == "com.wazuh.agent"


@pytest.mark.parametrize(
    ("line", "code", "signal", "reason"),
    [
        ("last exit code = 78: EX_CONFIG", 78, None, None),
        ("last exit code = 0", 0, None, None),
        ("last exit code = (never exited)", None, None, None),
        ("last exit code = (abandoned)", None, None, "abandoned"),
        ("last terminating signal = Killed: 9", None, 9, None),
        ("last terminating signal = Terminated: 15", None, 15, None),
        ("last terminating signal = Segmentation fault", None, 11, None),
        ("last exit reason = OS_REASON_JETSAM", None, None, "OS_REASON_JETSAM"),
    ],
)
def test_print_last_exit_forms(
    line: str, code: int | None, signal: int | None, reason: str | None
) -> None:
    """Every way print reports the last exit decodes to code, signal and reason."""
    info = parse_print(f"gui/501/com.x = {{\n\tstate = not running\n\t{line}\n}}\n")
    assert (info.last_exit_code, info.last_signal, info.last_exit_reason) == (code, signal, reason)


def test_print_variations() -> None:
    """CRLF, a user/<uid> header, run interval, working directory, empty `properties = `,
    `global environment`, values with ` = ` inside, and unknown fields all read correctly."""
    text = (
        "user/503/com.example.lane = {\r\n"
        "\tactive count = 0\r\n"
        "\tpath = /Users/x/Library/LaunchAgents/com.example.lane.plist\r\n"
        "\ttype = LaunchAgent\r\n"
        "\tstate = spawn scheduled\r\n"
        "\tprogram = /usr/bin/python3\r\n"
        "\targuments = {\r\n\t\t/usr/bin/python3\r\n\t\t-m\r\n\t\tlanekit\r\n\t}\r\n"
        "\tworking directory = /Users/x/queue\r\n"
        "\tglobal environment = {\r\n\t\tLANG => en_US.UTF-8\r\n\t}\r\n"
        "\tenvironment = {\r\n\t\tPATH => /opt/bin:/usr/bin\r\n\t\tEMPTY =>\r\n\t}\r\n"
        "\tdomain = user/503\r\n"
        "\tminimum runtime = 30\r\n"
        "\texit timeout = 20\r\n"
        "\truns = 38771\r\n"
        "\tsuccessive crashes = 4\r\n"
        "\trun interval = 300 seconds\r\n"
        "\tchecked allocations = 0 (queried = 1)\r\n"
        "\tbrand new field = 7\r\n"
        "\tevent triggers = {\r\n"
        "\t\tcom.apple.launchd.calendarinterval.1 => {\r\n"
        "\t\t\tstate = 1\r\n"
        '\t\t\tdescriptor = {\r\n\t\t\t\t"Minute" => 5\r\n\t\t\t}\r\n'
        "\t\t}\r\n"
        "\t}\r\n"
        "\tproperties = \r\n"
        "}\r\n"
    )
    info = parse_print(text)
    assert info.label == "com.example.lane"
    assert info.state == "spawn scheduled"
    assert info.arguments == ("/usr/bin/python3", "-m", "lanekit")
    assert info.working_directory == "/Users/x/queue"
    assert info.environment == {"PATH": "/opt/bin:/usr/bin", "EMPTY": ""}
    assert info.inherited_environment == {"LANG": "en_US.UTF-8"}
    assert info.domain == "user/503"
    assert (info.minimum_runtime, info.exit_timeout, info.runs) == (30, 20, 38771)
    assert (info.successive_crashes, info.run_interval) == (4, 300)
    assert info.properties == ()
    assert info.extra["checked allocations"] == "0 (queried = 1)"
    assert info.extra["brand new field"] == "7"
    assert "descriptor" not in info.extra


def test_print_ignores_text_after_the_service_block() -> None:
    """procinfo-style output continues after the block; those lines are not the job's."""
    text = body("print-09") + "program path = /elsewhere\npid = 1\n"
    info = parse_print(text)
    assert (info.program, info.pid) == (PRINT_CASES["print-09"]["program"], 518)


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("gui/501/com.x", "com.x"),
        ("user/501/com.x.y", "com.x.y"),
        ("system/com.x", "com.x"),
        ("com.x", "com.x"),
        ("gui/501", "gui/501"),
    ],
)
def test_label_from_target(name: str, label: str) -> None:
    """Service targets lose their domain part; anything else is kept."""
    assert label_from_target(name) == label


def test_service_info_fields_are_all_defaulted() -> None:
    """Every ServiceInfo field but the label has a default, so partial output always builds."""
    required = [
        f.name for f in fields(ServiceInfo) if f.default is MISSING and f.default_factory is MISSING
    ]
    assert required == ["label"]
    assert ServiceInfo(label="x").extra == {}


# ---------------------------------------------------------------- print-disabled, domains


@pytest.mark.parametrize("name", sorted(DISABLED_CASES))
def test_print_disabled_samples(name: str) -> None:
    """`print-disabled` reads `=> true|false`, and ignores the login item associations block."""
    parsed = parse_print_disabled(body(name))
    assert parsed == DISABLED_CASES[name]
    assert "version.com.docker.helper" not in parsed
    assert parse_print_disabled(whole(name)) == parsed


@pytest.mark.parametrize("name", sorted(DOMAIN_CASES))
def test_domain_samples(name: str) -> None:
    """`print <domain>` gives its service rows and its disabled services (`=> disabled`)."""
    rows, disabled = DOMAIN_CASES[name]
    assert parse_domain_services(body(name)) == rows
    assert parse_print_disabled(body(name)) == disabled
    assert parse_domain_services(whole(name)) == rows


def test_domain_rows_with_flags_and_zero_pids() -> None:
    """macOS 26 `(pe)` rows, PID 0 (not running) and statuses all read as ListEntry values."""
    text = (
        "gui/501 = {\n\tservices = {\n"
        "\t\t       0      - \tcom.a\n"
        "\t\t     887     78 \tcom.b\n"
        "\t\t       0   (pe) \tcom.c\n"
        "\t\t       0      - (pe)\tcom.d\n"
        "\t}\n"
        '\tdisabled services = {\n\t\t"com.a" => enabled\n\t\t"com.e" => disabled\n\t}\n}\n'
    )
    assert parse_domain_services(text) == [
        ListEntry(None, None, "com.a"),
        ListEntry(887, 78, "com.b"),
        ListEntry(None, None, "com.c"),
        ListEntry(None, None, "com.d"),
    ]
    assert parse_print_disabled(text) == {"com.a": False, "com.e": True}


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_error_samples(name: str) -> None:
    """parse_error on each error capture gives its code, one-line message, meaning and a hint
    naming the command that fixes it."""
    returncode, code, message, meaning, hint = ERROR_CASES[name]
    error = parse_error(body(name), returncode)
    assert isinstance(error, LaunchctlError)
    assert error.code == code
    assert error.message == message
    assert meaning in error.meaning
    assert hint in error.hint
    assert parse_error(whole(name), returncode).code == code


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_error_samples_are_recognised_as_failures(name: str) -> None:
    """Every launchctl error capture reads as a failure even if the exit status were 0
    (legacy load/unload); only Homebrew's own wrapper line (errors-33) is not launchctl's."""
    assert reports_failure(body(name)) is (name != "errors-33")


def test_bootstrap_error_5_lists_its_real_causes() -> None:
    """A bare `Bootstrap failed: 5` (errors-01, errors-35) names the causes seen on real Macs:
    an external volume (openclaw#60398), Allow in the Background, quarantine and the session
    type, beside the label still loaded, and the doctor checks that tell them apart."""
    for name in ("errors-01", "errors-35"):
        error = parse_error(body(name), 5)
        for cause in (
            "external volume",
            "Allow in the Background",
            "quarantine",
            "session type",
            "already loaded",
        ):
            assert cause in error.meaning, (name, cause)
        assert "volume.external" in error.hint
        assert "launchd.background-item-off" in error.hint


def test_the_exit_status_wins_over_the_words() -> None:
    """A real error exit status is the code; the words then choose the explanation."""
    error = parse_error("Bad request.\nCould not find domain for user gui: 501\n", 112)
    assert error.code == 112
    assert "launchctl bootstrap user/501" in error.hint
    error = parse_error(body("errors-35"), 3)
    assert error.code == 3
    assert error.message == "Boot-out failed: 3: No such process"


def test_command_context_fills_the_hint() -> None:
    """With the command's arguments, the message names the command and the hint the target."""
    error = parse_error(
        "Bootstrap failed: 5: Input/output error\n"
        "Try re-running the command as root for richer errors.\n",
        5,
        args=("bootstrap", "gui/501", "/Users/me/Library/LaunchAgents/com.lane.plist"),
    )
    assert error.message == (
        "launchctl bootstrap gui/501 /Users/me/Library/LaunchAgents/com.lane.plist: "
        "Bootstrap failed: 5: Input/output error"
    )
    assert "sudo launchctl bootstrap gui/501 /Users/me/Library/LaunchAgents/com.lane.plist" in (
        error.hint
    )
    disabled = parse_error("Service is disabled", 0, args=("bootstrap", "user/501", "/x/a.plist"))
    assert disabled.code == 119
    assert "launchctl enable user/501/a" in disabled.hint


def test_user_plist_permissions_hint_uses_the_users_ownership() -> None:
    """A LaunchAgents plist in the home folder is fixed with chmod 644 and chown to oneself."""
    error = parse_error("/Users/me/Library/LaunchAgents/a b.plist: Path had bad ownership", 0)
    assert error.code == 122
    assert "chmod 644 '/Users/me/Library/LaunchAgents/a b.plist'" in error.hint
    assert 'chown "$(id -un)"' in error.hint


@pytest.mark.parametrize(
    ("stderr", "returncode", "code", "meaning"),
    [
        ("<path>: Invalid property list", 0, 109, "not a valid property list"),
        ("Bootstrap failed: 37: Operation already in progress", 37, 37, "already loaded"),
        ("Bootstrap failed: 17: File exists", 17, 17, "already loaded"),
        ("com.x: Already loaded", 0, 37, "already loaded"),
        ("Boot-out failed: 3: No such process", 3, 3, "nothing to unload"),
        ("Bootstrap failed: 134: Service cannot load in requested session", 134, 134, "Limit"),
        ("Requestor is not a platform binary", 154, 154, "Apple-signed"),
        ("Could not print domain: 1: Operation not permitted", 1, 1, "may not change"),
        ("", 2, 2, "does not exist"),
        ("something new entirely", 201, 201, "launchctl error 201"),
        ("Could not enable service: 125: Domain does not support specified action", 0, 125, "GUI"),
        ("/a/x.plist: Invalid property list\nLoad failed: 5: Input/output error", 0, 5, "valid"),
        (
            "/S/x.plist: Operation not permitted while System Integrity Protection is engaged",
            1,
            150,
            "System Integrity Protection",
        ),
    ],
)
def test_error_codes_and_words(stderr: str, returncode: int, code: int, meaning: str) -> None:
    """Codes and messages beyond the captures map to the right code and explanation."""
    error = parse_error(stderr, returncode)
    assert error.code == code
    assert meaning in error.meaning


@pytest.mark.parametrize("code", [3, 5, 36, 37, 64, 113, 119, 122, 125, 150, 154])
def test_error_for_speaks_like_parse_error(code: int) -> None:
    """error_for gives the same code and explanation parse_error gives for launchctl's line."""
    built = error_for(code)
    parsed = parse_error(f"Bootstrap failed: {code}: {error_text(code)}", code)
    assert built.code == code
    assert built.message == f"{code}: {ERROR_TEXT[code]}"
    assert (built.meaning, built.hint) == (parsed.meaning, parsed.hint)


def test_error_for_follows_a_more_specific_message() -> None:
    """A code 5 whose message says `Service is disabled` is explained as disabled, with the
    caller's target filled in."""
    error = error_for(5, "/p/com.x.plist: Service is disabled", domain="gui/501", label="com.x")
    assert error.code == 5
    assert "disabled override" in error.meaning
    assert "launchctl enable gui/501/com.x" in error.hint


def test_error_text_and_signal_names() -> None:
    """launchctl's own words per code, and macOS signal names (not Linux numbering)."""
    assert error_text(113) == "Could not find specified service"
    assert error_text(122) == "Path had bad ownership/permissions"
    assert error_text(999) == "Unknown error: 999"
    assert signal_name(10) == "SIGBUS"
    assert signal_name(15) == "SIGTERM"
    assert signal_name(99) == "signal 99"


# ------------------------------------------------------------------------------ logs


@pytest.mark.parametrize("name", sorted(LOG_CASES))
def test_launchd_log_samples(name: str) -> None:
    """launchd's log lines give label, domain, pid, throttle delay, state, exit code, path."""
    events = parse_launchd_log(body(name))
    expected = LOG_CASES[name]
    assert len(events) == len(expected)
    for event, wanted in zip(events, expected, strict=True):
        assert {key: getattr(event, key) for key in wanted} == wanted
    assert parse_launchd_log(whole(name)) == events


def test_launchd_log_other_forms() -> None:
    """10.9 throttling and abnormal exits by signal are decoded too."""
    events = parse_launchd_log(
        "launchd[1] (com.x[12]): Throttling respawn: Will start in 7 seconds\n"
        "launchd[1] (com.x[13]): Exited abnormally: Killed: 9\n"
        "launchd[1] (gui/501/com.y [14]) <Notice>: exited due to SIGTERM\n"
    )
    assert [(e.label, e.pid, e.respawn_in, e.signal) for e in events] == [
        ("com.x", 12, 7, None),
        ("com.x", 13, None, 9),
        ("com.y", 14, None, 15),
    ]
