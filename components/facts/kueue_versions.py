"""What each supported Kueue release accepts: feature gates and job frameworks.

Config validation checks `kueue-aks:kueue` against these tables before anything is deployed,
because Kueue refuses to start on an unknown or removed gate, a locked gate set the other way,
or an unknown framework name. The tables are derived from Kueue's own data at each release tag
(gates: `site/data/featuregates/versioned_feature_list.yaml` and `removed_feature_list.yaml`;
frameworks: `pkg/config/validation.go`); tests/facts/test_kueue_versions.py checks them against the
upstream files kept in ../shared. To support a new Kueue release, add its entry here and its
data to ../shared, and read the release's "Actions Required" notes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_VERSION = "0.19.2"


@dataclass(frozen=True)
class Gate:
    stage: str  # Alpha | Beta | GA | Deprecated
    default: bool
    locked: bool = False  # LockToDefault: setting the other value stops the manager


@dataclass(frozen=True)
class KueueRelease:
    version: str
    gates: Mapping[str, Gate]
    removed_gates: frozenset[str]
    frameworks: frozenset[str]
    # Gates that need TopologyAwareScheduling: config validation fails
    # ("cannot use a TAS profile with TAS disabled") if TAS is off and these are on.
    tas_subgates: frozenset[str]


# Frameworks that run plain pods under Kueue: enabling any of them makes Kueue's pod webhook
# act on every namespace its managedJobsNamespaceSelector matches.
POD_BASED_FRAMEWORKS = frozenset({"pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"})

_V0_19_2 = KueueRelease(
    version="0.19.2",
    gates={
        "AdmissionFairSharing": Gate("Beta", True),
        "AdmissionGatedBy": Gate("Beta", True),
        "AssignQueueLabelsForPods": Gate("Beta", True),
        "CleanupProvisioningRequestsOnEviction": Gate("Beta", True),
        "ConcurrentAdmission": Gate("Alpha", False),
        "CustomMetricLabels": Gate("Alpha", False),
        "DeferRayServiceFinalizationForRedisCleanup": Gate("Beta", True),
        "DisableWaitForPodsReady": Gate("Alpha", False),
        "ElasticJobsViaWorkloadSlices": Gate("Beta", True),
        "ElasticJobsViaWorkloadSlicesWithTAS": Gate("Alpha", False),
        "FailureRecoveryPolicy": Gate("Alpha", False),
        "FairSharingPreemptWithinNominal": Gate("Beta", True),
        "FairSharingPrioritizeNonBorrowing": Gate("Beta", True),
        "FastQuotaReleaseInPodIntegration": Gate("Alpha", False),
        "FinishOrphanedWorkloads": Gate("Beta", True),
        "FlavorFungibility": Gate("Beta", True),
        "FlavorFungibilityPreserveScanProgress": Gate("Beta", True),
        "HierarchicalCohorts": Gate("GA", True, locked=True),
        "KueueDRAIntegration": Gate("Beta", True),
        "KueueDRAIntegrationConsumableCapacity": Gate("Alpha", False),
        "KueueDRAIntegrationExtendedResource": Gate("Beta", True),
        "KueueDRAIntegrationPartitionableDevices": Gate("Beta", True),
        "KueueDRARejectWorkloadsWhenDRADisabled": Gate("Beta", True),
        "LWSImmutableGroupSize": Gate("Beta", True),
        "LocalQueueMetrics": Gate("Beta", True),
        "ManagedJobsNamespaceSelectorAlwaysRespected": Gate("GA", True, locked=True),
        "MetricForWorkloadCreationLatency": Gate("Beta", True),
        "MetricsForCohorts": Gate("Beta", True),
        "MultiKueue": Gate("Beta", True),
        "MultiKueueAdaptersForCustomJobs": Gate("Beta", True),
        "MultiKueueAllowInsecureKubeconfigs": Gate("Deprecated", False, locked=True),
        "MultiKueueClusterProfile": Gate("Alpha", False),
        "MultiKueueIncrementalDispatcherConfig": Gate("Beta", True),
        "MultiKueueIncrementalDispatcherRespectConfigOrder": Gate("Beta", True),
        "MultiKueueKubeConfigPathValidation": Gate("Alpha", False),
        "MultiKueueManagerQuotaAutomation": Gate("Alpha", False),
        "MultiKueueOrchestratedPreemption": Gate("Alpha", False),
        "MultiKueueRedoAdmissionOnEvictionInWorker": Gate("GA", True, locked=True),
        "MultiKueueRemoteSpecSync": Gate("Beta", True),
        "MultiKueueWaitForWorkloadAdmitted": Gate("GA", True, locked=True),
        "ObjectRetentionPolicies": Gate("GA", True, locked=True),
        "PartialAdmission": Gate("Beta", True),
        "PodIntegrationValidateGroupOwner": Gate("Beta", True),
        "PrioritizePreemptorWorkloads": Gate("Alpha", False),
        "PriorityBoost": Gate("Alpha", False),
        "PrioritySortingWithinCohort": Gate("Beta", True),
        "PropagateBatchJobLabelsToWorkload": Gate("GA", True, locked=True),
        "QuotaCheckStrategy": Gate("Beta", True),
        "ReclaimablePods": Gate("Beta", True),
        "RecomputeAssignmentUponPreemptionTargetsOverlap": Gate("Alpha", False),
        "RejectUpdatesToCQWithInvalidOnFlavors": Gate("Alpha", False),
        "RemoveFinalizersWithStrictPatch": Gate("Beta", True),
        "SchedulerLibraryIntegration": Gate("Alpha", False),
        "SchedulerLongRequeueInterval": Gate("Alpha", False),
        "SchedulerTimestampPreemptionBuffer": Gate("Alpha", False),
        "SchedulingEquivalenceHashing": Gate("Beta", True),
        "ShortWorkloadNames": Gate("Alpha", False),
        "SkipAncestorCheckForDeletedWorkloads": Gate("Beta", True),
        "SkipFinalizersForPodsSuspendedByParent": Gate("GA", True, locked=True),
        "SkipReassignmentForPodOwnedWorkloads": Gate("Beta", True),
        "SparkApplicationIntegration": Gate("Alpha", False),
        "TASAssignmentsEncodingByHostnamePrefix": Gate("Beta", True),
        "TASBalancedPlacement": Gate("Alpha", False),
        "TASCacheNodeMatchResults": Gate("Beta", True),
        "TASCacheTopologyTree": Gate("Alpha", False),
        "TASCachingRemainingResources": Gate("Beta", True),
        "TASFailedNodeReplacement": Gate("Beta", True),
        "TASFailedNodeReplacementFailFast": Gate("Beta", True),
        "TASHandleOverlappingFlavors": Gate("Beta", True),
        "TASMultiLayerTopology": Gate("Beta", True),
        "TASProfileMixed": Gate("Beta", True),
        "TASRecomputeAssignmentWithinSchedulingCycle": Gate("Beta", True),
        "TASReplaceNodeDueToNotReadyOverFixedTime": Gate("Deprecated", False),
        "TASReplaceNodeOnNodeTaints": Gate("Beta", True),
        "TASReplaceNodeOnPodTermination": Gate("Beta", True),
        "TASRespectNodeAffinityPreferred": Gate("Alpha", False),
        "TASValidateWorkloadSliceSize": Gate("Beta", True),
        "TLSOptions": Gate("Beta", True),
        "TopologyAwareScheduling": Gate("Beta", True),
        "UnadmittedWorkloadsExplicitStatus": Gate("Beta", False),
        "UnadmittedWorkloadsObservability": Gate("Beta", False),
        "ValidateRayAndSparkJobUpdates": Gate("Beta", True),
        "VectorizedResourceRequests": Gate("Beta", True),
        "VisibilityOnDemand": Gate("Beta", True),
        "WorkloadIdentifierAnnotations": Gate("Beta", True),
        "WorkloadPriorityClassDefaulting": Gate("Alpha", False),
        "WorkloadRequestUseMergePatch": Gate("Alpha", False),
        "WorkloadValidateResourcesAreNonNegative": Gate("Beta", True),
        "WorkloadValidationForPodSetMetadata": Gate("Beta", True),
    },
    removed_gates=frozenset(
        {
            "AdmissionCheckValidationRules",
            "ConfigurableResourceTransformations",
            "DRAExtendedResources",
            "ExposeFlavorsInLocalQueue",
            "FlavorFungibilityImplicitPreferenceDefault",
            "KeepQuotaForProvReqRetry",
            "LendingLimit",
            "LocalQueueDefaulting",
            "ManagedJobsNamespaceSelector",
            "MultiKueueBatchJobWithManagedBy",
            "MultiplePreemptions",
            "ProvisioningACC",
            "QueueVisibility",
            "SanitizePodSets",
            "TASProfileLeastFreeCapacity",
            "WorkloadResourceRequestsSummary",
        }
    ),
    frameworks=frozenset(
        {
            "batch/job",
            "kubeflow.org/mpijob",
            "kubeflow.org/paddlejob",
            "kubeflow.org/pytorchjob",
            "kubeflow.org/tfjob",
            "kubeflow.org/xgboostjob",
            "kubeflow.org/jaxjob",
            "trainer.kubeflow.org/trainjob",
            "ray.io/rayjob",
            "ray.io/rayservice",
            "ray.io/raycluster",
            "jobset.x-k8s.io/jobset",
            "leaderworkerset.x-k8s.io/leaderworkerset",
            "workload.codeflare.dev/appwrapper",
            "sparkoperator.k8s.io/sparkapplication",
            "pod",
            "deployment",
            "statefulset",
        }
    ),
    # The TAS sub-gates, on by default, which Kueue refuses with TAS off (kubernetes-sigs/kueue
    # pkg/config/validation.go@v0.19.2).
    tas_subgates=frozenset(
        {
            "TASProfileMixed",
            "TASHandleOverlappingFlavors",
            "TASFailedNodeReplacement",
            "TASFailedNodeReplacementFailFast",
            "TASReplaceNodeOnPodTermination",
            "TASReplaceNodeOnNodeTaints",
            "TASMultiLayerTopology",
            "TASRecomputeAssignmentWithinSchedulingCycle",
        }
    ),
)

_V0_18_4 = KueueRelease(
    version="0.18.4",
    gates={
        "AdmissionFairSharing": Gate("Beta", True),
        "AdmissionGatedBy": Gate("Alpha", False),
        "AssignQueueLabelsForPods": Gate("Beta", True),
        "CleanupProvisioningRequestsOnEviction": Gate("Beta", True),
        "ConcurrentAdmission": Gate("Alpha", False),
        "CustomMetricLabels": Gate("Alpha", False),
        "DRAExtendedResources": Gate("Deprecated", False, locked=True),
        "DeferRayServiceFinalizationForRedisCleanup": Gate("Beta", True),
        "DynamicResourceAllocation": Gate("Deprecated", False, locked=True),
        "ElasticJobsViaWorkloadSlices": Gate("Beta", True),
        "ElasticJobsViaWorkloadSlicesWithTAS": Gate("Alpha", False),
        "FailureRecoveryPolicy": Gate("Alpha", False),
        "FairSharingPreemptWithinNominal": Gate("Beta", True),
        "FairSharingPrioritizeNonBorrowing": Gate("Beta", True),
        "FastQuotaReleaseInPodIntegration": Gate("Alpha", False),
        "FinishOrphanedWorkloads": Gate("Beta", True),
        "FlavorFungibility": Gate("Beta", True),
        "HierarchicalCohorts": Gate("GA", True, locked=True),
        "KueueDRAIntegration": Gate("Beta", True),
        "KueueDRAIntegrationExtendedResource": Gate("Alpha", False),
        "KueueDRAIntegrationPartitionableDevices": Gate("Alpha", False),
        "KueueDRARejectWorkloadsWhenDRADisabled": Gate("Beta", True),
        "LendingLimit": Gate("GA", True, locked=True),
        "LocalQueueDefaulting": Gate("GA", True, locked=True),
        "LocalQueueMetrics": Gate("Beta", True),
        # Beta and unlocked here (GA and locked from 0.19): on by default, but a stack may turn it off.
        "ManagedJobsNamespaceSelectorAlwaysRespected": Gate("Beta", True),
        "MetricForWorkloadCreationLatency": Gate("Beta", True),
        "MetricsForCohorts": Gate("Beta", True),
        "MultiKueue": Gate("Beta", True),
        "MultiKueueAdaptersForCustomJobs": Gate("Beta", True),
        "MultiKueueAllowInsecureKubeconfigs": Gate("Deprecated", False),
        "MultiKueueBatchJobWithManagedBy": Gate("GA", True, locked=True),
        "MultiKueueClusterProfile": Gate("Alpha", False),
        "MultiKueueManagerQuotaAutomation": Gate("Alpha", False),
        "MultiKueueOrchestratedPreemption": Gate("Alpha", False),
        "MultiKueueRedoAdmissionOnEvictionInWorker": Gate("GA", True, locked=True),
        "MultiKueueWaitForWorkloadAdmitted": Gate("GA", True, locked=True),
        "ObjectRetentionPolicies": Gate("GA", True, locked=True),
        "PartialAdmission": Gate("Beta", True),
        "PriorityBoost": Gate("Alpha", False),
        "PrioritySortingWithinCohort": Gate("Beta", True),
        "PropagateBatchJobLabelsToWorkload": Gate("GA", True, locked=True),
        "QuotaCheckStrategy": Gate("Alpha", False),
        "ReclaimablePods": Gate("Beta", True),
        "RejectUpdatesToCQWithInvalidOnFlavors": Gate("Alpha", False),
        "RemoveFinalizersWithStrictPatch": Gate("Beta", True),
        "SanitizePodSets": Gate("GA", True, locked=True),
        "SchedulerLongRequeueInterval": Gate("Alpha", False),
        "SchedulerTimestampPreemptionBuffer": Gate("Alpha", False),
        "SchedulingEquivalenceHashing": Gate("Beta", True),
        "ShortWorkloadNames": Gate("Alpha", False),
        "SkipFinalizersForPodsSuspendedByParent": Gate("GA", True, locked=True),
        "SkipReassignmentForPodOwnedWorkloads": Gate("Alpha", False),
        "SparkApplicationIntegration": Gate("Alpha", False),
        "TASBalancedPlacement": Gate("Alpha", False),
        "TASCacheNodeMatchResults": Gate("Beta", True),
        "TASCachingRemainingResources": Gate("Beta", True),
        "TASFailedNodeReplacement": Gate("Beta", True),
        "TASFailedNodeReplacementFailFast": Gate("Beta", True),
        "TASHandleOverlappingFlavors": Gate("Beta", True),
        "TASMultiLayerTopology": Gate("Alpha", False),
        "TASProfileMixed": Gate("Beta", True),
        "TASRecomputeAssignmentWithinSchedulingCycle": Gate("Beta", True),
        "TASReplaceNodeDueToNotReadyOverFixedTime": Gate("Beta", True),
        "TASReplaceNodeOnNodeTaints": Gate("Beta", True),
        "TASReplaceNodeOnPodTermination": Gate("Beta", True),
        "TASRespectNodeAffinityPreferred": Gate("Alpha", False),
        "TLSOptions": Gate("Beta", True),
        "TopologyAwareScheduling": Gate("Beta", True),
        "VectorizedResourceRequests": Gate("Beta", True),
        "VisibilityOnDemand": Gate("Beta", True),
        "WorkloadIdentifierAnnotations": Gate("Beta", True),
        "WorkloadPriorityClassDefaulting": Gate("Alpha", False),
        "WorkloadRequestUseMergePatch": Gate("Alpha", False),
    },
    removed_gates=frozenset(
        {
            "AdmissionCheckValidationRules",
            "ConfigurableResourceTransformations",
            "ExposeFlavorsInLocalQueue",
            "FlavorFungibilityImplicitPreferenceDefault",
            "KeepQuotaForProvReqRetry",
            "ManagedJobsNamespaceSelector",
            "MultiplePreemptions",
            "ProvisioningACC",
            "QueueVisibility",
            "TASProfileLeastFreeCapacity",
            "WorkloadResourceRequestsSummary",
        }
    ),
    # kueue v0.18.4 source: pkg/config/validation.go validateIntegrations accepts the integrations
    # registered under pkg/controller/jobs (their FrameworkName): the same 18 as at v0.19.2.
    frameworks=frozenset(
        {
            "batch/job",
            "kubeflow.org/mpijob",
            "kubeflow.org/paddlejob",
            "kubeflow.org/pytorchjob",
            "kubeflow.org/tfjob",
            "kubeflow.org/xgboostjob",
            "kubeflow.org/jaxjob",
            "trainer.kubeflow.org/trainjob",
            "ray.io/rayjob",
            "ray.io/rayservice",
            "ray.io/raycluster",
            "jobset.x-k8s.io/jobset",
            "leaderworkerset.x-k8s.io/leaderworkerset",
            "workload.codeflare.dev/appwrapper",
            "sparkoperator.k8s.io/sparkapplication",
            "pod",
            "deployment",
            "statefulset",
        }
    ),
    # kueue v0.18.4 source: pkg/config/validation.go validateFeatureGates: the gates it rejects with
    # TAS off that are on by default at 0.18. Unlike 0.19.2: TASReplaceNodeDueToNotReadyOverFixedTime
    # is still Beta and on, TASMultiLayerTopology is Alpha and off, and
    # TASRecomputeAssignmentWithinSchedulingCycle is not yet checked against TAS. Checked against a
    # v0.18.4 build: with TAS off it starts only once all seven are off.
    tas_subgates=frozenset(
        {
            "TASProfileMixed",
            "TASHandleOverlappingFlavors",
            "TASFailedNodeReplacement",
            "TASFailedNodeReplacementFailFast",
            "TASReplaceNodeOnPodTermination",
            "TASReplaceNodeDueToNotReadyOverFixedTime",
            "TASReplaceNodeOnNodeTaints",
        }
    ),
)

RELEASES: Mapping[str, KueueRelease] = {r.version: r for r in (_V0_18_4, _V0_19_2)}


# The extension as AKS's docs install it (learn.microsoft.com/azure/aks/kueue-overview, extension
# pivot, `az k8s-extension create`): its type (written in lower case there; ARM compares types without
# case) and its instance name, which is also its Helm release's name.
AKS_EXTENSION_TYPE = "microsoft.kueue"
AKS_EXTENSION_NAME = "kueue"


@dataclass(frozen=True)
class AksKueueExtension:
    """A pinned version of AKS's managed Kueue extension (`microsoft.kueue`, preview).

    The version and regions are from learn.microsoft.com/azure/aks/kueue-overview?pivots=extension,
    the Kubernetes floor from .../install-the-managed-kueue-extension-on-aks, the job kinds from
    Azure/AKS#5967 ("submit Job / JobSet / RayJob workloads").
    """

    version: str  # the extension's own version, pinned on the Extension resource
    kueue: str  # the Kueue release it ships
    # The release in RELEASES whose gates, frameworks and CRDs validate the stack's objects for it.
    # Kueue 0.19.6's reference data is not in ../shared (tools/fetch_reference cannot reach GitHub
    # here, and the Go module proxy does not serve sigs.k8s.io/kueue@v0.19.6 to this machine), so
    # the nearest 0.19 release with data stands in; the v1beta2 API is the 0.19 line's.
    schema: str
    frameworks: tuple[str, ...]  # the job kinds it is documented to queue
    regions: frozenset[str]  # Azure regions that offer it
    min_kubernetes: tuple[int, int]


# The WorkloadPriorityClasses every version of the extension creates, with their values
# (learn.microsoft.com/azure/aks/configure-queues-with-automatic-resource-flavors).
AKS_PRIORITY_CLASSES: Mapping[str, int] = {
    "aks-low-priority": 100,
    "aks-medium-priority": 500,
    "aks-high-priority": 1000,
}

AKS_EXTENSIONS: Mapping[str, AksKueueExtension] = {
    e.version: e
    for e in (
        AksKueueExtension(
            version="0.19.6-aks.0.4.4",
            kueue="0.19.6",
            schema="0.19.2",
            frameworks=("batch/job", "jobset.x-k8s.io/jobset", "ray.io/rayjob"),
            regions=frozenset({"centralus", "westus", "westus2", "eastus"}),
            min_kubernetes=(1, 34),
        ),
    )
}
DEFAULT_AKS_EXTENSION = "0.19.6-aks.0.4.4"
