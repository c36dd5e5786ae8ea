"""The scheduling-outcome benchmark (docs/outcomes.md): one trace, four ways to share the same
pools, each run through the real Kueue on the e2e tier's control plane and compared with
intervals over seeds. Run it with `python -m bench.outcomes`.
"""
