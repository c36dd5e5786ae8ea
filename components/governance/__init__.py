"""Governance: the admission policy that keeps pods Kueue did not admit off the user pools,
decided as plain data and created by the component (PoolGuard)."""
