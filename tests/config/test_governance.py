"""Governance in the stack config (components/config/governance.py): the queued taint on every pool,
the namespaces exempt, mistakes named at their key."""

from __future__ import annotations

from typing import Any

import pytest

from components.config.checks import ConfigError
from components.config.governance import Governance
from components.config.names import QUEUED_TAINT
from components.config.refusals import MINIMAL
from testbed.config_errors import refused
from testbed.stacks import QUEUED, TAS_POOL, parse_raw, with_changes


# Pools of every kind: plain CPU, GPU (default taint), spot GPU (AKS's taint), custom taints.
GOVERNANCE_POOLS: list[dict[str, Any]] = [
    MINIMAL["nodePools"][0],
    {"name": "gpu", "vmSize": "Standard_NC4as_T4_v3", "maxCount": 1},
    {"name": "gpuspot", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 2, "spot": True},
    {"name": "tainted", "vmSize": "Standard_E8s_v5", "maxCount": 2, "taints": ["dedicated=batch:NoSchedule"]},
    TAS_POOL,
]


def test_queued_taint_constant() -> None:
    assert QUEUED_TAINT == QUEUED


def test_governance_is_on_by_default_and_exempts_only_system_namespaces() -> None:
    cfg = parse_raw(with_changes(nodePools=GOVERNANCE_POOLS))
    assert cfg.governance == Governance(enforce=True, exempt_namespaces=())
    assert cfg.governance.exempt == ("kube-system", "nvidia-device-plugin")
    for pool in cfg.node_pools:
        assert pool.governed, pool.name
        # The queued taint comes last, after the configured and AKS's taints, exactly once.
        assert [str(t) for t in pool.node_taints][-1] == QUEUED, pool.name
        assert [str(t) for t in pool.node_taints].count(QUEUED) == 1, pool.name
        assert QUEUED not in [str(t) for t in pool.taints], pool.name  # not a configured taint
    assert [str(t) for t in cfg.pool("cpu").node_taints] == [QUEUED]
    assert [str(t) for t in cfg.pool("tainted").node_taints] == ["dedicated=batch:NoSchedule", QUEUED]
    # Written explicitly, the defaults give the same config.
    explicit = parse_raw(with_changes(nodePools=GOVERNANCE_POOLS, governance={"enforce": True, "exemptNamespaces": []}))
    assert explicit == cfg


def test_enforce_false_removes_the_queued_taint_from_every_pool() -> None:
    governed = parse_raw(with_changes(nodePools=GOVERNANCE_POOLS))
    cfg = parse_raw(with_changes(nodePools=GOVERNANCE_POOLS, governance={"enforce": False}))
    assert cfg.governance.enforce is False
    for pool, before in zip(cfg.node_pools, governed.node_pools, strict=True):
        assert not pool.governed, pool.name
        assert QUEUED not in [str(t) for t in pool.node_taints], pool.name
        # Only the queued taint goes; every other taint stays, in order.
        assert pool.node_taints == before.node_taints[:-1], pool.name
    assert cfg.pool("cpu").node_taints == ()
    assert [str(t) for t in cfg.pool("gpuspot").node_taints] == [
        "nvidia.com/gpu=present:NoSchedule",
        "kubernetes.azure.com/scalesetpriority=spot:NoSchedule",
    ]


def test_a_configured_queued_taint_is_not_doubled() -> None:
    pools = [{**MINIMAL["nodePools"][0], "taints": [QUEUED, "dedicated=batch:NoSchedule"]}]
    pool = parse_raw(with_changes(nodePools=pools)).pool("cpu")
    assert [str(t) for t in pool.node_taints] == [QUEUED, "dedicated=batch:NoSchedule"]


def test_exempt_namespaces_come_after_the_system_ones() -> None:
    cfg = parse_raw(with_changes(governance={"exemptNamespaces": ["monitoring", "ingress-nginx"]}))
    assert cfg.governance.exempt_namespaces == ("monitoring", "ingress-nginx")
    assert cfg.governance.exempt == ("kube-system", "nvidia-device-plugin", "monitoring", "ingress-nginx")
    # A system namespace listed again is not exempted twice.
    again = parse_raw(with_changes(governance={"exemptNamespaces": ["monitoring", "kube-system"]}))
    assert again.governance.exempt == ("kube-system", "nvidia-device-plugin", "monitoring")
    # Exemption does not turn governance off: the pools keep the queued taint.
    assert [str(t) for t in cfg.pool("cpu").node_taints] == [QUEUED]


@pytest.mark.parametrize(
    ("governance", "expected"),
    [
        (
            {"enfore": False},
            "kueue-aks:governance.enfore: unknown key (did you mean 'enforce'?); "
            "allowed keys: enforce, exemptNamespaces",
        ),
        (
            {"exemptNamespace": ["monitoring"]},
            "kueue-aks:governance.exemptNamespace: unknown key "
            "(did you mean 'exemptNamespaces'?); allowed keys: enforce, exemptNamespaces",
        ),
        ("off", "kueue-aks:governance: must be an object with keys enforce, exemptNamespaces; got a string"),
        (
            {"enforce": "false"},
            "kueue-aks:governance.enforce: must be true or false; got a string 'false' (the Pulumi CLI reads yes, no, on "
            "and off as text, and quoted words are text: write true or false, unquoted)",
        ),
        ({"enforce": 0}, "kueue-aks:governance.enforce: must be true or false; got an integer 0"),
        (
            {"exemptNamespaces": "monitoring"},
            "kueue-aks:governance.exemptNamespaces: must be a list of namespace names; got a string",
        ),
        (
            {"exemptNamespaces": ["monitoring", "Ingress"]},
            "kueue-aks:governance.exemptNamespaces[1]: 'Ingress' is not a namespace name (a DNS-1123 label)",
        ),
        ({"exemptNamespaces": [7]}, "kueue-aks:governance.exemptNamespaces[0]: must be a string; got an integer 7"),
        (
            {"exemptNamespaces": ["monitoring", "ingress", "monitoring"]},
            "kueue-aks:governance.exemptNamespaces[2]: 'monitoring' is listed twice",
        ),
        (
            {"exemptNamespaces": ["monitoring", "research"]},
            "kueue-aks:governance.exemptNamespaces[1]: 'research' is a team namespace; its pods are queued by Kueue "
            "and cannot be exempt",
        ),
    ],
)
def test_bad_governance_names_the_key_and_what_is_allowed(governance: Any, expected: str) -> None:
    # Exactly one problem, at exactly this key path, with exactly this message.
    assert refused(parse_raw, with_changes(governance=governance)).lines == [expected]


def test_governance_problems_are_reported_with_the_others() -> None:
    raw = with_changes(governance={"enforce": "yes", "exemptNamespaces": ["research", "A"]}, kueue={"replicas": 0})
    with pytest.raises(ConfigError) as err:
        parse_raw(raw)
    assert [p.path for p in err.value.problems] == [
        "kueue-aks:kueue.replicas",
        "kueue-aks:governance.enforce",
        "kueue-aks:governance.exemptNamespaces[0]",
        "kueue-aks:governance.exemptNamespaces[1]",
    ]
