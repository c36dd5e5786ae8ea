"""Governance: `policies` decides the ValidatingAdmissionPolicies that keep pods Kueue did not admit
off the user pools and keep Kueue's roles from being widened (pure); `component` creates the pool
guard (PoolGuard)."""
