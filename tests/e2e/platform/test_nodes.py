"""The fake nodes and the autoscaler's node templates agree with the program's flavors: each flavor
selects exactly its pool's nodes and tolerates every taint they carry. Pure: no control plane needed."""

from __future__ import annotations

import pytest

from components.kueue.objects import build_objects

from testbed.autoscaler import autoscaled_pools, template
from testbed.nodes import fake_nodes
from testbed.stacks import STACKS, load


@pytest.mark.parametrize("stack_name", STACKS)
def test_each_flavor_selects_exactly_its_pool_and_tolerates_its_taints(stack_name: str) -> None:
    config = load(stack_name)
    nodes = fake_nodes(config)
    # Every pool starts at minCount (a fixed-size pool's minCount is its size), as on AKS.
    assert len(nodes) == config.cluster.system_pool.count + sum(p.min_count for p in config.node_pools)
    templates = [template(config, p) for p in autoscaled_pools(config)]
    for flavor in (o for o in build_objects(config) if o["kind"] == "ResourceFlavor"):
        pool = config.pool(flavor["metadata"]["name"])
        selected = [n for n in nodes if flavor["spec"]["nodeLabels"].items() <= n["metadata"]["labels"].items()]
        assert len(selected) == pool.min_count
        # The nodes the autoscaler adds for this pool come from exactly one template.
        selected_templates = [
            t for t in templates if flavor["spec"]["nodeLabels"].items() <= t["metadata"]["labels"].items()
        ]
        assert len(selected_templates) == (1 if pool.autoscaled else 0)
        selected += selected_templates
        for node in selected:
            for taint in node["spec"].get("taints", []):
                tolerated = [
                    t
                    for t in flavor["spec"].get("tolerations", [])
                    if t["key"] == taint["key"]
                    and t["effect"] == taint["effect"]
                    and (t["operator"] == "Exists" or t.get("value") == taint.get("value"))
                ]
                assert tolerated, f"flavor {pool.name} does not tolerate {taint} of node {node['metadata']['name']}"


def test_spot_nodes_carry_aks_spot_taint_and_label() -> None:
    config = load("spot-gpu")
    # The pool scales from zero: its nodes are the autoscaler's, made from the pool's template.
    spot = [
        t
        for t in (template(config, p) for p in autoscaled_pools(config))
        if t["metadata"]["labels"]["kubernetes.azure.com/agentpool"] == "a100spot"
    ]
    assert spot and all(n["metadata"]["labels"]["kubernetes.azure.com/scalesetpriority"] == "spot" for n in spot)
    assert all(
        {"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"} in n["spec"]["taints"]
        for n in spot
    )
