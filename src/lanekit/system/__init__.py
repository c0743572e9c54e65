"""File-system and process primitives: atomic writes, no-replace renames, ownership and trust,
processes, strict JSON, quoting. The bottom layer: imports nothing else of lanekit but errors.
"""
