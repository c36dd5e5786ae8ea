"""kueue-aks: load and validate the stack config, build the components, export outputs."""

import pulumi

from components.cluster import AksCluster
from components.config import load_stack_config

config = load_stack_config()

cluster = AksCluster("kueue", config)

pulumi.export("clusterName", cluster.cluster_name)
pulumi.export("resourceGroupName", cluster.resource_group_name)
pulumi.export("oidcIssuerUrl", cluster.oidc_issuer_url)
pulumi.export("nodePools", cluster.node_pool_names)
pulumi.export("kubeconfig", cluster.kubeconfig)
