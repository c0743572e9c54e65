"""Trying lanekit for real: `lanekit selftest` (this install against launchd), `lanekit demo`
(the seed incident replayed) and `lanekit try` (one job, once, as launchd would start it)."""
