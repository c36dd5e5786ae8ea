"""The cluster and its capacity. `capacity` decides what one node of a VM size gives Kueue
(allocatable CPU, memory and GPUs, from AKS's reservations), a pure fact table that the config and
every quota read; `component` creates the cluster in its three modes (create: the AKS cluster and
its node pools; existing; kubeconfig) and the Kubernetes provider the other components use."""
