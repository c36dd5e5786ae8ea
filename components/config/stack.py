"""The whole parsed stack config: one frozen dataclass holding every section."""

from __future__ import annotations

from dataclasses import dataclass

from ..k8s.charts import RegistryLogin
from .cluster import ClusterSettings
from .device_plugin import DevicePluginSettings
from .governance import Governance
from .kueue import KueueSettings
from .monitoring import MonitoringSettings
from .multikueue import MultiKueue
from .operators import OperatorSettings
from .pools import NodePool
from .preflight import Preflight
from .teams import DEFAULT_PRIORITY, DEFAULT_PRIORITY_CLASSES, PriorityClass, Team
from .topology import DEFAULT_TOPOLOGY_LEVELS


@dataclass(frozen=True)
class StackConfig:
    stack: str
    location: str
    cluster: ClusterSettings
    node_pools: tuple[NodePool, ...]
    kueue: KueueSettings
    teams: tuple[Team, ...]
    priority_classes: tuple[PriorityClass, ...] = DEFAULT_PRIORITY_CLASSES
    topology_levels: tuple[str, ...] = DEFAULT_TOPOLOGY_LEVELS
    governance: Governance = Governance()
    device_plugin: DevicePluginSettings = DevicePluginSettings()
    monitoring: MonitoringSettings = MonitoringSettings()
    operators: tuple[OperatorSettings, ...] = ()  # every operator the frameworks need, in catalog order
    preflight: Preflight = Preflight()
    multi_kueue: MultiKueue = MultiKueue()
    registry_logins: tuple[RegistryLogin, ...] = ()  # Helm's sign-ins to private chart registries

    def pool(self, name: str) -> NodePool:
        return next(p for p in self.node_pools if p.name == name)

    @property
    def has_gpu(self) -> bool:
        return any(p.is_gpu for p in self.node_pools)

    @property
    def unlabelled_class(self) -> str | None:
        """The priority class a job without the priority-class label runs as: the first whose value
        is DEFAULT_PRIORITY, or None when no class has it."""
        return next((pc.name for pc in self.priority_classes if pc.value == DEFAULT_PRIORITY), None)

    @property
    def uses_topology(self) -> bool:
        return any(p.topology for p in self.node_pools)

    @property
    def reachable_nodes(self) -> int:
        """Every node the cluster can have: the system pool's and each user pool's maxCount."""
        return self.cluster.system_pool.count + sum(p.max_count for p in self.node_pools)
