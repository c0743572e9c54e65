"""Lanes on an in-memory queue. lanes.toml's queue `dir` is an absolute path (a memory queue
lives in one process, and launchd runs each lane in its own), so a test loads lanes.toml as
usual and moves one of its queues into memory: doctor, the watchdog and every other caller
then open it through lanekit.queue.open_queue like any queue."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lanekit.config import Config


def on_memory(config: Config, location: str, queue: str = "notes") -> Config:
    """`config` with queue `queue` at the memory `location` (`memory:NAME`), in its table and
    in every lane that drains it; the lanes keep their logs where lanes.toml put them."""
    spec = replace(config.queues[queue], dir=Path(location))
    lanes = {
        name: replace(lane, queue=spec) if lane.queue.name == queue else lane
        for name, lane in config.lanes.items()
    }
    return replace(config, queues={**config.queues, queue: spec}, lanes=lanes)
