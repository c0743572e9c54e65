"""Showing that lanekit works here: `lanekit selftest` and `lanekit demo`."""
