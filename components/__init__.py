"""kueue-aks: AKS with CPU and GPU pools, Kueue by Helm, and starter Kueue queues.

Pure modules (config, capacity, quantity, helm values, Kueue objects, validation) return plain
data; the component modules (cluster, gpu, kueue, queues) only wire that data into Pulumi.
"""
