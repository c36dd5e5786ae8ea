"""`kueue-aks:cluster.network` and `cluster.apiServer`: the cluster in the company's network.

What AKS refuses is refused here first, naming the key, each rule with where it comes from:
- the REST spec, Microsoft.ContainerService 2025-09-01 managedClusters.json
  (`ContainerServiceNetworkProfile`: serviceCidr "must not overlap with any Subnet IP ranges",
  dnsServiceIP "must be within the Kubernetes service address range specified in serviceCidr");
- learn.microsoft.com/azure/aks/egress-outboundtype and /aks/nat-gateway: userDefinedRouting and
  userAssignedNATGateway need a subnet of your own, and the managed NAT gateway "is incompatible
  with custom virtual networks";
- learn.microsoft.com/azure/aks/configure-azure-cni (and configure-advanced-networking): the
  service range may not be 169.254.0.0/16, 172.30.0.0/16, 172.31.0.0/16 or 192.0.2.0/24, and the
  DNS service address is not the range's first address (.1 is the kubernetes Service's);
- learn.microsoft.com/azure/aks/api-server-authorized-ip-ranges: authorized ranges cannot be used
  with private clusters, and at most 200 of them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from .checks import INVALID, Problems, Reader
from .keys import CLUSTER

NETWORK = CLUSTER.key("network")
API_SERVER = CLUSTER.key("apiServer")
# AKS's own defaults (the REST spec's), which the overlap checks use when a range is not given.
DEFAULT_POD_CIDR = "10.244.0.0/16"
DEFAULT_SERVICE_CIDR = "10.0.0.0/16"
DEFAULT_DNS_SERVICE_IP = "10.0.0.10"
RESERVED_SERVICE_RANGES = ("169.254.0.0/16", "172.30.0.0/16", "172.31.0.0/16", "192.0.2.0/24")
OWN_SUBNET_OUTBOUND = ("userDefinedRouting", "userAssignedNATGateway")


@dataclass(frozen=True)
class NetworkSettings:
    """None where the stack file says nothing: AKS's default goes unsent, as before."""

    subnet_id: str | None = None  # every pool's subnet; None: a VNet AKS makes
    outbound_type: str | None = None  # loadBalancer when None
    pod_cidr: str | None = None
    service_cidr: str | None = None
    dns_service_ip: str | None = None

    @property
    def vnet_id(self) -> str | None:
        """The subnet's virtual network: the scope of the control plane's Network Contributor role."""
        return vnet_of(self.subnet_id) if self.subnet_id else None


@dataclass(frozen=True)
class ApiServer:
    private: bool = False
    authorized_ip_ranges: tuple[str, ...] = ()

    @property
    def exposure(self) -> str:
        """public | authorized | private"""
        return "private" if self.private else "authorized" if self.authorized_ip_ranges else "public"


def vnet_of(subnet_id: str) -> str:
    """`.../virtualNetworks/<vnet>/subnets/<subnet>` -> `.../virtualNetworks/<vnet>`, compared
    without case as Azure compares resource IDs."""
    return subnet_id[: subnet_id.lower().rindex("/subnets/")]


def _network(problems: Problems, path: str, value: str) -> Any:
    """An IPv4 network whose host bits are zero, or INVALID with the problem recorded."""
    try:
        return ipaddress.IPv4Network(value)
    except ipaddress.NetmaskValueError:
        problems.add(path, f"{value!r} has an invalid prefix length; write an IPv4 CIDR such as 10.244.0.0/16")
    except ValueError:
        try:
            net = ipaddress.IPv4Network(value, strict=False)
        except ValueError:
            problems.add(path, f"{value!r} is not an IPv4 CIDR; write one such as 10.244.0.0/16")
        else:
            problems.add(path, f"{value!r} has host bits set; write its network, {net}")
    return INVALID


def parse_network(problems: Problems, raw: Any) -> NetworkSettings:
    path = f"{CLUSTER.name}.network"
    r = Reader(problems, path, raw, NETWORK)
    subnet = r.get("subnetId", None)
    outbound = r.get("outboundType", None)
    given = {k: r.get(k, None) for k in ("podCidr", "serviceCidr")}
    dns = r.get("dnsServiceIp", None)
    nets = {k: _network(problems, r.at(k), v) for k, v in given.items() if v is not None}
    if outbound in OWN_SUBNET_OUTBOUND and not subnet and r.value.get("subnetId") is None:
        problems.add(
            r.at("outboundType"),
            f"{outbound} needs the cluster in a subnet of your own, whose route table or NAT gateway carries the "
            "egress: set cluster.network.subnetId",
        )
    if outbound == "managedNATGateway" and subnet:
        problems.add(
            r.at("outboundType"),
            "managedNATGateway works only in a VNet AKS makes; with subnetId, attach a NAT gateway to the subnet and "
            "use userAssignedNATGateway",
        )
    if given["serviceCidr"] is not None and dns is None and "dnsServiceIp" not in r.value:
        problems.add(r.at("dnsServiceIp"), f"is required with serviceCidr: an address inside {given['serviceCidr']}")
    if dns is not None and given["serviceCidr"] is None and "serviceCidr" not in r.value:
        problems.add(r.at("serviceCidr"), "is required with dnsServiceIp: the range the address is in")
    service = nets.get("serviceCidr", ipaddress.IPv4Network(DEFAULT_SERVICE_CIDR))
    pods = nets.get("podCidr", ipaddress.IPv4Network(DEFAULT_POD_CIDR))
    if service is not INVALID:
        for reserved in map(ipaddress.IPv4Network, RESERVED_SERVICE_RANGES):
            if service.overlaps(reserved) and "serviceCidr" in nets:
                problems.add(r.at("serviceCidr"), f"{service} overlaps {reserved}, which AKS reserves; choose another")
        if pods is not INVALID and service.overlaps(pods) and nets:
            key = "serviceCidr" if "serviceCidr" in nets else "podCidr"
            problems.add(r.at(key), f"the Services' range {service} and the pods' range {pods} overlap; separate them")
    if dns is not None and service is not INVALID:
        try:
            address = ipaddress.IPv4Address(dns)
        except ValueError:
            problems.add(r.at("dnsServiceIp"), f"{dns!r} is not an IPv4 address")
        else:
            if address not in service:
                problems.add(r.at("dnsServiceIp"), f"{dns} is outside serviceCidr {service}; choose an address in it")
            elif address in (service.network_address, service.network_address + 1, service.broadcast_address):
                problems.add(
                    r.at("dnsServiceIp"),
                    f"{dns} is {service}'s network, first or last address (the first is the kubernetes Service's); "
                    f"choose another, e.g. {service.network_address + 10}",
                )
    return NetworkSettings(
        subnet_id=subnet,
        outbound_type=outbound,
        pod_cidr=given["podCidr"],
        service_cidr=given["serviceCidr"],
        dns_service_ip=dns,
    )


def parse_api_server(problems: Problems, raw: Any) -> ApiServer:
    path = f"{CLUSTER.name}.apiServer"
    r = Reader(problems, path, raw, API_SERVER)
    private = r.get("private", False)
    ranges = r.get("authorizedIpRanges", [])
    for i, value in enumerate(ranges):
        _network(problems, f"{r.at('authorizedIpRanges')}[{i}]", value)
    if private and ranges:
        problems.add(
            r.at("authorizedIpRanges"),
            "cannot be used with a private cluster (AKS refuses both): a private API server is reachable only "
            "from its VNet; remove one",
        )
    return ApiServer(private=bool(private), authorized_ip_ranges=tuple(ranges))
