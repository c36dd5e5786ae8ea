"""kueue-aks: AKS with CPU and GPU pools, Kueue by Helm, and starter Kueue queues.

A package per concern, each with pure builders (plain data in, plain data out, no Pulumi) and a
thin Pulumi component that registers what they build (docs/architecture.md draws it):

- `config`: the stack-config contract, parsed and checked; the floor, importing no builder.
- `k8s`: Kubernetes helpers shared by every concern (quantities, names, charts, Helm, manifests).
- `cluster`: the capacity model of VM sizes and the cluster in its three modes.
- `kueue`: Kueue's versions, chart and CRDs, Helm values, objects, validation, the installation
  and the queues.
- `gpu`, `governance`, `monitoring`, `autoscaling`, `operators`: what the stack adds around Kueue.
- `multikueue`: a manager and its workers, on top of the Kueue objects.
- `preflight`: Azure's quota and VM sizes, read before any resource.
- `plan`: `python -m components.plan`, the offline plan for reviewers.
"""
