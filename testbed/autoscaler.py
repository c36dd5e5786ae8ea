"""The real cluster autoscaler (1.33.0, kwok cloud provider) as a local process, with node groups
made from the program's own pool model.

AKS runs the autoscaler for every pool with `enableAutoScaling` (minCount < maxCount); here the
same pools become the kwok provider's node groups, one template per pool from nodes.pool_node (the
labels, taints and allocatable the flavors were built against), and every autoscaled pool starts
at minCount nodes, as on AKS. Fixed-size pools stay outside the autoscaler, as on AKS.

What differs from AKS, and why (kubernetes/autoscaler cluster-autoscaler/cloudprovider/kwok/README.md):
- the provider creates Node objects and kwok makes them Ready in about a second, where Azure takes
  minutes; it never drains a node it deletes (only empty nodes are removed here);
- created nodes copy the template's labels, so they would all share one `kubernetes.io/hostname`:
  the template has none and HostnameLabeler sets each node's own name, as a kubelet registers it;
- CA 1.33.0 needs `--kube-api-content-type=application/json` for ProvisioningRequests
  (kubernetes/autoscaler#8855) and is older than the API server (docs/autoscaling.md, version skew);
- the kwok provider reads its config and templates once, when it starts.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from components.config.names import POOL_LABEL
from components.config.pools import NodePool
from components.config.stack import StackConfig

from .cluster import Kubectl, StopWaiting, log_tail, stop_process, wait_for
from .nodes import ACCELERATOR_LABEL, HOSTNAME_LABEL, pool_node

NAMESPACE = "kube-system"
PROVIDER_CONFIG = "kwok-provider-config"
TEMPLATES = "kwok-provider-templates"
MIN_ANNOTATION = "cluster-autoscaler.kwok.nodegroup/min-count"
MAX_ANNOTATION = "cluster-autoscaler.kwok.nodegroup/max-count"
# CA leaves a node with this annotation in place (FAQ, "How can I prevent Cluster Autoscaler from
# scaling down a particular node?").
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
STATUS_CONFIG_MAP = "cluster-autoscaler-status"
# Shorter than AKS's defaults (10 s scan, 10 min before an unneeded node goes) so a scenario sees
# a scale-up and a scale-down within its deadline; both are AKS autoscaler-profile settings.
SCAN_INTERVAL = "3s"
SCALE_DOWN_UNNEEDED = "30s"
SCALE_DOWN_DELAY_AFTER_ADD = "20s"
# A ProvisioningRequest that finds no room (the pool at maxCount with nodes that are about to be
# removed) is retried after this backoff, doubling up to the max; CA's defaults, which AKS keeps
# (no autoscaler-profile field), are 1 and 10 min. Shortened in proportion to the times above.
PROVISIONING_BACKOFF = "5s"
PROVISIONING_MAX_BACKOFF = "20s"
# How long a wait that may include a scale-up can take: Azure takes minutes, kwok's nodes are Ready
# in about a second; this covers a few autoscaler loops, its wait for new pods and a loaded 2-core
# machine, and a ProvisioningRequest retried once the nodes an earlier scenario left have gone.
# Every wait for admission or for pods on nodes allows it, since pools start at minCount.
SCALE_UP_SECONDS = 120
SCALE_DOWN_SECONDS = 150  # 30 s unneeded + 20 s after a scale-up, plus loops


def autoscaled_pools(config: StackConfig) -> list[NodePool]:
    return [p for p in config.node_pools if p.autoscaled]


def template(config: StackConfig, pool: NodePool) -> dict[str, Any]:
    """The node group's template: a node of the pool without a hostname, with its size bounds."""
    node = pool_node(config, pool, f"{pool.name}-template")
    node["metadata"]["labels"].pop(HOSTNAME_LABEL)
    node["metadata"]["annotations"].update({MIN_ANNOTATION: str(pool.min_count), MAX_ANNOTATION: str(pool.max_count)})
    return node


def provider_config() -> dict[str, Any]:
    return {
        "apiVersion": "v1alpha1",
        "readNodesFrom": "configmap",
        "nodegroups": {"fromNodeLabelKey": POOL_LABEL},
        # The templates carry the pools' own taints; the provider's extra kwok-provider taint would
        # make every flavor's tolerations wrong.
        "nodes": {
            "skipTaint": True,
            "gpuConfig": {"gpuLabelKey": ACCELERATOR_LABEL, "availableGPUTypes": {"nvidia": {}}},
        },
        "configmap": {"name": TEMPLATES},
    }


def config_maps(config: StackConfig) -> list[dict[str, Any]]:
    templates = {"apiVersion": "v1", "kind": "List", "items": [template(config, p) for p in autoscaled_pools(config)]}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": PROVIDER_CONFIG, "namespace": NAMESPACE},
            "data": {"config": yaml.safe_dump(provider_config())},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": TEMPLATES, "namespace": NAMESPACE},
            "data": {"templates": yaml.safe_dump(templates)},
        },
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _column(path: str, key: str) -> str:
    return f"{path}.{key.replace('.', chr(92) + '.')}"


class HostnameLabeler:
    """On a node watch: gives every node the autoscaler creates its own `kubernetes.io/hostname`,
    and keeps the nodes of pools with ProvisioningRequest from being scaled down.

    Why keep them: CA 1.33 answers a ProvisioningRequest with "Capacity is found in the cluster"
    when the pods fit on an empty node it has marked unneeded, then removes that node anyway (the
    request's booking does not reset the node's unneeded timer; seen here: provisioned at
    11:33:59, removed at 11:34:04), and Kueue waits 10 min for the booking to expire. On AKS the
    window is the last seconds of a 10-minute unneeded time; with this tier's 30 s it was most of
    the time between two scenarios (docs/autoscaling.md). Scale-down is shown on the pools without
    ProvisioningRequest (test_autoscaler.py).
    """

    def __init__(self, kubectl: Kubectl, log: Path, keep: set[str]) -> None:
        self.kubectl, self.log, self.keep = kubectl, log, keep
        self.process: subprocess.Popen[str] | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        columns = ",".join(
            [
                "NAME:.metadata.name",
                "HOST:" + _column(".metadata.labels", HOSTNAME_LABEL),
                "POOL:" + _column(".metadata.labels", POOL_LABEL),
                "KEEP:" + _column(".metadata.annotations", SCALE_DOWN_DISABLED),
            ]
        )
        self.process = subprocess.Popen(
            [
                str(self.kubectl.binary),
                f"--kubeconfig={self.kubectl.kubeconfig}",
                "get",
                "nodes",
                "--watch",
                "--no-headers",
                "-o",
                f"custom-columns={columns}",
            ],
            stdout=subprocess.PIPE,
            stderr=self.log.open("a"),
            text=True,
        )
        self.thread = threading.Thread(target=self._label, name="hostname-labeler", daemon=True)
        self.thread.start()

    def _label(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            parts = line.split()
            if len(parts) != 4:
                continue
            name, host, pool, keep = parts
            if host == "<none>":
                self.kubectl.run("label", "node", name, f"{HOSTNAME_LABEL}={name}", "--overwrite", check=False)
            if pool in self.keep and keep == "<none>":
                self.kubectl.run("annotate", "node", name, f"{SCALE_DOWN_DISABLED}=true", "--overwrite", check=False)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
        if self.thread is not None:
            self.thread.join(timeout=10)


class Autoscaler:
    """cluster-autoscaler with the kwok provider, for the stack's autoscaled pools."""

    def __init__(self, binary: Path, kubectl: Kubectl, workdir: Path) -> None:
        self.binary, self.kubectl, self.workdir = binary, kubectl, workdir
        self.log = workdir / "cluster-autoscaler.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.labeler: HostnameLabeler | None = None

    def start(self, config: StackConfig) -> None:
        self.kubectl.apply(config_maps(config))
        self.labeler = HostnameLabeler(
            self.kubectl,
            self.workdir / "hostname-labeler.log",
            {p.name for p in autoscaled_pools(config) if p.provisioning_request},
        )
        self.labeler.start()
        env = {
            **os.environ,
            "KWOK_PROVIDER_MODE": "local",
            "KUBECONFIG": str(self.kubectl.kubeconfig),
            "POD_NAMESPACE": NAMESPACE,
        }
        self.process = subprocess.Popen(
            [
                str(self.binary),
                "--cloud-provider=kwok",
                f"--kubeconfig={self.kubectl.kubeconfig}",
                f"--namespace={NAMESPACE}",
                "--leader-elect=false",
                f"--address=127.0.0.1:{_free_port()}",
                f"--scan-interval={SCAN_INTERVAL}",
                f"--scale-down-unneeded-time={SCALE_DOWN_UNNEEDED}",
                f"--scale-down-delay-after-add={SCALE_DOWN_DELAY_AFTER_ADD}",
                "--enable-provisioning-requests=true",
                f"--provisioning-request-initial-backoff-time={PROVISIONING_BACKOFF}",
                f"--provisioning-request-max-backoff-time={PROVISIONING_MAX_BACKOFF}",
                "--kube-api-content-type=application/json",
                "--v=2",
            ],
            env=env,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        wait_for("the cluster autoscaler to report its node groups", self._reporting, 60)

    def _reporting(self) -> tuple[bool, Any]:
        if self.process is not None and self.process.poll() is not None:
            raise StopWaiting(f"cluster-autoscaler exited with {self.process.returncode}:\n{self.log_tail(30)}")
        done = self.kubectl.run(
            "get", "configmap", STATUS_CONFIG_MAP, "-n", NAMESPACE, "-o", "jsonpath={.data.status}", check=False
        )
        return done.returncode == 0 and "nodeGroups" in done.stdout, done.stdout[-400:] or done.stderr[-400:]

    def status(self) -> str:
        done = self.kubectl.run(
            "get", "configmap", STATUS_CONFIG_MAP, "-n", NAMESPACE, "-o", "jsonpath={.data.status}", check=False
        )
        return done.stdout

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log, lines)

    def stop(self) -> None:
        stop_process(self.process)
        self.process = None
        if self.labeler is not None:
            self.labeler.stop()


def wait_pool_size(kubectl: Kubectl, pool: str, want: Callable[[int], bool], what: str, timeout: float) -> list[str]:
    """Wait until the pool's Ready node count satisfies `want`; returns the node names."""

    def probe() -> tuple[bool, Any]:
        nodes = kubectl.items("nodes", "-l", f"{POOL_LABEL}={pool}")
        names = [n["metadata"]["name"] for n in nodes]
        return want(len(names)), names

    return wait_for(f"pool {pool} to have {what}", probe, timeout)
