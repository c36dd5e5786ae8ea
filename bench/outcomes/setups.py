"""The set-ups the benchmark compares, as plain data: the same node pools, four ways to share them.

1. `kueue-aks`: the program's own Helm values and objects for the stack (components/).
2. `single-queue`: Kueue's quick-start shape (one empty ResourceFlavor, one ClusterQueue for every
   namespace, quotas typed from the pools' raw VM sizes), installed with the Kueue-on-AKS guide's
   Helm values (the TopologyAwareScheduling and LocalQueueMetrics gates, its framework list, the
   chart's other defaults). Source: learn.microsoft.com/azure/aks/kueue-overview (MicrosoftDocs/azure-aks-docs
   articles/aks/kueue-overview.md@fb060ab) and Kueue's single-clusterqueue-setup.yaml.
3. `team-quotas`: the Azure example's shape (Azure/AKS examples/kueue-and-ray-on-aks@8d1c890, option B): a
   ClusterQueue per team in one cohort, flavors `default` (no labels) for cpu and memory and `gpu` for GPUs, quotas from the SKU's raw vCPU, memory and GPU counts split by share,
   borrowingLimit equal to the quota, preemption LowerPriority within the queue and Any to reclaim.
4. `no-kueue`: the same Jobs straight to kube-scheduler.
The hand-written set-ups run on the pools as a hand-built AKS cluster has them: GPU nodes tainted
`nvidia.com/gpu`, no kueue-aks governance taint; their users add the GPU toleration to their jobs.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from components.k8s.resources import RESOURCE_GPU as GPU_RESOURCE
from components.config.pools import NodePool
from components.config.stack import StackConfig
from components.kueue.objects import LOCAL_QUEUE_NAME, build_objects
from components.kueue.values import kueue_helm_values
from testbed.nodes import ACCELERATOR_LABEL

from .trace import TraceJob

KUEUE_AKS, SINGLE_QUEUE, TEAM_QUOTAS, NO_KUEUE = "kueue-aks", "single-queue", "team-quotas", "no-kueue"
SETUPS = (KUEUE_AKS, SINGLE_QUEUE, TEAM_QUOTAS, NO_KUEUE)
API = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
TRACE_LABEL = "bench.kueue-aks.io/trace"
RUN_FOR_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"  # read by testbed/stages.yaml
GPU_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
# The guide's integrations (articles/aks/kueue-overview.md@fb060ab): batch/job, Kubeflow v1, Ray and JobSet.
GUIDE_FRAMEWORKS = (
    "batch/job",
    "kubeflow.org/mpijob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/jaxjob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "jobset.x-k8s.io/jobset",
)


@dataclass(frozen=True)
class Setup:
    name: str
    program: bool  # the program's own values and objects (the cluster replays `pulumi up`)
    helm_values: Mapping[str, Any] | None  # None: no Kueue
    objects: Sequence[Mapping[str, Any]] = field(default=())  # in apply order (tests/e2e: each after what it names)
    queues: Mapping[str, str] = field(default_factory=dict)  # team -> LocalQueue its jobs name
    tolerate_gpu: bool = True  # users write the GPU toleration themselves
    gpu_queues: Mapping[str, str] = field(default_factory=dict)  # team -> LocalQueue of its GPU jobs, if another

    def queue_for(self, job: TraceJob) -> str | None:
        """The LocalQueue the job's user names (None: no Kueue)."""
        if job.is_gpu and job.team in self.gpu_queues:
            return self.gpu_queues[job.team]
        return self.queues.get(job.team)


def raw(pool: NodePool) -> dict[str, int]:
    """What the pool's VM size says on Azure's page, times its nodes: vCPUs, GiB, GPUs."""
    vm = pool.node
    return {
        "cpu": vm.vcpus * pool.max_count,
        "memory": vm.memory_gib * pool.max_count,
        GPU_RESOURCE: vm.gpus * pool.max_count,
    }


def _namespaces(config: StackConfig) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": t.name}} for t in config.teams]


def _quota(resource: str, amount: float) -> dict[str, Any]:
    return {"name": resource, "nominalQuota": f"{round(amount)}Gi" if resource == "memory" else round(amount)}


def chart_config(chart_file: str) -> dict[str, Any]:
    """The manager config the chart ships in its values.yaml (Kueue's defaults)."""
    with tarfile.open(chart_file) as chart:
        member = chart.extractfile("kueue/values.yaml")
        assert member is not None, f"{chart_file} has no kueue/values.yaml"
        values = yaml.safe_load(io.TextIOWrapper(member, encoding="utf-8"))
    return dict(yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"]))


def guide_values(chart_file: str) -> dict[str, Any]:
    """The guide's Helm values: its two gates, its frameworks, the chart's defaults for the rest."""
    manager = chart_config(chart_file)
    manager["integrations"] = {"frameworks": list(GUIDE_FRAMEWORKS)}
    return {
        "controllerManager": {
            "featureGates": [
                {"name": "TopologyAwareScheduling", "enabled": True},
                {"name": "LocalQueueMetrics", "enabled": True},
            ]
        },
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(manager, sort_keys=False)},
    }


def single_queue(config: StackConfig, chart_file: str) -> Setup:
    totals = {r: sum(raw(p)[r] for p in config.node_pools) for r in ("cpu", "memory", GPU_RESOURCE)}
    objects: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}},
        {
            "apiVersion": API,
            "kind": "ClusterQueue",
            "metadata": {"name": "cluster-queue"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": list(totals),
                        "flavors": [{"name": "default-flavor", "resources": [_quota(r, a) for r, a in totals.items()]}],
                    }
                ],
            },
        },
        *_namespaces(config),
        *(
            {
                "apiVersion": API,
                "kind": "LocalQueue",
                "metadata": {"name": "user-queue", "namespace": t.name},
                "spec": {"clusterQueue": "cluster-queue"},
            }
            for t in config.teams
        ),
    ]
    return Setup(SINGLE_QUEUE, False, guide_values(chart_file), objects, {t.name: "user-queue" for t in config.teams})


def team_quotas(config: StackConfig, chart_file: str) -> Setup:
    cpu_memory = {r: sum(raw(p)[r] for p in config.node_pools) for r in ("cpu", "memory")}
    gpus = sum(raw(p)[GPU_RESOURCE] for p in config.node_pools)
    objects: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {
            "apiVersion": API,
            "kind": "ResourceFlavor",
            "metadata": {"name": "gpu"},
            "spec": {"nodeLabels": {ACCELERATOR_LABEL: "nvidia"}},
        },
    ]
    for team in config.teams:
        share = float(team.share) / 100

        def limited(resource: str, amount: float) -> dict[str, Any]:
            quota = _quota(resource, amount * share)
            return {**quota, "borrowingLimit": quota["nominalQuota"]}

        objects.append(
            {
                "apiVersion": API,
                "kind": "ClusterQueue",
                "metadata": {"name": f"{team.name}-cq"},
                "spec": {
                    "cohortName": "shared-cohort",
                    "namespaceSelector": {},
                    "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {"name": "default", "resources": [limited(r, a) for r, a in cpu_memory.items()]}
                            ],
                        },
                        {
                            "coveredResources": [GPU_RESOURCE],
                            "flavors": [{"name": "gpu", "resources": [limited(GPU_RESOURCE, gpus)]}],
                        },
                    ],
                },
            }
        )
    objects += _namespaces(config)
    objects += [
        {
            "apiVersion": API,
            "kind": "LocalQueue",
            "metadata": {"name": f"{t.name}-queue", "namespace": t.name},
            "spec": {"clusterQueue": f"{t.name}-cq"},
        }
        for t in config.teams
    ]
    return Setup(
        TEAM_QUOTAS, False, guide_values(chart_file), objects, {t.name: f"{t.name}-queue" for t in config.teams}
    )


def setups(config: StackConfig, chart_file: str) -> list[Setup]:
    """The four set-ups for a stack, the program's first. `config` is the program's stack config."""
    program = Setup(
        KUEUE_AKS,
        True,
        kueue_helm_values(config),
        build_objects(config),
        {t.name: LOCAL_QUEUE_NAME for t in config.teams},
        tolerate_gpu=False,
    )
    return [
        program,
        single_queue(config, chart_file),
        team_quotas(config, chart_file),
        Setup(NO_KUEUE, False, None, _namespaces(config)),
    ]


def job_object(job: TraceJob, setup: Setup) -> dict[str, Any]:
    """The batch/v1 Job a team's user submits for a trace job under `setup`."""
    resources = {"cpu": f"{job.pod.cpu_m}m", "memory": f"{job.pod.memory_mib}Mi"}
    if job.pod.gpus:
        resources[GPU_RESOURCE] = str(job.pod.gpus)
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.37",
                "command": ["true"],
                "resources": {"requests": resources, "limits": {k: v for k, v in resources.items() if k != "cpu"}},
            }
        ],
    }
    if job.pod.gpus and setup.tolerate_gpu:
        pod_spec["tolerations"] = [dict(GPU_TOLERATION)]
    labels = {TRACE_LABEL: job.name}
    queue = setup.queue_for(job)
    if queue is not None:
        labels[QUEUE_LABEL] = queue
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job.name, "namespace": job.team, "labels": labels},
        "spec": {
            "parallelism": job.pods,
            "completions": job.pods,
            "backoffLimit": 0,
            "template": {
                "metadata": {
                    "labels": {TRACE_LABEL: job.name},
                    "annotations": {RUN_FOR_ANNOTATION: f"{job.duration_s}s"},
                },
                "spec": pod_spec,
            },
        },
    }


def capacity_of(config: StackConfig) -> dict[str, float]:
    """The two dimensions the metrics use: GPUs, and millicores of every user pool (a CPU job may
    run on a GPU node when its flavor allows, and a GPU pod's CPU is used too)."""
    gpu = sum(p.capacity.gpus for p in config.node_pools)
    cpu = sum(p.capacity.cpu_millicores for p in config.node_pools)
    return {"gpu": float(gpu), "cpu": float(cpu)}
