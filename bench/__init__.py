"""Offline benchmark of kueue-aks: program speed, scaling, and the modelled deployment critical path.

Run it with `python -m bench.run` (see docs/performance.md).
"""
