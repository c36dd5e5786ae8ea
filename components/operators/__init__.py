"""The job operators that run the kinds Kueue queues (KubeRay, JobSet, Kubeflow Trainer, the MPI
Operator, the Training Operator): `catalog` (which operator runs which framework, pinned per Kueue
release), `sources` (their Go modules, checked by checksum), `installs` (what is installed, as plain
data), `crd_chart` (each operator's CRDs as a chart of their own), `sizing` (the system pool must
hold them, on plain data), `policies` (the RayService guard), `component` (JobOperators, the Pulumi
wiring).
"""
