"""Autoscaled pools: what the cluster must serve before Kueue starts so that the cluster autoscaler
provisions a job's nodes before admission (ProvisioningRequest). The Kueue objects that ask for
it are built with the other Kueue objects."""
