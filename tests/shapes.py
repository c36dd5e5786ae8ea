"""Every stack the tests know, as the program runs it under the mocks: the dev stack as committed,
the e2e tier's shapes, the MultiKueue example, and the modes and features that change what the
program creates (existing cluster, AKS's Kueue extension, monitoring off or on existing Azure
resources, team identities, a cluster by kubeconfig). tests/arm/test_specs.py checks what goes to Azure,
tests/test_assembly.py what goes to the cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any
from unittest import mock

from components import assembly

from tests.access.test_identity import with_identities
from tests.arm.specs import RESOURCES
from tests.cluster.test_modes import EXISTING, KUBECONFIG, with_cluster
from tests.cluster.test_network import byo_config
from tests.e2e import stacks as e2e
from tests.harness import ProgramMocks, ProgramRun, Registration, generous_azure, run_program, stack_file_config
from tests.kueue.test_extension import extension_stack
from tests.monitoring.test_monitoring import GRAFANA_ID, WORKSPACE_ID


@dataclass(frozen=True)
class Shape:
    """A stack as a test runs it: its config map, stack name, and (a MultiKueue manager) the
    workers whose outputs its StackReferences read."""

    config: Callable[[], dict[str, Any]]
    stack: str = "dev"
    workers: tuple[str, ...] = ()
    mode: str = "create"


def _e2e(stack: str) -> Shape:
    return Shape(lambda: e2e.config_map(stack), stack)


def _existing(base: Callable[[], dict[str, Any]], **keys: Any) -> Shape:
    return Shape(lambda: with_cluster(base(), {"existing": EXISTING}, **keys), mode="existing")


SHAPES: dict[str, Shape] = {
    "dev": Shape(stack_file_config),
    **{f"e2e-{stack}": _e2e(stack) for stack in (*e2e.STACKS, e2e.UNGOVERNED) if stack != "dev"},  # dev: above
    **{stack: Shape(lambda stack=stack: e2e.config_map(stack), stack) for stack in e2e.MULTIKUEUE_WORKERS},
    e2e.MULTIKUEUE_MANAGER: Shape(
        lambda: e2e.config_map(e2e.MULTIKUEUE_MANAGER), e2e.MULTIKUEUE_MANAGER, e2e.MULTIKUEUE_WORKERS
    ),
    # AKS's Kueue extension, with monitoring on an existing workspace and Grafana.
    "aks-extension": Shape(
        lambda: {
            **extension_stack(),
            "kueue-aks:monitoring": {"enabled": True, "azureMonitorWorkspaceId": WORKSPACE_ID, "grafanaId": GRAFANA_ID},
        }
    ),
    "existing": _existing(stack_file_config, monitoring={"enabled": True, "azureMonitorWorkspaceId": WORKSPACE_ID}),
    # In a region the extension is offered in (extension_stack's); monitoring off.
    "existing-aks-extension": _existing(
        extension_stack, kueue={"install": "aksExtension"}, monitoring={"enabled": False}
    ),
    # Team identities for their data (a role by name, one by ID, in two subscriptions), on a new
    # cluster and on an existing one.
    "identities": Shape(lambda: with_identities(stack_file_config())),
    "existing-identities": _existing(
        lambda: with_identities(stack_file_config(), members=False), monitoring={"enabled": False}
    ),
    # In a subnet of the company's VNet (the GPU pool in its own), egress by its routes, the API
    # server open to two ranges only.
    "byo-network": Shape(byo_config),
    # The e2e tier's engine stack, a cluster by kubeconfig.
    "kubeconfig": Shape(
        lambda: {**e2e.engine_config(), "kueue-aks:cluster": {"kubeconfig": KUBECONFIG}}, e2e.ENGINE, mode="kubeconfig"
    ),
}


@dataclass
class StackRun:
    run: ProgramRun
    mocks: ProgramMocks
    preflight: list[tuple[str, Any]]  # each read of the loopback Azure: (path with query, its answer)
    parts: list[tuple[assembly.Part, ...]]  # what each call of components.assembly.stack_parts returned

    def azure(self) -> list[Registration]:
        return [r for r in self.run.registrations if r.type in RESOURCES]


@cache
def stack_run(name: str) -> StackRun:
    """The shape run once a session (a manager's workers first: their outputs are its input)."""
    shape = SHAPES[name]
    config = shape.config()
    mocks = ProgramMocks(stacks={f"organization/kueue-aks/{w}": dict(stack_run(w).run.exports) for w in shape.workers})
    azure = generous_azure(config, shape.stack)
    start = len(azure.requests)
    parts: list[tuple[assembly.Part, ...]] = []

    def recorded(*args: Any, **kwargs: Any) -> tuple[assembly.Part, ...]:
        parts.append(stack_parts(*args, **kwargs))
        return parts[-1]

    stack_parts = assembly.stack_parts
    with mock.patch.object(assembly, "stack_parts", recorded):
        run = run_program(config, stack=shape.stack, mocks=mocks, azure=azure)
    return StackRun(run, mocks, [(path, azure.answer(path)[2]) for path, _ in azure.requests[start:]], parts)
