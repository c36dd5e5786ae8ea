"""The webhook retry hook's classifier, proven on the API server's own words.

Each test makes the real API server fail to reach Kueue's webhook in one way (nothing listening,
a listener that closes the connection, a certificate from another CA, Kueue still starting),
captures the error message exactly as the API server returns it to a client, and checks that
components.kueue.install retries it; and that it does not retry a real denial by Kueue's webhook or a
failure of another service's webhook. The texts are produced here, never typed by hand.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.config.names import KUEUE_NAMESPACE
from components.kueue.install import is_webhook_not_ready_error, should_retry_webhook_error
from components.kueue.values import KUEUE_WEBHOOK_SERVICE

from testbed.cluster import api_create, wait_for
from testbed.control_planes import on_stacks
from testbed.kueue_controller import PROBE, PROBE_PATH, SERVICE_PORT
from testbed.loopback_tls import self_signed
from testbed.measurements import report
from testbed.stack_cluster import StackCluster

# The captured messages, by cause, for docs/kueue.md and for the failure messages here.
CAPTURED: dict[str, str] = {}


@pytest.fixture
def webhook_ip(cluster: StackCluster) -> Iterator[str]:
    """The webhook Service's ClusterIP; whatever a test puts there, Kueue serves again afterwards."""
    ip = cluster.kueue.service_ips[KUEUE_WEBHOOK_SERVICE]
    yield ip
    cluster.kueue.forward_services()
    cluster.kueue.wait_ready()


def _failing_message(cluster: StackCluster, cause: str) -> str:
    def probe() -> tuple[bool, Any]:
        status, message = api_create(cluster.kubectl.kubeconfig, PROBE_PATH, PROBE)
        return status >= 300, (status, message)

    status, message = wait_for(f"the API server to fail calling the webhook ({cause})", probe, 20)
    CAPTURED[cause] = message
    report(f"e2e[{cluster.stack}]: API server, {cause}: HTTP {status}: {message}")
    return str(message)


def _assert_retried(message: str) -> None:
    assert is_webhook_not_ready_error(message), message
    assert should_retry_webhook_error([message], "create") and should_retry_webhook_error([message], "update")
    assert not should_retry_webhook_error([message], "delete")


@on_stacks("dev")
def test_nothing_listening_is_retried(cluster: StackCluster, webhook_ip: str) -> None:
    cluster.forwarder.close(webhook_ip, SERVICE_PORT)
    _assert_retried(_failing_message(cluster, "nothing listening"))


async def _close_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.close()


@on_stacks("dev")
def test_listener_that_closes_the_connection_is_retried(cluster: StackCluster, webhook_ip: str) -> None:
    cluster.forwarder.listen(webhook_ip, SERVICE_PORT, _close_at_once)
    _assert_retried(_failing_message(cluster, "connection closed"))


def _certificate_from_another_ca(folder: Path) -> ssl.SSLContext:
    """A serving certificate for the webhook's DNS name, signed by a CA the API server never saw."""
    cert, key = self_signed(
        folder / "other.crt",
        folder / "other.key",
        "/CN=other-ca",
        f"subjectAltName=DNS:{KUEUE_WEBHOOK_SERVICE}.{KUEUE_NAMESPACE}.svc",
        days=1,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


@on_stacks("dev")
def test_certificate_from_another_ca_is_retried(cluster: StackCluster, webhook_ip: str, tmp_path: Path) -> None:
    context = _certificate_from_another_ca(tmp_path)

    async def serve_tls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)  # the handshake already failed on the API server's side
        writer.close()

    cluster.forwarder.listen(webhook_ip, SERVICE_PORT, serve_tls, ssl_context=context)
    message = _failing_message(cluster, "certificate from another CA")
    assert "x509" in message or "certificate" in message, message
    _assert_retried(message)


@on_stacks("dev")
def test_errors_while_kueue_starts_are_retried(cluster: StackCluster) -> None:
    """Restart the controller and keep every error the API server gave until the webhook answered."""
    cluster.kueue.stop()
    cluster.kueue.start()
    cluster.kueue.wait_ready()
    errors = cluster.kueue.startup_errors
    report(
        f"e2e[{cluster.stack}]: Kueue webhook answered {cluster.kueue.ready_after:.1f} s after the controller "
        f"started; API server errors meanwhile: {errors}"
    )
    assert errors, "the first dry run came before the webhook served, so it must have failed"
    for message in errors:
        _assert_retried(message)


@on_stacks("dev")
def test_denial_by_kueue_is_not_retried(cluster: StackCluster) -> None:
    # CQ17: lendingLimit without a cohort; only Kueue's webhook checks it (docs/design-notes.md#kueue-rule-ids).
    invalid = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "e2e-denied"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "cpu", "resources": [{"name": "cpu", "nominalQuota": "1", "lendingLimit": "1"}]}
                    ],
                }
            ],
        },
    }
    status, message = api_create(cluster.kubectl.kubeconfig, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", invalid)
    report(f"e2e[{cluster.stack}]: API server, Kueue's denial: HTTP {status}: {message}")
    assert status >= 400 and "denied the request" in message, (status, message)
    assert not is_webhook_not_ready_error(message)
    assert not should_retry_webhook_error([message], "create")


@pytest.fixture
def other_webhook(cluster: StackCluster) -> Iterator[str]:
    """Another service's validating webhook for ConfigMaps in namespace e2e-other, which hangs up."""
    kubectl = cluster.kubectl
    kubectl.apply(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "e2e-other"}},
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "other-webhook", "namespace": "e2e-other"},
                "spec": {"ports": [{"port": SERVICE_PORT, "targetPort": 9999}]},
            },
        ]
    )
    ip = kubectl.get("service", "other-webhook", "-n", "e2e-other")["spec"]["clusterIP"]
    cluster.forwarder.listen(ip, SERVICE_PORT, _close_at_once)
    kubectl.apply(
        [
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "e2e-other"},
                "webhooks": [
                    {
                        "name": "vconfigmap.other.example.com",
                        "admissionReviewVersions": ["v1"],
                        "sideEffects": "None",
                        "failurePolicy": "Fail",
                        "timeoutSeconds": 5,
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "e2e-other"}},
                        "clientConfig": {
                            "service": {"name": "other-webhook", "namespace": "e2e-other", "port": SERVICE_PORT}
                        },
                        "rules": [
                            {
                                "apiGroups": [""],
                                "apiVersions": ["v1"],
                                "operations": ["CREATE"],
                                "resources": ["configmaps"],
                            }
                        ],
                    }
                ],
            }
        ]
    )
    yield "e2e-other"
    kubectl.run("delete", "validatingwebhookconfiguration", "e2e-other", "--ignore-not-found")
    cluster.forwarder.close(ip, SERVICE_PORT)
    kubectl.run("delete", "namespace", "e2e-other", "--wait=true", "--timeout=60s", timeout=90)


@on_stacks("dev")
def test_failure_of_another_services_webhook_is_not_retried(cluster: StackCluster, other_webhook: str) -> None:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe", "namespace": other_webhook}}

    def probe() -> tuple[bool, Any]:
        status, message = api_create(
            cluster.kubectl.kubeconfig, f"/api/v1/namespaces/{other_webhook}/configmaps", configmap
        )
        return "failed calling webhook" in message, (status, message)

    status, message = wait_for("the API server to fail calling the other webhook", probe, 20)
    report(f"e2e[{cluster.stack}]: API server, another service's webhook: HTTP {status}: {message}")
    assert not is_webhook_not_ready_error(message), message
    assert not should_retry_webhook_error([message], "create")
