"""The cluster the stack deploys into, in its three modes (an AKS cluster it creates with its node
pools, an existing AKS cluster, or any cluster by kubeconfig), and the Kubernetes provider the
other components use. Decided as plain data: how the stack marks its Azure resources, the
deploying identity's admin access, and which edits to a created cluster AKS cannot apply in
place."""
