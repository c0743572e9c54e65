"""lanekit's own state: where everything lives (paths), the applied lane snapshot, which
service-manager backend is in use and its clock.
"""
