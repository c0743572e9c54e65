"""(j) one `lanekit watch` pass over healthy lanes vs an empty `lanekit run`."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from benchkit.common import LANE, LANEKIT, PY, REPO, Figure, fresh, lane_spec, median, run_cmd
from lanekit.queue.directory.backend import Queue
from lanekit.run.lanelog import format_line, format_ts
from lanekit.service.launchd.plist import ENTRYPOINT_CODE, INTERPRETER_FLAGS


def watch_world(
    root: Path, lanes: int, records: int, log_lines: int
) -> tuple[Path, dict[str, str]]:
    """(j)'s world: `lanes` healthy lanes (one queue each, hourly) holding `records` finished
    jobs in all (a done/ file and a record each) and `log_lines` lines of lane log each, plus
    `[watch]` with a command channel; applied in an emulated domain under `root`."""
    where = fresh(root, "watch")
    env = {
        **os.environ,
        "LANEKIT_STATE_DIR": str(where / "state"),
        "LANEKIT_LAUNCH_AGENTS": str(where / "state" / "LaunchAgents"),
        "LANEKIT_LAUNCHD": "emulated",
        "NO_COLOR": "1",
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    now = time.time()
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    text = '[defaults]\nlabel_prefix = "local.benchwatch"\npath = ["/usr/bin", "/bin"]\n'
    per = records // lanes
    for n in range(lanes):
        queue = where / f"q{n}"
        text += (
            f'\n[queues.q{n}]\ndir = "{queue}"\n\n[lanes.l{n}]\nqueue = "q{n}"\n'
            f'command = ["/bin/true", "{{job}}"]\nevery = "1h"\n'
        )
        for sub in ("tmp", "queue", "claimed", "failed", "delayed", "records", "logs"):
            (queue / sub).mkdir(parents=True, exist_ok=True)
        (queue / "done" / day).mkdir(parents=True)
        record = {
            "attempts": 1,
            "error": None,
            "lane": f"l{n}",
            "queued_at": "2026-11-30T10:00:00.000Z",
            "schema": 1,
            "state": "succeeded",
            "updated_at": "2026-11-30T10:00:01.000Z",
        }
        ids = [f"{int((now - 86400 + i) * 1e9):020d}-{1000 + n:07d}-{i:08x}" for i in range(per)]
        for job_id in ids:
            (queue / "done" / day / f"{job_id}.json").write_bytes(b"{}")
            (queue / "records" / f"{job_id}.json").write_text(
                json.dumps({**record, "job_id": job_id})
            )
        start = now - 7 * 86400
        with (queue / "logs" / f"l{n}.log").open("w", encoding="utf-8") as log:
            for k in range(log_lines):
                stamp = format_ts(start + k * (7 * 86400 - 7200) / log_lines)
                event = "done" if k % 2 else "claimed"
                log.write(format_line(stamp, f"l{n}", event, {"job": f"{ids[k % per]}-{k}"}))
    sent = where / "sent.jsonl"
    text += f'\n[watch]\nevery = "5m"\ncommand = ["/bin/sh", "-c", "cat >> {sent}"]\n'
    config = where / "lanes.toml"
    config.write_text(text, encoding="utf-8")
    subprocess.run([*LANEKIT, "apply", "-c", str(config)], env=env, check=True, capture_output=True)
    subprocess.run([PY, "-m", "compileall", "-q", str(REPO / "src" / "lanekit")], check=False)
    return config, env


BUSY_JOBS = 10
"""Jobs each of two lanes runs between two passes in (j)'s busy case."""


def lane_run(config: Path, env: dict[str, str], n: int) -> tuple[Queue, list[str], dict[str, str]]:
    """(j)'s lane `l{n}`: its queue, and the argv and environment its plist gives launchd."""
    import plistlib

    from lanekit.config import load_config
    from lanekit.state.paths import Paths

    paths = Paths.from_env(env)
    lane = load_config(config, paths).lanes[f"l{n}"]
    job = plistlib.loads(paths.plist_for(lane.label).read_bytes())
    lane_env = {**job.get("EnvironmentVariables", {})}
    lane_env.pop("PYTHONDONTWRITEBYTECODE", None)
    return Queue(lane.queue.dir, durable=False), list(job["ProgramArguments"]), lane_env


MAC_DOMAIN = "gui/501"
APPLE_ROWS = 400
"""Services of a real gui domain besides the lanes' (print-domain-01: 424 in that domain)."""


def fake_mac(where: Path, config: Path, env: dict[str, str]) -> tuple[dict[str, str], Path]:
    """launchd on a Mac for (j)'s lean pass on the launchctl backend: a /bin/sh stand-in for
    launchctl answering `print gui/501` (the lanes' rows among APPLE_ROWS others, in
    print-domain-01's layout), `print-disabled gui/501`, `print gui/501/LABEL` (each lane
    loaded, run once, exit 0), logging each call; the full pass that writes the pass cache
    runs here, in this process, on the adapter (LaunchctlDomain) driving it. (The environment,
    and the lean pass that reads the cache, are what launchd would start.)"""
    from lanekit.config import load_config
    from lanekit.service.launchd.launch import launch_for
    from lanekit.service.launchd.launchctl import LaunchctlDomain
    from lanekit.state.paths import Paths
    from lanekit.watch.watchdog import WatchRequest, run_pass

    fake = fresh(where, "fake-launchctl")
    (fake / "svc").mkdir()
    mac = {**env, "LANEKIT_LAUNCHD": "launchctl", "LANEKIT_LAUNCHD_DOMAIN": MAC_DOMAIN}
    paths = Paths.from_env(mac)
    labels = [lane.label for lane in load_config(config, paths).lanes.values()]
    rows = [f"\t\t{100 + n:>8}      0 \tcom.apple.service{n}" for n in range(APPLE_ROWS // 2)]
    rows += [f"\t\t       0      0 \t{label}" for label in labels]
    rows += [f"\t\t       0      - \tcom.apple.idle{n}" for n in range(APPLE_ROWS // 2)]
    head = [f"{MAC_DOMAIN} = {{", "\ttype = login", "\tsession = Aqua", "\tservices = {"]
    tail = ["\t}", "\tproperties = gui | gui login", "}", ""]
    (fake / "domain").write_text("\n".join([*head, *rows, *tail]), encoding="utf-8")
    (fake / "user").write_text("\n".join([*head, *tail]), encoding="utf-8")
    disabled = [f'\t"com.apple.off{n}" => disabled' for n in range(30)]
    disabled += [f'\t"{label}" => enabled' for label in labels]
    text = "disabled services = {\n" + "\n".join(disabled) + "\n}\n"
    (fake / "disabled").write_text(text, encoding="utf-8")
    import plistlib

    for label in labels:
        job = plistlib.loads(paths.plist_for(label).read_bytes())
        (fake / "svc" / label).write_text(
            f"{MAC_DOMAIN}/{label} = {{\n\tactive count = 0\n\tpath = {paths.plist_for(label)}"
            "\n\ttype = LaunchAgent\n\tstate = not running\n"
            f"\tprogram = {launch_for(job).executable}\n\truns = 1\n\tlast exit code = 0\n}}\n",
            encoding="utf-8",
        )
    script = fake / "launchctl"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{fake}/calls"\n'
        'case "$1 $2" in\n'
        f'"print {MAC_DOMAIN}") exec cat "{fake}/domain" ;;\n'
        f'"print user/501") exec cat "{fake}/user" ;;\n'
        f'"print-disabled {MAC_DOMAIN}") exec cat "{fake}/disabled" ;;\n'
        "esac\n"
        f'svc="{fake}/svc/${{2##*/}}"\n'
        '[ "$1" = print ] && [ -f "$svc" ] && exec cat "$svc"\n'
        "echo 'Could not find service' >&2\nexit 113\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    mac["LANEKIT_LAUNCHCTL"] = str(script)
    domain = LaunchctlDomain(MAC_DOMAIN, launchctl=script)
    run_pass(WatchRequest(config_path=config), paths, env=mac, launchd=domain)
    return mac, fake / "calls"


def bench_watch(root: Path, records: int, log_lines: int, runs: int) -> Figure:
    """(j): a `lanekit watch` pass (as launchd starts it) over 20 healthy lanes vs an empty
    `lanekit run`, interleaved: passes with nothing new since the last one, and passes after
    two lanes ran BUSY_JOBS jobs each; then the quiet pass again on the launchctl backend."""
    config, env = watch_world(root, 20, records, log_lines)
    queue = Queue(fresh(root, "watch-empty"), durable=False)
    queue.ensure()
    snapshot = queue.dir / "snapshot.json"
    lane_spec(queue.dir, ["/bin/true"], max_jobs=20).write(snapshot)
    run_argv = [PY, *INTERPRETER_FLAGS, "-c", ENTRYPOINT_CODE, "run", LANE]
    run_argv += ["--snapshot", str(snapshot)]
    watch_argv = [PY, *INTERPRETER_FLAGS, "-c", ENTRYPOINT_CODE, "watch", "--config", str(config)]
    busy_lanes = [lane_run(config, env, n) for n in (3, 11)]
    for _, argv, lane_env in busy_lanes:
        run_cmd(argv, lane_env)  # a first run with nothing queued: its lane lock is created
    run_cmd(watch_argv, env)  # the first pass: nothing remembered yet
    empty, quiet, busy, mac, mac_empty = [], [], [], [], []
    for k in range(runs):
        empty.append(run_cmd(run_argv))
        quiet.append(run_cmd(watch_argv, env))
        for queue, argv, lane_env in busy_lanes:
            for i in range(BUSY_JOBS):
                queue.enqueue({"n": i}, job_id=f"busy-{k}-{i}")
            run_cmd(argv, lane_env)  # as launchd starts it: claims, runs, settles into done/
        busy.append(run_cmd(watch_argv, env))
    # The same world on the launchctl backend (one pass cache per lanes.toml: after the
    # emulated passes, not between them).
    mac_env, calls = fake_mac(config.parent, config, env)
    run_cmd(watch_argv, mac_env)
    # The lean pass must be what is timed (a full one, here as root, would be refused at once).
    asked = calls.read_text(encoding="utf-8").splitlines()[-2:]
    if asked != [f"print {MAC_DOMAIN}", f"print-disabled {MAC_DOMAIN}"]:
        raise SystemExit(f"(j): the pass on launchctl was not the lean one: {asked}")
    for _ in range(runs):
        mac_empty.append(run_cmd(run_argv))
        mac.append(run_cmd(watch_argv, mac_env))
    ratio = median(quiet) / median(empty)
    after = median(busy) / median(empty)
    on_mac = median(mac) / median(mac_empty)
    worst = max(ratio, after, on_mac)
    return Figure(
        key="j",
        title="a `lanekit watch` pass over 20 healthy lanes vs an empty `lanekit run`",
        ratio=worst,
        target="<= 3x",
        met=worst <= 3,
        detail=[
            f"nothing new since the last pass: {median(quiet) * 1e3:.0f} ms = {ratio:.1f}x; "
            f"after two lanes ran {BUSY_JOBS} jobs each (enqueued, then `lanekit run` as "
            f"launchd starts it: done/ and records/ move): {median(busy) * 1e3:.0f} ms = "
            f"{after:.1f}x; "
            f"empty `lanekit run`: {median(empty) * 1e3:.1f} ms; {runs} runs each, interleaved, "
            "median",
            f"on the launchctl backend, nothing new: {median(mac) * 1e3:.0f} ms = {on_mac:.1f}x "
            f"an empty `lanekit run` ({median(mac_empty) * 1e3:.1f} ms, interleaved), with "
            "launchctl a /bin/sh script that `cat`s a `print gui/501` of "
            f"{APPLE_ROWS + 21} services and a `print-disabled`: the 2 calls the pass makes",
            f"world: 20 lanes on 20 queues, {records:,} done jobs with their records, "
            f"{log_lines:,} lines ({log_lines * 110 // 1_000_000} MB) of log per lane",
        ],
        limits="Interpreter start-up, then what the lean pass (lanekit.watch.entry: builtin "
        "modules, marshal, no typer/rich/jinja2/pathlib/json) does to vouch for the last full "
        "pass's results: one lstat per fingerprinted path (lanes.toml, each lane's plist, "
        "snapshot, output files and PATH directories, each queue's own directory, claimed/, "
        "queue/, failed/, done/ and day buckets), the pass cache read (four fifths of it the "
        "queues' Bloom filters of the ids each lane's log says are done and done/ holds), the "
        "new bytes of each lane log folded from its offset, and the pass recorded as a full "
        "one records it (lock, `start`/`finish`, the memory's completed_at with its fsyncs). "
        "A lane that ran adds what the queue checks' incremental forms read "
        "(lanekit.doctor.checks.queue.READS): a listing of the claimed/ and queue/ it emptied, of "
        "failed/ and done/ (every run renames a probe file through them), and of each day "
        "bucket it added files to (~5,000 names here, their crc32s), whose new names must be "
        "the new `done` events' files; it goes to the full pass (doctor's checks, seconds "
        "here) only when something is left to judge: a job still queued or claimed, a file "
        "no `done` explains, a new day bucket, a fire to account for, a launchd change other "
        "than a healthy run's. On the launchctl backend the lean pass adds two launchctl "
        "processes (`print gui/<uid>`, `print-disabled gui/<uid>`) and reads their rows with "
        "str methods (lanekit.watch.launchdrows; the adapter's parsers cost ~60 ms to "
        "import); here launchctl is a /bin/sh script that cats a file, so its cost is two "
        "fork/execs of sh and cat, not what a real launchctl's XPC round trip to launchd "
        "costs on a Mac, for which no measured figure was found (not measured here). A "
        "label whose last exit was not 0 or whose plist drifted adds its `print`, and a full "
        "pass is due at least hourly (the loaded definition of a healthy label is in no "
        "row).",
    )
