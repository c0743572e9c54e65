"""What the lanes are doing now: `lanekit status` and `lanekit logs`."""
