"""The tier's in-process reads (testbed.cluster.ApiReads) answer what `kubectl get -o json` answers,
on a real API server: every probe of the tier reads through them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.config.names import KUEUE_NAMESPACE, POOL_LABEL
from components.kueue.values import KUEUE_RELEASE_NAME
from testbed.cluster import ApiReads, E2EError
from testbed.control_planes import on_stacks
from testbed.stack_cluster import StackCluster

STACK = "design"


def stable(found: Any) -> Any:
    """What two reads a moment apart agree on: controllers update status, and kwok the nodes' leases."""
    if found.get("kind") == "List":
        return sorted(
            (i["apiVersion"], i["kind"], i["metadata"].get("namespace", ""), i["metadata"]["uid"])
            for i in found["items"]
        )
    return found["apiVersion"], found["kind"], found["metadata"]["uid"], found.get("spec")


def kubectl_get(cluster: StackCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl.run("get", "-o", "json", *args).stdout)


@on_stacks(STACK)
def test_each_shape_the_tier_reads_is_what_kubectl_prints(cluster: StackCluster) -> None:
    queue = next(o["metadata"]["name"] for o in cluster.objects if o["kind"] == "ClusterQueue")
    pool = cluster.config.node_pools[0].name
    shapes = [
        ("nodes",),
        ("nodes", "-l", f"{POOL_LABEL}={pool}"),
        ("namespaces",),
        ("clusterqueues.kueue.x-k8s.io",),
        ("clusterqueue.kueue.x-k8s.io", queue),
        ("localqueues.kueue.x-k8s.io", "-A"),
        ("pods", "-n", KUEUE_NAMESPACE),
        ("secrets", f"--namespace={KUEUE_NAMESPACE}", "-l", f"owner=helm,name={KUEUE_RELEASE_NAME}"),
        ("crd", "clusterqueues.kueue.x-k8s.io"),
        ("deploy", "-n", KUEUE_NAMESPACE),
        ("configmaps",),  # the namespace kubectl defaults to
    ]
    reads = ApiReads(cluster.kubectl.kubeconfig)
    for args in shapes:
        mine, theirs = reads.get(args), kubectl_get(cluster, *args)
        print(args, stable(mine)[:3] if mine is not None else None)
        assert mine is not None, f"{args} ran kubectl"
        assert stable(mine) == stable(theirs), args
        assert mine.get("kind") != "List" or [i["kind"] for i in mine["items"]] == [i["kind"] for i in theirs["items"]]


@on_stacks(STACK)
def test_a_missing_object_fails_as_kubectls_does_and_other_shapes_run_kubectl(cluster: StackCluster) -> None:
    reads = ApiReads(cluster.kubectl.kubeconfig)
    with pytest.raises(
        E2EError, match=r'Error from server \(NotFound\): clusterqueues.kueue.x-k8s.io "absent" not found'
    ):
        reads.get(("clusterqueue.kueue.x-k8s.io", "absent"))
    for args in [("nodes,pods",), ("node/x",), ("pods", "-o", "name"), ("nodes", "a", "b"), ("no-such-kind",)]:
        assert reads.get(args) is None, args
    # A kind installed after the first read is found: discovery is read again on a miss.
    plural = "e2ereads"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": plural, "singular": "e2eread", "kind": "E2eRead", "listKind": "E2eReadList"},
            "scope": "Cluster",
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
            ],
        },
    }
    cluster.kubectl.apply([crd])
    try:
        cluster.kubectl.run("wait", "--for=condition=Established", f"crd/{plural}.example.com", "--timeout=30s")
        assert reads.get(("e2eread",)) == {
            "apiVersion": "v1",
            "kind": "List",
            "items": [],
            "metadata": {"resourceVersion": ""},
        }
    finally:
        cluster.kubectl.run("delete", "crd", f"{plural}.example.com")


@on_stacks(STACK)
def test_an_aggregated_api_that_does_not_answer_is_left_out_as_kubectl_leaves_it(cluster: StackCluster) -> None:
    """An APIService whose Service has no server (Kueue's visibility API while Kueue starts)
    answers discovery with a plain-text 503; every other type is still read."""
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "e2e-nobody", "namespace": "default"}}
    service["spec"] = {"ports": [{"port": 443}]}
    api = {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1.e2e-unserved.example.com"},
        "spec": {
            "group": "e2e-unserved.example.com",
            "version": "v1",
            "service": {"name": "e2e-nobody", "namespace": "default", "port": 443},
            "insecureSkipTLSVerify": True,
            "groupPriorityMinimum": 100,
            "versionPriority": 10,
        },
    }
    cluster.kubectl.apply([service, api])
    try:
        reads = ApiReads(cluster.kubectl.kubeconfig)
        assert stable(reads.get(("nodes",))) == stable(kubectl_get(cluster, "nodes"))
    finally:
        cluster.kubectl.run("delete", "apiservice", "v1.e2e-unserved.example.com")
        cluster.kubectl.run("delete", "service", "e2e-nobody", "-n", "default")
