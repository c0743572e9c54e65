"""The parts of scripts/soak.py: the world, the faults, the accounting and the run."""
