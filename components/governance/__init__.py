"""Governance: `policies` decides the ValidatingAdmissionPolicy that keeps pods Kueue did not admit
off the user pools (pure); `component` creates it (PoolGuard)."""
