"""systemd user units: a lane is a oneshot service, a timer and (started on enqueue) a path unit
in the user manager, rendered from the same lanes.toml (`units`), driven through the one
adapter (`systemctl`), and seen through the ServiceManager seam (`manager`)."""
