"""The preflight in the program (before any resource) and in the plan command."""

from __future__ import annotations

from collections.abc import Sequence

from ..cluster.tags import STACK_TAG
from ..config import Problem, StackConfig
from .arm import ComputeApi, PreflightError
from .quota import Assessment, RunningPool, assess, clamped, parse_running_pools, parse_skus, parse_usages

# The tag by which a later preview finds the cluster this stack made, to count its nodes once.


class PreflightFailed(Exception):
    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"preflight: Azure cannot give this stack its pools ({len(self.problems)} "
                         f"problem{'s' if len(self.problems) != 1 else ''}):\n{lines}")


def own_pools(config: StackConfig, api: ComputeApi, stack_tag: str) -> tuple[RunningPool, ...]:
    """The pools of the cluster this stack already runs (none on a first `up`)."""
    if config.cluster.existing is not None:
        found = api.managed_cluster(config.cluster.existing.resource_group, config.cluster.existing.name)
        if found is None:
            raise PreflightError(f"cluster.existing {config.cluster.existing.resource_group}/"
                                 f"{config.cluster.existing.name} is not in subscription {api.subscription}")
        return parse_running_pools(found)
    mine = [c for c in api.managed_clusters()
            if (c.get("tags") or {}).get(STACK_TAG) == stack_tag and c.get("name") == config.cluster.name]
    return parse_running_pools(mine[0]) if mine else ()


def read(config: StackConfig, api: ComputeApi, stack_tag: str) -> Assessment:
    """Azure's answers for the stack's region, assessed. Raises PreflightError if Azure cannot be read."""
    return assess(config, parse_usages(api.usages(config.location)),
                  parse_skus(api.skus(config.location), config.location), own_pools(config, api, stack_tag),
                  api.subscription)


def decide(config: StackConfig, assessment: Assessment) -> tuple[StackConfig, list[str]]:
    """The config to build from, and warnings to show; raises PreflightFailed on what policy forbids."""
    policy = config.preflight.quota_policy
    errors = [*assessment.errors, *(assessment.shortfalls if policy == "error" else ())]
    if errors:
        raise PreflightFailed(errors)
    if not assessment.shortfalls:
        return config, []
    if policy == "warn":
        return config, [f"preflight: {p} (quotaPolicy: warn, so Kueue's quotas still count maxCount nodes that "
                        "Azure will not create)" for p in assessment.shortfalls]
    smaller = clamped(config, assessment.fits)
    notes = [f"preflight: pool {p.name}: Kueue's quotas count {p.capacity_nodes} of its {p.max_count} nodes, what "
             "the subscription's vCPU quota allows (quotaPolicy: clamp); raise the quota and run `pulumi up` again "
             "to count them all" for p in smaller.node_pools if p.quota_nodes is not None]
    return smaller, notes
