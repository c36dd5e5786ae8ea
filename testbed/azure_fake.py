"""A loopback HTTPS stand-in for the Azure Resource Manager reads of the preflight.

It answers in Azure's documented shapes (components/preflight/quota.py names them), so the real
client (azure-core's pipeline, bearer token, retries, paging) runs against it. Responses come from
the JSON files in testbed/fixtures/azure/ or from `generous()`; `fail` makes a path answer with an
error status (a 403, a 429 with Retry-After) a given number of times, `delay` makes it slow.
A cluster's extensions (`extensions`, by "<resource group>/<cluster>") are listed only for a
cluster in `clusters`; Azure answers 404 for the extensions of a cluster that is not there.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import parse_qs, urlsplit

from components.config.stack import StackConfig
from components.preflight.arm import ENDPOINT_ENV

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "azure"
SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
# Newer than every pinned managed Kueue extension's floor (components/facts/kueue_versions.py).
RECENT_KUBERNETES = "1.34.2"


def recorded(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def generous(config: StackConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Usages, SKUs and clusters under which every pool of `config` fits many times over, in every
    zone; an existing cluster (cluster.existing) is there, running its pools at minCount, in the
    stack's region on a Kubernetes version AKS's managed Kueue extension runs on."""
    sizes = {config.cluster.system_pool.vm_size: 16, **{p.vm_size: p.node.vcpus for p in config.node_pools}}
    skus = [
        {
            "resourceType": "virtualMachines",
            "name": size,
            "family": f"test{size.replace('_', '')}Family",
            "locations": [config.location],
            "locationInfo": [{"location": config.location, "zones": ["1", "2", "3"]}],
            "capabilities": [{"name": "vCPUs", "value": str(vcpus)}, {"name": "LowPriorityCapable", "value": "True"}],
            "restrictions": [],
        }
        for size, vcpus in sizes.items()
    ]
    names = ["cores", "lowPriorityCores", *(s["family"] for s in skus)]
    usages = [
        {"name": {"value": n, "localizedValue": n}, "currentValue": 0, "limit": 1_000_000, "unit": "Count"}
        for n in names
    ]
    existing = config.cluster.existing
    clusters = (
        []
        if existing is None
        else [
            managed_cluster(
                existing.resource_group,
                existing.name,
                [(p.name, p.vm_size, p.min_count, p.spot) for p in config.node_pools],
                location=config.location,
            )
        ]
    )
    return usages, skus, clusters


def managed_cluster(
    group: str,
    name: str,
    pools: list[tuple[str, str, int, bool]],
    tags: dict[str, str] | None = None,
    *,
    location: str = "eastus2",
    kubernetes_version: str = RECENT_KUBERNETES,
) -> dict[str, Any]:
    """A Managed Clusters - Get answer, with only what the preflight reads."""
    return {
        "id": f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{group}/providers/Microsoft.ContainerService/"
        f"managedClusters/{name}",
        "name": name,
        "location": location,
        "tags": tags or {},
        "properties": {
            "kubernetesVersion": kubernetes_version,
            "currentKubernetesVersion": kubernetes_version,
            "agentPoolProfiles": [
                {"name": n, "vmSize": size, "count": count, "scaleSetPriority": "Spot" if spot else "Regular"}
                for n, size, count, spot in pools
            ],
        },
    }


def extension(
    group: str,
    cluster: str,
    name: str,
    extension_type: str,
    *,
    version: str | None,
    current_version: str,
    namespace: str,
    state: str = "Succeeded",
) -> dict[str, Any]:
    """One item of Extensions - List (Microsoft.KubernetesConfiguration 2025-03-01), with what the
    preflight reads and what Azure always sends besides."""
    return {
        "id": f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{group}/providers/Microsoft.ContainerService/"
        f"managedClusters/{cluster}/providers/Microsoft.KubernetesConfiguration/extensions/{name}",
        "name": name,
        "type": "Microsoft.KubernetesConfiguration/extensions",
        "properties": {
            "extensionType": extension_type,
            "autoUpgradeMinorVersion": version is None,
            "autoUpgradeMode": "compatible" if version is None else "none",
            "version": version,
            "currentVersion": current_version,
            "provisioningState": state,
            "scope": {"cluster": {"releaseNamespace": namespace}},
        },
    }


@dataclass
class Failure:
    status: int
    times: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)


class FakeArm:
    def __init__(self, cert: Path, key: Path) -> None:
        self.cert = cert
        self.usages: list[dict[str, Any]] = []
        self.skus: list[dict[str, Any]] = []
        self.clusters: list[dict[str, Any]] = []
        self.extensions: dict[str, list[dict[str, Any]]] = {}  # "<resource group>/<cluster>" -> Extensions - List
        self.fail: dict[
            str, Failure
        ] = {}  # a path fragment ("usages", "skus", "managedClusters", "extensions") -> failure
        self.delay: dict[str, float] = {}
        self.page_size = 0  # > 0: answer in pages of this many items, linked by nextLink
        self.requests: list[tuple[str, str]] = []  # (path with query, Authorization header)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                fake.requests.append((self.path, self.headers.get("Authorization", "")))
                status, headers, body = fake.answer(self.path)
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    for k, v in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, raw_path: str) -> tuple[int, dict[str, str], Any]:
        path = urlsplit(raw_path).path
        for fragment, seconds in self.delay.items():
            if fragment in path:
                threading.Event().wait(seconds)
        for fragment, failure in self.fail.items():
            if fragment in path and failure.times > 0:
                failure.times -= 1
                return failure.status, failure.headers, failure.body
        one = re.fullmatch(
            r"/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/Microsoft\.ContainerService/"
            r"managedClusters/([^/]+)(/providers/Microsoft\.KubernetesConfiguration/extensions)?",
            path,
        )
        if one:
            found = [
                c for c in self.clusters if c["name"] == one.group(2) and f"/resourceGroups/{one.group(1)}/" in c["id"]
            ]
            if not found:
                return 404, {}, {"error": {"code": "ResourceNotFound", "message": "not found"}}
            if not one.group(3):
                return 200, {}, found[0]
            items = self.extensions.get(f"{one.group(1)}/{one.group(2)}", [])
        elif path.endswith("/usages"):
            items = self.usages
        elif path.endswith("/providers/Microsoft.Compute/skus"):
            items = self.skus
        elif path.endswith("/providers/Microsoft.ContainerService/managedClusters"):
            items = self.clusters
        else:
            return 404, {}, {"error": {"code": "NotFound", "message": path}}
        if not self.page_size:
            return 200, {}, {"value": items}
        start = int(parse_qs(urlsplit(raw_path).query).get("page", ["0"])[0])
        body: dict[str, Any] = {"value": items[start : start + self.page_size]}
        if start + self.page_size < len(items):
            body["nextLink"] = f"{self.url}{path}?page={start + self.page_size}"
        return 200, {}, body

    def recorded(self) -> FakeArm:
        """Answer with the recorded eastus2 subscription of testbed/fixtures/azure/."""
        self.usages = recorded("usages-eastus2.json")["value"]
        self.skus = recorded("skus-eastus2.json")["value"]
        return self

    @contextmanager
    def serving(self) -> Iterator[FakeArm]:
        """The client points at this server and trusts its certificate while inside."""
        with mock.patch.dict("os.environ", {ENDPOINT_ENV: self.url, "REQUESTS_CA_BUNDLE": str(self.cert)}):
            yield self
