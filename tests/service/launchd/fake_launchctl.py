#!/usr/bin/env python3
"""A scripted stand-in for /bin/launchctl, for tests of lanekit.service.launchd.launchctl.

It appends its arguments (a JSON list, one line per call) to the file named by
FAKE_LAUNCHCTL_LOG, then answers from the JSON file named by FAKE_LAUNCHCTL_SCRIPT:

    {"print": {"stdout": "...", "stderr": "...", "exit": 0},
     "bootstrap": {"stderr": "Bootstrap failed: 5: Input/output error", "exit": 5},
     "kickstart -k": {"stdout": "4242", "sleep": 30}}

The reply is the entry whose key is the longest prefix (in whole words) of the arguments, or
"*", or an empty success. "sleep" (seconds) makes the call hang, for timeout tests.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def reply_for(args: list[str], script: dict[str, dict[str, object]]) -> dict[str, object]:
    """The scripted reply for `args`: longest whole-word prefix match, then `*`, then {}."""
    for size in range(len(args), 0, -1):
        key = " ".join(args[:size])
        if key in script:
            return script[key]
    return script.get("*", {})


def main(args: list[str]) -> int:
    """Record the call, replay the scripted reply, exit with the scripted status."""
    log = os.environ.get("FAKE_LAUNCHCTL_LOG")
    if log:
        with Path(log).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(args) + "\n")
    script_path = os.environ.get("FAKE_LAUNCHCTL_SCRIPT")
    script = json.loads(Path(script_path).read_text(encoding="utf-8")) if script_path else {}
    reply = reply_for(args, script)
    delay = reply.get("sleep", 0)
    if isinstance(delay, int | float) and delay > 0:
        time.sleep(delay)
    sys.stdout.write(str(reply.get("stdout", "")))
    sys.stderr.write(str(reply.get("stderr", "")))
    status = reply.get("exit", 0)
    return status if isinstance(status, int) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
