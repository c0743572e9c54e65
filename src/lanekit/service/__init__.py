"""THE SERVICE-MANAGER SEAM: what reconcile, status, doctor, watch and try ask of launchd
(and of the emulated domain, its test double).
"""
