"""Team access: `members` decides what each team's member groups may do in the cluster, as plain
RBAC objects and a per-team report (pure); `component` registers those objects and, on AKS, the
Azure role that lets the groups fetch the cluster's credentials (TeamAccess)."""
