"""lanekit: launchd lanes that drain a directory queue, exactly once.

Kept import-free on purpose: `lanekit run LANE` (through lanekit.entry) is what launchd
starts, and its start-up time on an empty queue is a benchmark figure.
"""

__version__ = "0.1.0"
