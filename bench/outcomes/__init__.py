"""The scheduling-outcome benchmark (docs/outcomes.md): one trace, four ways to share the same pools.

trace, metrics, setups and scenario are pure; replay and throughput drive the e2e tier's control
plane; report prints and draws. Run it with `python -m bench.outcomes`.
"""
