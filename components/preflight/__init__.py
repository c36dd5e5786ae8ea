"""Preflight: will Azure really give the stack its pools at maxCount, and does the cluster leave
room for what the stack installs?

Before any resource, the program reads the subscription's regional vCPU usage and limits and the
region's VM size list (Compute usages and resource SKUs) and compares them with what the stack
can ask for at full scale; on a cluster that exists it also lists the cluster's AKS extensions
(managed Kueue, KubeRay). `quota` and `extensions` hold the decisions as pure functions over
Azure's documented response shapes; `arm` is the one small client that reads them; `check` wires
them into the program and the plan command.
"""
