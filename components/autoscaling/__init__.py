"""Autoscaled pools: what Kueue needs so that the cluster autoscaler provisions a job's nodes
before admission (ProvisioningRequest). The Kueue objects are in components/kueue/objects.py,
with the other Kueue objects; here is what the cluster must have first."""
