"""The cluster and its capacity. `capacity` decides what one node of a VM size gives Kueue
(allocatable CPU, memory and GPUs, from AKS's reservations), a pure fact table that the config and
every quota read; `tags` is how the stack marks its Azure resources for the preflight;
`component` creates the cluster in its three modes (create: the AKS cluster and its node pools;
existing; kubeconfig) and the Kubernetes provider the other components use."""
