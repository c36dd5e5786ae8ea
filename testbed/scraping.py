"""Scraping Kueue's metrics the way a ServiceMonitor tells Prometheus to, against the real controller.

`scrape_as(cluster, monitor)` follows the program's ServiceMonitor step by step, as the managed
Prometheus add-on or the Prometheus Operator would: the Services its selector matches in its
namespaces, the named port, its scheme, path and TLS settings, and the bearer token from the Secret
it names, read from the monitor's own namespace. Nothing about the endpoint is hard-coded here.
Where Prometheus dials the pod's IP and the target port, this dials the Service's ClusterIP and
port, which the tier relays to the Kueue process's own metrics port (kueue_controller.py), as
kube-proxy would: the process listens on a port of its own, not the pod's.
"""

from __future__ import annotations

import base64
import copy
import re
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

import yaml

from .binaries import service_monitor_crd
from .cluster import Kubectl, is_true, wait_for

# One sample line of the Prometheus text format: name{labels} value (timestamps are not used).
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def service_monitor_crd_for(api_version: str) -> dict[str, Any]:
    """The ServiceMonitor CRD for the monitor's group: the Prometheus Operator's own, or for
    managed Prometheus the same CRD in group azmonitoring.coreos.com, as the add-on installs it
    (learn.microsoft.com/azure/azure-monitor/containers/prometheus-metrics-scrape-crd)."""
    crd = yaml.safe_load(service_monitor_crd().read_text())
    group = api_version.split("/")[0]
    if group != crd["spec"]["group"]:
        crd = copy.deepcopy(crd)
        crd["spec"]["group"] = group
        crd["metadata"] = {"name": f"{crd['spec']['names']['plural']}.{group}"}
    return crd


def install_crd(kubectl: Kubectl, crd: Mapping[str, Any]) -> None:
    kubectl.apply([crd])
    name = crd["metadata"]["name"]
    wait_for(
        f"CRD {name} to be Established",
        lambda: (is_true(kubectl.get("crd", name), "Established"), kubectl.get("crd", name).get("status")),
        30,
    )


def token_of(kubectl: Kubectl, namespace: str, secret: str, key: str) -> str:
    """The token the token controller put into a service-account-token Secret (waits for it)."""

    def filled() -> tuple[bool, Any]:
        data = kubectl.get("secret", secret, "-n", namespace).get("data") or {}
        return key in data, sorted(data)

    wait_for(f"the token controller to fill Secret {namespace}/{secret}", filled, 30)
    return base64.b64decode(kubectl.get("secret", secret, "-n", namespace)["data"][key]).decode()


def _matches(labels: Mapping[str, str], selector: Mapping[str, Any]) -> bool:
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def endpoint_urls(kubectl: Kubectl, monitor: Mapping[str, Any]) -> list[str]:
    """The URLs the monitor's first endpoint resolves to: one per matching Service port."""
    spec, endpoint = monitor["spec"], monitor["spec"]["endpoints"][0]
    urls = []
    for namespace in spec["namespaceSelector"]["matchNames"]:
        for service in kubectl.items("services", "-n", namespace):
            if not _matches(service["metadata"].get("labels") or {}, spec["selector"]):
                continue
            for port in service["spec"]["ports"]:
                if port.get("name") == endpoint["port"]:
                    address = f"{service['spec']['clusterIP']}:{port['port']}"
                    urls.append(f"{endpoint['scheme']}://{address}{endpoint.get('path', '/metrics')}")
    return urls


def scrape(url: str, token: str | None, tls: Mapping[str, Any]) -> tuple[int, str]:
    """(HTTP status, body) of one GET with the bearer token and the monitor's TLS settings."""
    context = ssl.create_default_context()
    if tls.get("insecureSkipVerify"):
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")


def scrape_as(kubectl: Kubectl, monitor: Mapping[str, Any]) -> tuple[int, str]:
    """Scrape what the monitor selects, with the credentials and TLS settings it names."""
    endpoint = monitor["spec"]["endpoints"][0]
    credentials = endpoint["authorization"]["credentials"]
    token = token_of(kubectl, monitor["metadata"]["namespace"], credentials["name"], credentials["key"])
    urls = endpoint_urls(kubectl, monitor)
    assert len(urls) == 1, f"the monitor should select Kueue's one metrics port; it selects {urls}"
    return scrape(urls[0], token, endpoint.get("tlsConfig") or {})


def samples(text: str) -> list[tuple[str, dict[str, str], str]]:
    """(metric name, labels, value) of every sample in a Prometheus text exposition."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        match = _SAMPLE.match(line)
        if match:
            out.append((match.group(1), dict(_LABEL.findall(match.group(3) or "")), match.group(4)))
    return out
