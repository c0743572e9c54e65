"""`lanekit watch`: the watchdog lane and its pass (design.md section 9).

- spec: `[watch]` of lanes.toml -> WatchSpec, and where the watchdog lane keeps its files;
- alerts: the alert model and the pure diff of what is open now against what was remembered;
- memory: that state, kept atomically under the state dir, and the pass lock;
- channels: `macos`, `command`, `webhook` (processes start in lanekit.watch.notifier only);
- digest: the daily summary;
- watchdog: one pass (`lanekit watch`), which doctor's check registry does the looking for.
"""
