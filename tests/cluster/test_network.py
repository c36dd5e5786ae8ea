"""The cluster in the company's network (kueue-aks:cluster.network, cluster.apiServer,
nodePools[].subnetId): Azure's rules refused offline naming the key, and under mocks every pool in
the subnet, the control plane's identity allowed on the VNet before the cluster exists, egress,
ranges and the API server's exposure as configured. What Azure itself does with them (routing,
private DNS) cannot be shown here: the mocks only echo what the program sends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config.parse import parse_config
from components.config.refusals import MINIMAL
from components.plan import main as plan_main
from testbed.config_errors import refused
from testbed.harness import ROOT, run_program
from testbed.stacks import GPU_SUBNET, SUB, SUBNET, VNET, byo_config, stack_file_config

CLUSTER = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
ROLE = "azure-native:authorization:RoleAssignment"
NETWORK_CONTRIBUTOR = "4d97b98b-1d4f-4787-a291-c67834d212e7"


def raw_with(cluster: dict[str, Any], pools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {**MINIMAL, "cluster": cluster, **({"nodePools": pools} if pools else {})}


REFUSED = {
    "UDR without a subnet": ({"network": {"outboundType": "userDefinedRouting"}}, "network.outboundType"),
    "user NAT without a subnet": ({"network": {"outboundType": "userAssignedNATGateway"}}, "network.outboundType"),
    "managed NAT in your subnet": (
        {"network": {"subnetId": SUBNET, "outboundType": "managedNATGateway"}},
        "network.outboundType",
    ),
    "a subnet ID of another type": ({"network": {"subnetId": VNET}}, "network.subnetId"),
    "a subnet ID with a line break": ({"network": {"subnetId": SUBNET + "\n"}}, "network.subnetId"),
    "host bits set": ({"network": {"podCidr": "10.244.1.0/16"}}, "network.podCidr"),
    "not a CIDR": ({"network": {"podCidr": "10.244.0.0"}}, "network.podCidr"),
    "prefix past 32": ({"network": {"podCidr": "10.244.0.0/33"}}, "network.podCidr"),
    "pods and services overlap": (
        {"network": {"serviceCidr": "10.244.0.0/20", "dnsServiceIp": "10.244.0.10"}},
        "network.serviceCidr",
    ),
    "a reserved service range": (
        {"network": {"serviceCidr": "172.31.0.0/16", "dnsServiceIp": "172.31.0.10"}},
        "network.serviceCidr",
    ),
    "DNS outside the range": (
        {"network": {"serviceCidr": "10.1.0.0/16", "dnsServiceIp": "10.0.0.10"}},
        "network.dnsServiceIp",
    ),
    "DNS on the first address": (
        {"network": {"serviceCidr": "10.1.0.0/16", "dnsServiceIp": "10.1.0.1"}},
        "network.dnsServiceIp",
    ),
    "service range without DNS": ({"network": {"serviceCidr": "10.1.0.0/16"}}, "network.dnsServiceIp"),
    "DNS without a range": ({"network": {"dnsServiceIp": "10.0.0.53"}}, "network.serviceCidr"),
    "ranges on a private cluster": (
        {"apiServer": {"private": True, "authorizedIpRanges": ["203.0.113.0/24"]}},
        "apiServer.authorizedIpRanges",
    ),
    "an empty range list": ({"apiServer": {"authorizedIpRanges": []}}, "apiServer.authorizedIpRanges"),
    "a range that is an address": (
        {"apiServer": {"authorizedIpRanges": ["203.0.113.7"]}},
        "apiServer.authorizedIpRanges[0]",
    ),
    "201 ranges": (
        {"apiServer": {"authorizedIpRanges": [f"10.{i // 256}.{i % 256}.0/24" for i in range(201)]}},
        "apiServer.authorizedIpRanges",
    ),
    "network on an existing cluster": (
        {"existing": {"resourceGroup": "rg", "name": "aks"}, "network": {"subnetId": SUBNET}},
        "network",
    ),
}


@pytest.mark.parametrize(("cluster", "path"), REFUSED.values(), ids=REFUSED.keys())
def test_what_aks_refuses_is_refused_first_naming_the_key(cluster: dict[str, Any], path: str) -> None:
    assert f"kueue-aks:cluster.{path}" in refused(parse_config, raw_with(cluster), stack="t", location="eastus2").paths


def test_a_pools_subnet_needs_the_clusters_and_its_vnet() -> None:
    pool = {"name": "cpu", "vmSize": "Standard_D16s_v5", "maxCount": 2, "subnetId": GPU_SUBNET}
    assert refused(parse_config, raw_with({}, [pool]), stack="t", location="eastus2").paths == [
        "kueue-aks:nodePools[0].subnetId"
    ]
    other = f"/subscriptions/{SUB}/resourceGroups/net-rg/providers/Microsoft.Network/virtualNetworks/hub/subnets/x"
    assert refused(
        parse_config,
        raw_with({"network": {"subnetId": SUBNET}}, [{**pool, "subnetId": other}]),
        stack="t",
        location="eastus2",
    ).paths == ["kueue-aks:nodePools[0].subnetId"]


def test_a_byo_subnet_stack_puts_every_pool_in_the_subnet_after_the_control_planes_role() -> None:
    run = run_program(byo_config())
    cluster = run.one(CLUSTER)
    (identity,) = run.of_type(IDENTITY)
    (role,) = [r for r in run.of_type(ROLE) if r.inputs["scope"] == VNET]
    assert role.inputs["roleDefinitionId"] == (
        f"/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{NETWORK_CONTRIBUTOR}"
    )
    assert role.inputs["principalType"] == "ServicePrincipal"
    assert role.property_dependencies["principalId"] == [identity.urn]
    assert role.urn in cluster.dependencies  # granted before AKS needs it
    assert cluster.inputs["identity"] == {"type": "UserAssigned", "userAssignedIdentities": [f"{identity.name}_id"]}
    assert [p["vnetSubnetID"] for p in cluster.inputs["agentPoolProfiles"]] == [SUBNET]
    subnets = {r.inputs["agentPoolName"]: r.inputs["vnetSubnetID"] for r in run.of_type(POOL)}
    assert subnets == {"cpu": SUBNET, "gpu": GPU_SUBNET, "tas": SUBNET}
    network = cluster.inputs["networkProfile"]
    assert {k: network[k] for k in ("outboundType", "podCidr", "serviceCidr", "dnsServiceIP", "networkPluginMode")} == {
        "outboundType": "userDefinedRouting",
        "podCidr": "192.168.0.0/16",
        "serviceCidr": "10.1.0.0/16",
        "dnsServiceIP": "10.1.0.10",
        "networkPluginMode": "overlay",
    }
    assert cluster.inputs["apiServerAccessProfile"] == {"authorizedIPRanges": ["203.0.113.0/24", "198.51.100.16/28"]}


def test_a_private_cluster_reaches_the_access_profile() -> None:
    run = run_program(byo_config({"private": True}))
    assert run.one(CLUSTER).inputs["apiServerAccessProfile"] == {"enablePrivateCluster": True}


def test_a_stack_without_network_keys_sends_what_it_always_did() -> None:
    run = run_program(stack_file_config("dev"))
    cluster = run.one(CLUSTER)
    assert cluster.inputs["identity"] == {"type": "SystemAssigned"}
    assert "apiServerAccessProfile" not in cluster.inputs and not run.of_type(IDENTITY)
    assert set(cluster.inputs["networkProfile"]) == {
        "networkPlugin",
        "networkPluginMode",
        "networkDataplane",
        "networkPolicy",
        "loadBalancerSku",
    }
    assert all("vnetSubnetID" not in r.inputs for r in run.of_type(POOL))


def test_the_plan_says_where_the_nodes_are_and_from_where_up_must_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    for api_server, says in (
        ({"authorizedIpRanges": ["203.0.113.0/24"]}, "only 203.0.113.0/24 reach it"),
        ({"private": True}, "self-hosted runner"),
    ):
        (tmp_path / "Pulumi.byo.yaml").write_text(yaml.safe_dump({"config": byo_config(api_server)}))
        assert plan_main(["--stack", "byo", "--root", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "every pool in subnet `aks` of VNet `spoke` (but gpu in `gpu`)" in out and says in out, out
        assert "Network Contributor for the cluster's control-plane identity on the VNet spoke" in out
    assert plan_main(["--stack", "dev", "--root", str(ROOT)]) == 0
    assert "**Network:**" not in capsys.readouterr().out  # AKS's own VNet, a public API server: nothing to say
