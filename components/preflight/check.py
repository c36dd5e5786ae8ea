"""The preflight in the program (before any resource) and in the plan command."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

# The tag by which a later preview finds the cluster this stack made, to count its nodes once.
from ..cluster.tags import STACK_TAG
from ..config.checks import Problem
from ..config.stack import StackConfig
from .arm import ComputeApi, PreflightError
from .extensions import cluster_facts, extension_problems, parse_extensions
from .quota import Assessment, assess, clamped, parse_running_pools, parse_skus, parse_usages


class PreflightFailed(Exception):
    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"preflight: this stack cannot be deployed as configured ({len(self.problems)} "
            f"problem{'s' if len(self.problems) != 1 else ''}):\n{lines}"
        )


def own_cluster(config: StackConfig, api: ComputeApi, stack_tag: str) -> dict[str, Any] | None:
    """The AKS cluster the stack runs on, as Azure has it: cluster.existing's, or the one it
    created (None before the first `up`)."""
    if config.cluster.existing is not None:
        found = api.managed_cluster(config.cluster.existing.resource_group, config.cluster.existing.name)
        if found is None:
            raise PreflightError(
                f"cluster.existing {config.cluster.existing.resource_group}/"
                f"{config.cluster.existing.name} is not in subscription {api.subscription}"
            )
        return found
    mine = [
        c
        for c in api.managed_clusters()
        if (c.get("tags") or {}).get(STACK_TAG) == stack_tag and c.get("name") == config.cluster.name
    ]
    return mine[0] if mine else None


def read(config: StackConfig, api: ComputeApi, stack_tag: str) -> Assessment:
    """Azure's answers for the stack's region and cluster, assessed; a cluster's extensions that
    clash with the stack's installs are errors under every quota policy (an extension can be added
    after the stack, so every run reads them). Raises PreflightError if Azure cannot be read."""
    cluster = own_cluster(config, api, stack_tag)
    assessment = assess(
        config,
        parse_usages(api.usages(config.location)),
        parse_skus(api.skus(config.location), config.location),
        parse_running_pools(cluster) if cluster else (),
        api.subscription,
    )
    if cluster is None:
        return assessment
    facts = cluster_facts(cluster)
    found = extension_problems(config, parse_extensions(api.extensions(facts.resource_group, facts.name)), facts)
    return replace(assessment, errors=(*assessment.errors, *found))


def decide(config: StackConfig, assessment: Assessment) -> tuple[StackConfig, list[str]]:
    """The config to build from, and warnings to show; raises PreflightFailed on what policy forbids."""
    policy = config.preflight.quota_policy
    errors = [*assessment.errors, *(assessment.shortfalls if policy == "error" else ())]
    if errors:
        raise PreflightFailed(errors)
    if not assessment.shortfalls:
        return config, []
    if policy == "warn":
        return config, [
            f"preflight: {p} (quotaPolicy: warn, so Kueue's quotas still count maxCount nodes that "
            "Azure will not create)"
            for p in assessment.shortfalls
        ]
    smaller = clamped(config, assessment.fits)
    notes = [
        f"preflight: pool {p.name}: Kueue's quotas count {p.capacity_nodes} of its {p.max_count} nodes, what "
        "the subscription's vCPU quota allows (quotaPolicy: clamp); raise the quota and run `pulumi up` again "
        "to count them all"
        for p in smaller.node_pools
        if p.quota_nodes is not None
    ]
    return smaller, notes
