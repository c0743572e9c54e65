"""`lanekit timeline`: a day of lanes as a picture (terminal, JSON, self-contained HTML).

events.py maps lane-log lines to typed events (one table), model.py turns events and schedule
fires into runs, markers and bursts, layout.py places them on a time axis, html.py builds the
page, build.py reads what lanekit recorded for the span asked for. All but build.py are pure.
"""
