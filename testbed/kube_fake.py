"""A stand-in for the cluster that a kubeconfig stack's preflight reads (components/preflight/incluster.py).

Program tests run kubeconfig stacks whose kubeconfig names no reachable server; `FakeCluster`
answers the preflight's reads from a dict instead, through `serving()`, as testbed/azure_fake.py
answers Azure's. The reads themselves (TLS, credentials, paging) are tested against a loopback
API server in tests/k8s/test_reader.py, and on the real control plane in tests/e2e/engine/test_extension.py.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from unittest import mock

from components.config.names import KUEUE_NAMESPACE
from components.k8s.reader import ClusterReader
from components.kueue.values import KUEUE_RELEASE_NAME
from components.preflight.incluster import CONTROLLER_DEPLOYMENT, EXTENSION_MANAGED_BY, EXTENSION_OBJECTS, KUEUE_API


class FakeCluster:
    """Objects by API path; a list answers with the objects under its path whose labels match."""

    def __init__(self, objects: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.objects: dict[str, dict[str, Any]] = dict(objects or {})
        self.reads: list[str] = []

    def get(self, path: str) -> dict[str, Any] | None:
        self.reads.append(path)
        return self.objects.get(path)

    def list(self, path: str, label_selector: str | None = None) -> list[dict[str, Any]]:
        self.reads.append(path)
        wanted = dict(term.split("=", 1) for term in (label_selector or "").split(",") if term)
        return [
            o
            for p, o in self.objects.items()
            if p.rsplit("/", 1)[0] == path and wanted.items() <= ((o.get("metadata") or {}).get("labels") or {}).items()
        ]

    def close(self) -> None:
        pass

    def __enter__(self) -> FakeCluster:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    @contextmanager
    def serving(self) -> Iterator[FakeCluster]:
        """Every ClusterReader built from a kubeconfig reads this cluster."""
        with mock.patch.object(ClusterReader, "from_kubeconfig", lambda *_args, **_kw: self):
            yield self


def helm_release_secret(
    values: Mapping[str, Any],
    *,
    chart: str = "kueue",
    version: str = "0.19.2",
    revision: int = 1,
    status: str = "deployed",
) -> dict[str, Any]:
    """A release's storage Secret as Helm writes it: JSON, gzipped, base64, in the Secret's data."""
    record = {
        "name": KUEUE_RELEASE_NAME,
        "namespace": KUEUE_NAMESPACE,
        "version": revision,
        "config": dict(values),
        "info": {"status": status},
        "chart": {"metadata": {"name": chart, "version": version}},
    }
    encoded = base64.b64encode(gzip.compress(json.dumps(record).encode()))
    return {
        "metadata": {
            "name": f"sh.helm.release.v1.{KUEUE_RELEASE_NAME}.v{revision}",
            "namespace": KUEUE_NAMESPACE,
            "labels": {"owner": "helm", "name": KUEUE_RELEASE_NAME, "version": str(revision)},
        },
        "data": {"release": base64.b64encode(encoded).decode()},
    }


def release_path(revision: int = 1) -> str:
    return f"/api/v1/namespaces/{KUEUE_NAMESPACE}/secrets/sh.helm.release.v1.{KUEUE_RELEASE_NAME}.v{revision}"


def controller(available: int, replicas: int = 2) -> dict[str, str | dict[str, Any]]:
    path = f"/apis/apps/v1/namespaces/{KUEUE_NAMESPACE}/deployments/{CONTROLLER_DEPLOYMENT}"
    return {
        path: {
            "metadata": {"name": CONTROLLER_DEPLOYMENT},
            "spec": {"replicas": replicas},
            "status": {"availableReplicas": available},
        }
    }


def extension_cluster(*, available: int = 2) -> FakeCluster:
    """A cluster as AKS's managed Kueue extension leaves it: its release, its controller and the
    objects its controller generates."""
    key, value = EXTENSION_MANAGED_BY
    objects: dict[str, dict[str, Any]] = {
        f"{KUEUE_API}/{resource}/{name}": {"metadata": {"name": name, "labels": {key: value}}}
        for _, resource, name in EXTENSION_OBJECTS
    }
    objects[f"{KUEUE_API}/resourceflavors/aks-h100-ncadsh100-v5"] = {
        "metadata": {"name": "aks-h100-ncadsh100-v5", "labels": {key: value}}
    }
    objects[release_path(3)] = helm_release_secret(
        {"controllerManager": {"replicas": 2}}, chart="kueue", version="0.19.6-aks.0.4.4", revision=3
    )
    return FakeCluster({**objects, **controller(available)})
