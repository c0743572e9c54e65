"""lanekit: launchd lanes that drain a directory queue, exactly once.

Kept import-free on purpose: `python -m lanekit run LANE` is what launchd starts, and its
start-up time on an empty queue is a benchmark figure.
"""

__version__ = "0.1.0"
