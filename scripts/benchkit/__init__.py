"""The figures of scripts/bench.py, one module per figure or group of figures."""
