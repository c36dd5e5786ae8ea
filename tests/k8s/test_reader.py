"""components/k8s/reader.py: a read-only API client from a kubeconfig, against a loopback API server.

The server is a ThreadingHTTPServer behind TLS (testbed/loopback_tls.py's certificate for 127.0.0.1
and localhost) that answers GETs the way kube-apiserver does: objects, lists paged by
limit/continue, Status bodies for 401/403/404/410. It asks for a client certificate (optional)
and trusts one test-local self-signed client certificate, so mutual TLS is checked too. Exec
plugins are small Python scripts written into tmp_path.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from components.k8s.reader import ClusterReader, ReadError
from testbed.loopback_tls import OWN_CA, make_tls, self_signed

TOKEN = "s3cret-bearer-token-not-real"
CLIENT_CN = "kueue-reader-test"
CQ = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"


def make_client_cert(folder: Path) -> tuple[Path, Path]:
    """A self-signed client certificate (clientAuth) that the test server trusts as its own CA;
    make_tls's certificate is for serverAuth only."""
    return self_signed(
        folder / "client.crt", folder / "client.key", f"/CN={CLIENT_CN}", *OWN_CA, "extendedKeyUsage=clientAuth"
    )


@dataclass
class Seen:
    path: str
    query: dict[str, str]
    authorization: str
    client: str | None  # the client certificate's common name


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class FakeApiServer:
    """Answers GET like kube-apiserver for the objects and lists it is given."""

    def __init__(self, cert: Path, key: Path, client_ca: Path) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.lists: dict[str, tuple[str, list[dict[str, Any]]]] = {}  # path -> (list kind, items)
        self.page_size = 2  # the server's own cap, below the client's limit, so that lists come in pages
        self.forbidden: set[str] = set()
        self.refused: set[str] = set()  # Authorization values answered 401
        self.expire_continue = 0  # continue tokens answered 410 Expired, this many times
        self.seen: list[Seen] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                url = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                peer = self.connection.getpeercert()  # type: ignore[attr-defined]
                client = dict(pair[0] for pair in peer["subject"]).get("commonName") if peer else None
                seen = Seen(url.path, query, self.headers.get("Authorization", ""), client)
                fake.seen.append(seen)
                code, body = fake.answer(seen)
                data = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, seen: Seen) -> tuple[int, dict[str, Any]]:
        if seen.authorization in self.refused:
            return 401, status(401, "Unauthorized", "Unauthorized")
        if seen.path in self.forbidden:
            return 403, status(
                403,
                "Forbidden",
                'clusterqueues.kueue.x-k8s.io is forbidden: User "reader" cannot '
                'list resource "clusterqueues" in API group "kueue.x-k8s.io"',
            )
        if seen.path in self.objects:
            return 200, self.objects[seen.path]
        if seen.path in self.lists:
            kind, items = self.lists[seen.path]
            if "labelSelector" in seen.query:
                key, _, value = seen.query["labelSelector"].partition("=")
                items = [i for i in items if i["metadata"].get("labels", {}).get(key) == value]
            start = int(seen.query.get("continue", "0"))
            if start and self.expire_continue:
                self.expire_continue -= 1
                return 410, status(410, "Expired", "The provided continue parameter is too old")
            end = min(start + self.page_size, len(items)) if "limit" in seen.query else len(items)
            if "limit" in seen.query:
                end = min(end, start + int(seen.query["limit"]))
            metadata = {"resourceVersion": "42", **({"continue": str(end)} if end < len(items) else {})}
            return 200, {
                "kind": kind,
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "metadata": metadata,
                "items": [dict(i) for i in items[start:end]],
            }
        return 404, status(404, "NotFound", "the server could not find the requested resource")


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_tls(tmp_path_factory.mktemp("api-tls"))


@pytest.fixture(scope="module")
def client_tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_client_cert(tmp_path_factory.mktemp("client-tls"))


@pytest.fixture
def api(tls: tuple[Path, Path], client_tls: tuple[Path, Path]) -> Iterator[FakeApiServer]:
    server = FakeApiServer(*tls, client_ca=client_tls[0])
    server.objects["/api/v1/namespaces/kueue-system"] = {
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": {"name": "kueue-system"},
    }
    server.lists[CQ] = (
        "ClusterQueueList",
        [{"metadata": {"name": f"cq-{n}", "labels": {"team": "a" if n % 2 else "b"}}, "spec": {}} for n in range(5)],
    )
    yield server
    server.stop()


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def kubeconfig(
    server: str,
    *,
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    current: str | None = "test",
) -> str:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
        "contexts": [{"name": "test", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": user or {}}],
    }
    if current is not None:
        doc["current-context"] = current
    return yaml.safe_dump(doc)


def trusted(tls: tuple[Path, Path]) -> dict[str, Any]:
    return {"certificate-authority-data": b64(tls[0])}


def plugin(folder: Path, body: str, name: str = "kube-plugin") -> Path:
    """An executable Python script; `info` is the KUBERNETES_EXEC_INFO it was given."""
    script = folder / name
    script.write_text(
        f"#!{sys.executable}\nimport json, os, sys\ninfo = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n" + body
    )
    script.chmod(0o755)
    return script


# --- reading ---------------------------------------------------------------------------------


def test_get_and_paged_list_with_ca_data_and_a_bearer_token(api: FakeApiServer, tls: tuple[Path, Path]) -> None:
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"token": TOKEN})) as reader:
        assert reader.server == api.url
        assert reader.get("/api/v1/namespaces/kueue-system") == {
            "kind": "Namespace",
            "apiVersion": "v1",
            "metadata": {"name": "kueue-system"},
        }
        items = reader.list(CQ)
    assert [i["metadata"]["name"] for i in items] == [f"cq-{n}" for n in range(5)]
    assert {(i["kind"], i["apiVersion"]) for i in items} == {("ClusterQueue", "kueue.x-k8s.io/v1beta2")}
    pages = [s for s in api.seen if s.path == CQ]
    assert [s.query.get("continue") for s in pages] == [None, "2", "4"]
    assert {s.query["limit"] for s in pages} == {"500"}
    assert {s.authorization for s in api.seen} == {f"Bearer {TOKEN}"}
    assert {s.client for s in api.seen} == {None}


def test_list_passes_the_label_selector(api: FakeApiServer, tls: tuple[Path, Path]) -> None:
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"token": TOKEN})) as reader:
        items = reader.list(CQ, label_selector="team=a")
    assert [i["metadata"]["name"] for i in items] == ["cq-1", "cq-3"]
    assert {s.query["labelSelector"] for s in api.seen} == {"team=a"}


def test_an_expired_continue_token_reads_the_whole_list_again(api: FakeApiServer, tls: tuple[Path, Path]) -> None:
    api.expire_continue = 1
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"token": TOKEN})) as reader:
        items = reader.list(CQ)
    assert [i["metadata"]["name"] for i in items] == [f"cq-{n}" for n in range(5)]
    assert "limit" not in api.seen[-1].query and "continue" not in api.seen[-1].query


def test_404_is_none_for_get_and_empty_for_list(api: FakeApiServer, tls: tuple[Path, Path]) -> None:
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"token": TOKEN})) as reader:
        assert reader.get("/api/v1/namespaces/absent") is None
        assert reader.list("/apis/example.com/v1/widgets") == []


def test_403_says_the_user_cannot_read_the_path(api: FakeApiServer, tls: tuple[Path, Path]) -> None:
    api.forbidden.add(CQ)
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"token": TOKEN})) as reader:
        with pytest.raises(ReadError) as err:
            reader.list(CQ)
    text = str(err.value)
    for fact in ("the kubeconfig's user 'u' cannot read", CQ, api.url, "HTTP 403", 'User "reader" cannot list'):
        assert fact in text, (fact, text)
    assert TOKEN not in text


def test_other_errors_name_the_server_the_path_and_the_status(api: FakeApiServer, tls: tuple[Path, Path]) -> None:
    api.refused.add(f"Bearer {TOKEN}")
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"token": TOKEN})) as reader:
        with pytest.raises(ReadError, match="cannot read /api/v1/nodes .*HTTP 401: Unauthorized") as err:
            reader.get("/api/v1/nodes")
    assert TOKEN not in str(err.value)


# --- credentials and TLS from the kubeconfig ---------------------------------------------------


def test_client_certificate_data_is_mutual_tls_from_a_private_directory_removed_on_close(
    api: FakeApiServer, tls: tuple[Path, Path], client_tls: tuple[Path, Path]
) -> None:
    user = {"client-certificate-data": b64(client_tls[0]), "client-key-data": b64(client_tls[1])}
    reader = ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user=user))
    folder = reader.secrets_dir
    assert folder is not None and os.path.isdir(folder)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    files = sorted(Path(folder).iterdir())
    assert len(files) == 3  # the CA, the certificate, the key
    assert {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o600}
    assert reader.get("/api/v1/namespaces/kueue-system") is not None
    assert api.seen[-1].client == CLIENT_CN and api.seen[-1].authorization == ""
    reader.close()
    assert not os.path.exists(folder)
    assert reader.secrets_dir is None
    reader.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        reader.get("/api/v1/namespaces/kueue-system")


def test_the_with_block_removes_the_private_directory(api: FakeApiServer, tls: tuple[Path, Path]) -> None:
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls))) as reader:
        folder = reader.secrets_dir
        assert folder is not None and os.path.isdir(folder)
    assert not os.path.exists(folder)


@pytest.mark.parametrize("case", ["ca-file+client-files", "token-file", "basic", "insecure", "tls-server-name"])
def test_kubeconfig_variants(
    case: str, api: FakeApiServer, tls: tuple[Path, Path], client_tls: tuple[Path, Path], tmp_path: Path
) -> None:
    cluster: dict[str, Any] = trusted(tls)
    user: dict[str, Any] = {}
    expected_auth, expected_client = "", None
    if case == "ca-file+client-files":
        cluster = {"certificate-authority": str(tls[0])}
        user = {"client-certificate": str(client_tls[0]), "client-key": str(client_tls[1])}
        expected_client = CLIENT_CN
    elif case == "token-file":
        (tmp_path / "token").write_text(f"{TOKEN}\n")
        user = {"tokenFile": str(tmp_path / "token")}
        expected_auth = f"Bearer {TOKEN}"
    elif case == "basic":
        user = {"username": "admin", "password": "pa:ss"}
        expected_auth = "Basic " + base64.b64encode(b"admin:pa:ss").decode()
    elif case == "insecure":
        cluster = {"insecure-skip-tls-verify": True}
    elif case == "tls-server-name":
        cluster = {**trusted(tls), "tls-server-name": "localhost"}  # in the certificate, as is 127.0.0.1
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=cluster, user=user)) as reader:
        assert reader.get("/api/v1/namespaces/kueue-system") is not None
        if case == "ca-file+client-files":
            assert reader.secrets_dir is None  # files are used where they are
    assert (api.seen[-1].authorization, api.seen[-1].client) == (expected_auth, expected_client)


def test_two_open_readers_of_one_kubeconfig_keep_their_own_files(api: FakeApiServer, tls: tuple[Path, Path]) -> None:
    """The kubernetes loader caches the files it writes by their content, process-wide: the second
    reader must not be handed the first's CA file, which the first's close() removes."""
    config = kubeconfig(api.url, cluster=trusted(tls), user={"token": TOKEN})
    first = ClusterReader.from_kubeconfig(config)
    with ClusterReader.from_kubeconfig(config) as second:
        first.close()
        assert second.secrets_dir is not None and len(list(Path(second.secrets_dir).iterdir())) == 1
        assert second.get("/api/v1/namespaces/kueue-system") is not None


def test_a_token_http_refuses_is_not_quoted(api: FakeApiServer, tls: tuple[Path, Path]) -> None:
    with ClusterReader.from_kubeconfig(
        kubeconfig(api.url, cluster=trusted(tls), user={"token": f"{TOKEN}\n"})
    ) as reader:
        with pytest.raises(ReadError, match="could not be sent: the credential holds a character") as err:
            reader.get("/api/v1/namespaces/kueue-system")
    assert TOKEN not in str(err.value)


def test_tls_server_name_is_the_name_the_certificate_must_hold(api: FakeApiServer, tls: tuple[Path, Path]) -> None:
    config = kubeconfig(api.url, cluster={**trusted(tls), "tls-server-name": "api.elsewhere.example"})
    with ClusterReader.from_kubeconfig(config) as reader:
        with pytest.raises(ReadError, match="could not be reached: its TLS certificate was not accepted") as err:
            reader.get("/api/v1/namespaces/kueue-system")
    assert "api.elsewhere.example" in str(err.value)
    assert api.seen == []


def test_a_server_whose_certificate_is_not_trusted_is_a_read_error(
    api: FakeApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, user={"token": TOKEN})) as reader:
        with pytest.raises(ReadError) as err:
            reader.get("/api/v1/namespaces/kueue-system")
    assert f"{api.url} could not be reached: its TLS certificate was not accepted" in str(err.value)
    assert "self-signed" in str(err.value) or "self signed" in str(err.value)


# --- exec plugins ----------------------------------------------------------------------------


TOKEN_PLUGIN = """
with open(os.environ['PLUGIN_LOG'], 'a') as log:
    log.write(json.dumps({'argv': sys.argv[1:], 'info': info}) + '\\n')
with open(os.environ['PLUGIN_LOG']) as log:
    runs = len(log.readlines())
print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',
                  'status': {'token': f"{sys.argv[1]}-{os.environ['PLUGIN_SUFFIX']}-{runs}"}}))
"""


@pytest.mark.parametrize("version", ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"])
def test_an_exec_plugin_gives_a_token_once_for_many_requests(
    version: str, api: FakeApiServer, tls: tuple[Path, Path], tmp_path: Path
) -> None:
    log = tmp_path / "runs.jsonl"
    exec_spec = {
        "apiVersion": version,
        "command": str(plugin(tmp_path, TOKEN_PLUGIN)),
        "args": ["exec"],
        "env": [{"name": "PLUGIN_LOG", "value": str(log)}, {"name": "PLUGIN_SUFFIX", "value": "tok"}],
        "interactiveMode": "IfAvailable",
        "provideClusterInfo": True,
    }
    cluster = {
        **trusted(tls),
        "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"audience": "6dae42f8"}}],
    }
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=cluster, user={"exec": exec_spec})) as reader:
        assert reader.get("/api/v1/namespaces/kueue-system") is not None
        assert len(reader.list(CQ)) == 5
    assert {s.authorization for s in api.seen} == {"Bearer exec-tok-1"}
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(runs) == 1
    assert runs[0]["argv"] == ["exec"]
    info = runs[0]["info"]
    assert (info["kind"], info["apiVersion"], info["spec"]["interactive"]) == ("ExecCredential", version, False)
    assert info["spec"]["cluster"]["server"] == api.url
    assert info["spec"]["cluster"]["certificate-authority-data"] == b64(tls[0])
    assert info["spec"]["cluster"]["config"] == {"audience": "6dae42f8"}


def test_a_refused_exec_token_is_fetched_again_once(api: FakeApiServer, tls: tuple[Path, Path], tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    exec_spec = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": str(plugin(tmp_path, TOKEN_PLUGIN)),
        "args": ["exec"],
        "env": [{"name": "PLUGIN_LOG", "value": str(log)}, {"name": "PLUGIN_SUFFIX", "value": "tok"}],
        "interactiveMode": "Never",
    }
    api.refused.add("Bearer exec-tok-1")
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"exec": exec_spec})) as reader:
        assert reader.get("/api/v1/namespaces/kueue-system") is not None
    assert [s.authorization for s in api.seen] == ["Bearer exec-tok-1", "Bearer exec-tok-2"]
    assert "cluster" not in json.loads(log.read_text().splitlines()[0])["info"]["spec"]  # provideClusterInfo unset


def test_an_exec_plugin_can_give_a_client_certificate(
    api: FakeApiServer, tls: tuple[Path, Path], client_tls: tuple[Path, Path], tmp_path: Path
) -> None:
    body = (
        f"print(json.dumps({{'apiVersion': info['apiVersion'], 'kind': 'ExecCredential', 'status': {{\n"
        f"    'clientCertificateData': open({str(client_tls[0])!r}).read(),\n"
        f"    'clientKeyData': open({str(client_tls[1])!r}).read(),\n"
        f"    'expirationTimestamp': '2999-01-01T00:00:00Z'}}}}))\n"
    )
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin(tmp_path, body))}
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"exec": exec_spec})) as reader:
        assert reader.get("/api/v1/namespaces/kueue-system") is not None
        folder = reader.secrets_dir
    assert (api.seen[-1].client, api.seen[-1].authorization) == (CLIENT_CN, "")
    assert folder is not None and not os.path.exists(folder)


def test_a_failing_exec_plugin_names_its_command_and_its_last_words(
    api: FakeApiServer, tls: tuple[Path, Path], tmp_path: Path
) -> None:
    script = plugin(
        tmp_path,
        "print('starting login', file=sys.stderr)\n"
        "print('error: AADSTS700082: the refresh token has expired', file=sys.stderr)\n"
        "sys.exit(3)\n",
        name="kubelogin",
    )
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(script), "args": ["get-token"]}
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"exec": exec_spec})) as reader:
        with pytest.raises(ReadError) as err:
            reader.get("/api/v1/namespaces/kueue-system")
    text = str(err.value)
    for fact in (api.url, str(script), "exit status 3", "error: AADSTS700082: the refresh token has expired"):
        assert fact in text, (fact, text)
    assert "starting login" not in text
    assert api.seen == []


def test_an_exec_plugin_that_prints_no_credential_is_a_read_error(
    api: FakeApiServer, tls: tuple[Path, Path], tmp_path: Path
) -> None:
    script = plugin(tmp_path, f"print('not json {TOKEN}')\n")
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script)}
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"exec": exec_spec})) as reader:
        with pytest.raises(ReadError, match="did not print an ExecCredential") as err:
            reader.get("/api/v1/namespaces/kueue-system")
    assert TOKEN not in str(err.value)


def test_an_exec_plugin_that_hangs_is_stopped_at_the_timeout(
    api: FakeApiServer, tls: tuple[Path, Path], tmp_path: Path
) -> None:
    script = plugin(tmp_path, "import time\ntime.sleep(60)\n")
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script)}
    config = kubeconfig(api.url, cluster=trusted(tls), user={"exec": exec_spec})
    started = time.monotonic()
    with ClusterReader.from_kubeconfig(config, exec_timeout=0.5) as reader:
        with pytest.raises(ReadError, match=r"which gave none within 0\.5 s"):
            reader.get("/api/v1/namespaces/kueue-system")
    assert time.monotonic() - started < 30


def test_a_missing_exec_command_gives_its_install_hint(
    api: FakeApiServer, tls: tuple[Path, Path], tmp_path: Path
) -> None:
    exec_spec = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": str(tmp_path / "kubelogin"),
        "installHint": "install kubelogin: az aks install-cli",
    }
    with ClusterReader.from_kubeconfig(kubeconfig(api.url, cluster=trusted(tls), user={"exec": exec_spec})) as reader:
        with pytest.raises(ReadError, match="could not be started .*install kubelogin: az aks install-cli"):
            reader.get("/api/v1/namespaces/kueue-system")


# --- unreachable servers and bad kubeconfigs -------------------------------------------------


def test_a_closed_port_is_a_read_error_saying_the_server_could_not_be_reached(tls: tuple[Path, Path]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = f"https://127.0.0.1:{port}"
    with ClusterReader.from_kubeconfig(kubeconfig(server, cluster=trusted(tls), user={"token": TOKEN})) as reader:
        with pytest.raises(ReadError) as err:
            reader.get("/api/v1/namespaces/kueue-system")
    assert str(err.value) == f"{server} could not be reached: connection refused (GET /api/v1/namespaces/kueue-system)"


def test_a_server_that_never_answers_times_out(tls: tuple[Path, Path]) -> None:
    with socket.socket() as silent:  # accepts connections (the backlog) and never speaks TLS
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        server = f"https://127.0.0.1:{silent.getsockname()[1]}"
        config = kubeconfig(server, cluster=trusted(tls), user={"token": TOKEN})
        with ClusterReader.from_kubeconfig(config, timeout=0.5) as reader:
            with pytest.raises(ReadError) as err:
                reader.list(CQ)
    assert f"{server} could not be reached" in str(err.value) and "0.5 s" in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("current", "message"),
    [
        (None, "the kubeconfig has no current-context"),
        ("elsewhere", "the kubeconfig's current-context 'elsewhere' is not among its contexts (it has: test)"),
    ],
)
def test_a_missing_or_unknown_current_context_is_named(current: str | None, message: str) -> None:
    with pytest.raises(ReadError) as err:
        ClusterReader.from_kubeconfig(kubeconfig("https://127.0.0.1:1", current=current))
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ({"client-certificate-data": "bm90LWEta2V5"}, "only one of client-certificate-data and client-key-data"),
        ({"client-certificate-data": "***", "client-key-data": "***"}, "client-certificate-data is not valid base64"),
        ({"token": TOKEN, "username": "admin"}, "both a token and a username/password"),
        ({"tokenFile": "/nonexistent/token"}, "tokenFile: /nonexistent/token does not exist"),
        (
            {"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "kubelogin"}},
            "apiVersion 'client.authentication.k8s.io/v1alpha1'",
        ),
        (
            {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1",
                    "command": "kubelogin",
                    "interactiveMode": "Always",
                }
            },
            "interactiveMode: Always",
        ),
        ({"auth-provider": {"name": "azure", "config": {"access-token": TOKEN}}}, "azure auth-provider"),
    ],
)
def test_unusable_users_are_read_errors_naming_the_entry(user: dict[str, Any], message: str, tmp_path: Path) -> None:
    with pytest.raises(ReadError) as err:
        ClusterReader.from_kubeconfig(kubeconfig("https://127.0.0.1:1", user=user))
    assert str(err.value).startswith("cannot read https://127.0.0.1:1: user 'u' of the kubeconfig"), str(err.value)
    assert message in str(err.value), str(err.value)
    assert TOKEN not in str(err.value)


def test_importing_the_reader_does_not_import_kubernetes() -> None:
    """A preview imports the reader (components/preflight/incluster.py); the kubernetes package is
    imported only when a reader is built."""
    code = "import components.k8s.reader, sys; assert 'kubernetes' not in sys.modules"
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[2], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_kubeconfig_that_is_not_yaml_is_not_quoted() -> None:
    text = f"current-context: test\nusers:\n- name: u\n  user: {{token: {TOKEN}\n"
    with pytest.raises(ReadError, match="the kubeconfig is not valid YAML at line") as err:
        ClusterReader.from_kubeconfig(text)
    assert TOKEN not in str(err.value)


def test_a_failed_build_leaves_no_private_directory(
    tls: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    with pytest.raises(ReadError, match="tokenFile"):
        ClusterReader.from_kubeconfig(
            kubeconfig("https://127.0.0.1:1", cluster=trusted(tls), user={"tokenFile": "/nonexistent/token"})
        )
    assert list(tmp_path.iterdir()) == []
