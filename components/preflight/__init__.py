"""Preflight: will Azure really give the stack its pools at maxCount, and does the cluster leave
room for what the stack installs?

Before any resource, the program reads the subscription's regional vCPU usage and limits and the
region's VM size list and compares them with what the stack can ask for at full scale; on a
cluster that exists it also reads which Kueue (or KubeRay) AKS's managed extensions already
installed. The decisions are pure functions over Azure's documented response shapes; one small
client reads Azure, and the program and the plan command run the same check.
"""
