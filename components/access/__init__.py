"""Team access: what each team's member groups may do in the cluster and which Azure identity its
jobs use for their data, decided as plain data; the component grants both (RBAC in the cluster,
and on AKS the Azure roles and the managed identity)."""
