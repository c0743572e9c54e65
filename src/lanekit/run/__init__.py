"""Everything a lane run is: the entry launchd starts, the runner, the job watcher, the lane
lock and log, the job environment.

This package's __init__ stays empty: the empty-run fast path imports from it.
"""
