"""A read-only Kubernetes API client built from a kubeconfig document, for looking inside a
cluster at preview, before any Pulumi resource exists (pure; no Pulumi import).

The official `kubernetes` package (37.0.3) does the work: its KubeConfigLoader reads the current
context's cluster and user into a Configuration, and its ApiClient makes the requests. It is
imported only when a reader is built, since every preview imports this module. A thin layer adds
what that client lacks, or does in a way a preview cannot use:

- `exec` plugins (as kubelogin writes for AKS) run at the first request, never interactively and
  within `exec_timeout`; the loader's ExecProvider.run would wait for ever, hand the plugin the
  terminal, and carry on without credentials when it fails. An explicit token or basic login wins
  over `exec`, as in kubectl. The plugin's credential is fetched again before it expires and once
  on a 401. A `tokenFile` is read here, trimmed; relative paths start at the working directory.
- What kubectl refuses and the loader accepts is refused, naming the kubeconfig entry: half a
  client certificate pair, data that is not base64, a missing file, a token beside a basic login,
  an insecure-skip-tls-verify that is not a boolean, a dropped exec apiVersion or
  `interactiveMode: Always`, and the `auth-provider` plugins.
- Every failure is a ReadError naming the server (or the entry) and what failed, never a token, a
  key, a password or a line of the kubeconfig: the client's own errors (ApiException's headers and
  body, a plugin's stderr, urllib3's URLs) are not passed on.
- Lists come page by page (limit/continue, read again whole when a continue token expires, as
  client-go's pager does), each item with its apiVersion and kind.

Impersonation (`as`) is not read. Certificate and key data go to a private temporary directory
that `close()` (or leaving the `with` block, or garbage collection) removes.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import warnings
import weakref
from typing import TYPE_CHECKING, Any

import urllib3
import yaml

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, Configuration
    from kubernetes.config.exec_provider import ExecProvider

PAGE = 500  # items a list asks for at a time (kubectl's chunk size)
EXEC_TIMEOUT = 60.0  # seconds an exec plugin may take (kubelogin may call Azure's token endpoint)
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_CONFIG_EXTENSION = "client.authentication.k8s.io/exec"  # the cluster extension passed as spec.cluster.config
USER_AGENT = "kueue-aks-reader"
_REFRESH_MARGIN = 10.0  # seconds before an exec credential's expiry at which it is fetched again
_BASIC = ("username", "password")
_TOKEN = ("token", "tokenFile")


class ReadError(Exception):
    """The cluster could not be read: the message names the server (or the kubeconfig entry) and
    what failed, and never holds a credential. `status` is the API server's HTTP status when it
    answered (401 and 403: the user is not let in)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ClusterReader:
    """GETs against one API server as the kubeconfig's user. Build it with `from_kubeconfig`."""

    server: str

    def __init__(
        self,
        server: str,
        configuration: Configuration,
        *,
        context: str = "",
        user: str = "",
        exec_plugin: _ExecPlugin | None = None,
        timeout: float = 15.0,
        secrets: _SecretDir | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        self.context = context
        self.user = user
        self.timeout = timeout
        self._configuration = configuration
        self._client: ApiClient | None = None  # made at the first request
        self._exec = exec_plugin
        self._exec_expiry: float | None = None  # epoch seconds; None: not fetched yet
        self._secrets = secrets or _SecretDir()
        self._closed = False

    # --- building ---------------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(cls, text: str, *, timeout: float = 15.0, exec_timeout: float = EXEC_TIMEOUT) -> ClusterReader:
        """A reader for the kubeconfig's current-context. The document is YAML (or JSON) text."""
        doc = _load(text)
        name = doc.get("current-context")
        if not name or not isinstance(name, str):
            raise ReadError("the kubeconfig has no current-context (kubectl config use-context <name> sets one)")
        context = _entry(doc, "contexts", "context", name)
        if context is None:
            known = ", ".join(_names(doc, "contexts")) or "none"
            raise ReadError(f"the kubeconfig's current-context {name!r} is not among its contexts (it has: {known})")
        cluster_name = context.get("cluster")
        if not cluster_name or not isinstance(cluster_name, str):
            raise ReadError(f"context {name!r} of the kubeconfig names no cluster")
        cluster = _entry(doc, "clusters", "cluster", cluster_name)
        if cluster is None:
            raise ReadError(
                f"context {name!r} of the kubeconfig names cluster {cluster_name!r}, which it does not define"
            )
        user_name = context.get("user") or ""
        if not isinstance(user_name, str):
            raise ReadError(f"context {name!r} of the kubeconfig has a user that is not a name")
        user: dict[str, Any] = {}
        if user_name:
            found = _entry(doc, "users", "user", user_name)
            if found is None:
                raise ReadError(
                    f"context {name!r} of the kubeconfig names user {user_name!r}, which it does not define"
                )
            user = found

        server = cluster.get("server")
        if not server or not isinstance(server, str):
            raise ReadError(f"cluster {cluster_name!r} of the kubeconfig has no server")
        if "://" not in server:
            server = f"https://{server}"
        secrets = _SecretDir()
        try:
            return cls._build(
                server,
                name,
                cluster_name,
                {**cluster, "server": server},
                user_name,
                user,
                secrets,
                timeout,
                exec_timeout,
            )
        except ReadError as err:
            secrets.remove()
            raise ReadError(f"cannot read {server}: {err}") from None
        except BaseException:
            secrets.remove()
            raise

    @classmethod
    def _build(
        cls,
        server: str,
        context: str,
        cluster_name: str,
        cluster: dict[str, Any],
        user_name: str,
        user: dict[str, Any],
        secrets: _SecretDir,
        timeout: float,
        exec_timeout: float,
    ) -> ClusterReader:
        from kubernetes.client import Configuration
        from kubernetes.config import kube_config
        from kubernetes.config.config_exception import ConfigException
        from kubernetes.config.exec_provider import ExecProvider

        who = f"user {user_name!r} of the kubeconfig"
        base = os.getcwd()
        _check_cluster(cluster, f"cluster {cluster_name!r} of the kubeconfig", base)
        _check_user(user, who, base)
        # The loader sees neither the exec plugin (run below, at the first request) nor an auth-provider (refused).
        static = {key: value for key, value in user.items() if key not in ("exec", "auth-provider")}
        if user.get("tokenFile") and not user.get("token"):  # the loader prefers the token (_load_user_token)
            # It would send the file as it is, newline and all (FileOrData.as_data); kubectl trims it.
            static["token"] = _token_file(static.pop("tokenFile"), f"{who}: tokenFile", base)
        if cluster.get("certificate-authority-data") or user.get("client-certificate-data"):
            secrets.make()  # the loader writes the data there
        loader = kube_config.KubeConfigLoader(
            config_dict={
                "current-context": context,
                "contexts": [{"name": context, "context": {"cluster": cluster_name, "user": user_name}}],
                "clusters": [{"name": cluster_name, "cluster": cluster}],
                "users": [{"name": user_name, "user": static}],
            },
            config_base_path=base,
            temp_file_path=secrets.path,
        )
        configuration = Configuration()
        try:
            loader.load_and_set(configuration)
        except ConfigException as err:  # it names keys, entries and paths, never a value
            raise ReadError(f"the kubeconfig cannot be used: {err}") from None
        except (OSError, ValueError) as err:
            raise ReadError(f"{who} cannot be used ({_reason(err)})") from None
        # The loader caches the files it writes process-wide by their content (_temp_files), so the
        # next reader of the same data would share this reader's files, which close() removes: forget them.
        for content, path in list(kube_config._temp_files.items()):
            if secrets.path and os.path.dirname(path) == secrets.path:
                del kube_config._temp_files[content]
        configuration.retries = False  # one try, not urllib3's four: a silent server is reported after `timeout`

        plugin: _ExecPlugin | None = None
        if _uses_exec(user):
            provider = ExecProvider(
                kube_config.ConfigNode("exec", user["exec"]), base, kube_config.ConfigNode("cluster", cluster)
            )
            plugin = _ExecPlugin(provider, user["exec"], who, server, exec_timeout)
        return cls(
            server,
            configuration,
            context=context,
            user=user_name,
            exec_plugin=plugin,
            timeout=timeout,
            secrets=secrets,
        )

    # --- reading ----------------------------------------------------------------------------

    def get(self, path: str) -> dict[str, Any] | None:
        """The object at `path` (an API path such as /api/v1/namespaces/kube-system), or None if
        the server answers 404."""
        status, data, content_type = self._request(path, {})
        if status == 404:
            return None
        return self._body(status, data, content_type, path)

    def list(self, path: str, label_selector: str | None = None) -> list[dict[str, Any]]:
        """The items of the collection at `path`, every page of it (limit/continue), each with the
        apiVersion and kind the list omits; [] if the server answers 404 (the resource is not
        served, such as a CRD that is not installed)."""
        limit: int | None = PAGE
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            query: dict[str, str] = {}
            if limit:
                query["limit"] = str(limit)
            if token:
                query["continue"] = token
            if label_selector:
                query["labelSelector"] = label_selector
            status, data, content_type = self._request(path, query)
            if status == 404 and not token:
                return []
            if status == 410 and token and limit:
                # The continue token expired between pages: read the whole list at once (client-go's pager does).
                limit, items, token = None, [], None
                continue
            body = self._body(status, data, content_type, path)
            page = body.get("items") or []
            if not isinstance(page, list):
                raise ReadError(f"{self.server}: GET {path} answered with items that are not a list")
            api_version = body.get("apiVersion")
            kind = body.get("kind")
            for item in page:
                if isinstance(item, dict):
                    if api_version:
                        item.setdefault("apiVersion", api_version)
                    if isinstance(kind, str) and kind.endswith("List") and len(kind) > 4:
                        item.setdefault("kind", kind[:-4])
                items.append(item)
            following = (body.get("metadata") or {}).get("continue") or None
            if not following:
                return items
            if following == token:
                raise ReadError(f"{self.server}: GET {path} returned the same continue token twice")
            token = following

    # --- lifetime ---------------------------------------------------------------------------

    @property
    def secrets_dir(self) -> str | None:
        """The private directory holding certificate and key data, while the reader is open and
        needs one."""
        return self._secrets.path

    def close(self) -> None:
        """Close the connections and remove the certificate and key files. Idempotent."""
        self._closed = True
        self._drop_client()
        self._secrets.remove()

    def __enter__(self) -> ClusterReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ClusterReader(server={self.server!r}, context={self.context!r}, user={self.user!r})"

    # --- internals --------------------------------------------------------------------------

    def _request(self, path: str, query: dict[str, str]) -> tuple[int, bytes, str]:
        """The status, body and content type of GET `path`."""
        from kubernetes.client.exceptions import OpenApiException

        if self._closed:
            raise ValueError(f"the reader of {self.server} is closed")
        if not path.startswith("/"):
            raise ValueError(f"an API path starts with '/': {path!r}")
        for attempt in (1, 2):
            client = self._authorized_client()
            method, url, headers, _, _ = client.param_serialize(
                "GET",
                path,
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            try:
                with warnings.catch_warnings():
                    if not self._configuration.verify_ssl:  # the kubeconfig asked for it: no warning per request
                        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
                    response = client.call_api(method, url, headers, _request_timeout=self.timeout)
                    data = response.read()
            except (urllib3.exceptions.HTTPError, OpenApiException, OSError) as err:
                raise ReadError(f"{self.server} could not be reached: {_why(err, self.timeout)} (GET {path})") from None
            except ValueError:  # http.client's, which quotes the header: the credential
                raise ReadError(
                    f"{self.server}: GET {path} could not be sent: the credential holds a character that HTTP "
                    "headers do not allow (a line break?)"
                ) from None
            if response.status == 401 and self._exec is not None and attempt == 1:
                self._exec_expiry = None  # the plugin's credential was refused: fetch a new one, once
                continue
            break
        return response.status, data, response.headers.get("Content-Type") or "no content type"

    def _authorized_client(self) -> ApiClient:
        """The ApiClient, with the exec plugin's credential in its configuration when it has one."""
        from kubernetes.client import ApiClient

        if self._exec is not None and (self._exec_expiry is None or time.time() >= self._exec_expiry - _REFRESH_MARGIN):
            status = self._exec.run()
            if status.get("token"):
                self._configuration.api_key["BearerToken"] = f"Bearer {status['token']}"
            if status.get("clientCertificateData"):
                self._configuration.cert_file = self._secrets.write(
                    "exec-client.crt", status["clientCertificateData"].encode()
                )
                self._configuration.key_file = self._secrets.write("exec-client.key", status["clientKeyData"].encode())
                self._drop_client()  # its connection pool holds the certificate it was made with
            self._exec_expiry = status.get("expiry") or float("inf")
        if self._client is None:
            self._client = ApiClient(self._configuration)
            self._client.user_agent = USER_AGENT
        return self._client

    def _drop_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _body(self, status: int, data: bytes, content_type: str, path: str) -> dict[str, Any]:
        if status in (401, 403):
            who = f"user {self.user!r}" if self.user else "user (anonymous)"
            raise ReadError(
                f"the kubeconfig's {who} cannot read {path} on {self.server} (HTTP {status}: {_detail(data)})",
                status,
            )
        if status != 200:
            raise ReadError(f"{self.server}: GET {path} failed (HTTP {status}: {_detail(data)})", status)
        try:
            body = json.loads(data)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise ReadError(
                f"{self.server}: GET {path} answered with something other than a JSON object ({content_type})"
            )
        return body


# --- the kubeconfig ----------------------------------------------------------------------------


def _load(text: str) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        # Not str(err): it quotes the line, which may hold a token or a key.
        mark = err.problem_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ReadError(f"the kubeconfig is not valid YAML{at}: {err.problem}") from None
    except yaml.YAMLError:
        raise ReadError("the kubeconfig is not valid YAML") from None
    if doc is None:
        raise ReadError("the kubeconfig is empty")
    if not isinstance(doc, dict):
        raise ReadError(f"the kubeconfig is a YAML {type(doc).__name__}, not a mapping (a Config document)")
    return doc


def _names(doc: dict[str, Any], section: str) -> list[str]:
    entries = doc.get(section)
    if not isinstance(entries, list):
        return []
    return [str(e["name"]) for e in entries if isinstance(e, dict) and e.get("name")]


def _entry(doc: dict[str, Any], section: str, field: str, name: str) -> dict[str, Any] | None:
    """`field` of the entry of `section` called `name` ({} if the entry has none), or None."""
    entries = doc.get(section) or []
    if not isinstance(entries, list):
        raise ReadError(f"the kubeconfig's {section} is not a list")
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(field)
            if body is None:
                return {}
            if not isinstance(body, dict):
                raise ReadError(f"the kubeconfig's {section} entry {name!r} has a {field} that is not a mapping")
            return body
    return None


def _check_cluster(cluster: dict[str, Any], where: str, base: str) -> None:
    """Refuse what kubectl refuses and the loader would take. Sets insecure-skip-tls-verify to a bool."""
    insecure = cluster.get("insecure-skip-tls-verify")
    if insecure is not None and not isinstance(insecure, bool):
        if not (isinstance(insecure, str) and insecure.lower() in ("true", "false")):
            raise ReadError(f"{where}: insecure-skip-tls-verify is neither true nor false")
        cluster["insecure-skip-tls-verify"] = insecure = insecure.lower() == "true"
    if cluster.get("certificate-authority-data"):
        pem = _decoded(cluster["certificate-authority-data"], f"{where}: certificate-authority-data")
        if b"-----BEGIN" not in pem:
            raise ReadError(f"{where}: certificate-authority-data is not a PEM certificate")
    elif cluster.get("certificate-authority"):
        _file(cluster["certificate-authority"], f"{where}: certificate-authority", base)
    if insecure and (cluster.get("certificate-authority-data") or cluster.get("certificate-authority")):
        raise ReadError(
            f"{where} sets insecure-skip-tls-verify together with a certificate authority; "
            "kubectl refuses that too (keep one)"
        )
    for key in ("tls-server-name", "proxy-url"):
        if cluster.get(key) is not None and not isinstance(cluster[key], str):
            raise ReadError(f"{where}: {key} is not a string")


def _check_user(user: dict[str, Any], who: str, base: str) -> None:
    """Refuse what kubectl refuses and the loader would take, or fail on without naming the entry."""
    for key in ("client-certificate", "client-key"):
        if user.get(f"{key}-data"):  # the loader prefers the data to the file (FileOrData)
            _decoded(user[f"{key}-data"], f"{who}: {key}-data")
        elif user.get(key):
            _file(user[key], f"{who}: {key}", base)
    has_cert = bool(user.get("client-certificate-data") or user.get("client-certificate"))
    if has_cert != bool(user.get("client-key-data") or user.get("client-key")):
        raise ReadError(
            f"{who} has only one of client-certificate-data and client-key-data "
            "(or of the files client-certificate and client-key); it needs both"
        )
    for key in (*_TOKEN, *_BASIC):
        if user.get(key) is not None and not isinstance(user[key], str):
            raise ReadError(f"{who}: {key} is not a string")
    if any(user.get(key) for key in _TOKEN) and any(user.get(key) for key in _BASIC):
        raise ReadError(f"{who} has both a token and a username/password; kubectl takes only one of them")
    if _uses_exec(user):
        _check_exec(user["exec"], f"{who}: exec")
    elif user.get("auth-provider") and not (has_cert or any(user.get(key) for key in (*_TOKEN, *_BASIC))):
        provider = user["auth-provider"].get("name") if isinstance(user["auth-provider"], dict) else None
        raise ReadError(
            f"{who} logs in through the {provider or 'unnamed'} auth-provider, which this reader does not "
            "support (kubectl no longer supports azure's and gcp's either); convert the kubeconfig to an exec "
            "plugin (for AKS: kubelogin convert-kubeconfig)"
        )


def _uses_exec(user: dict[str, Any]) -> bool:
    """An explicit token or basic login wins over `exec`, as in kubectl."""
    return bool(user.get("exec")) and not any(user.get(key) for key in (*_TOKEN, *_BASIC))


def _check_exec(spec: object, where: str) -> None:
    """What ExecProvider would fail on with a bare KeyError or TypeError, or accept where kubectl refuses."""
    if not isinstance(spec, dict):
        raise ReadError(f"{where} is not a mapping")
    command = spec.get("command")
    if not command or not isinstance(command, str):
        raise ReadError(f"{where} has no command")
    api_version = spec.get("apiVersion")
    if api_version not in EXEC_API_VERSIONS:
        raise ReadError(f"{where} has apiVersion {api_version!r}; supported: {', '.join(EXEC_API_VERSIONS)}")
    args = spec.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ReadError(f"{where}.args is not a list of strings")
    for variable in spec.get("env") or []:
        if not (isinstance(variable, dict) and isinstance(variable.get("name"), str)):
            raise ReadError(f"{where}.env holds an entry without a name")
        if not isinstance(variable.get("value"), str):
            raise ReadError(f"{where}.env's {variable['name']} has no string value")
    if spec.get("interactiveMode") == "Always":
        raise ReadError(
            f"{where} runs {command} with interactiveMode: Always, and a preview has no terminal "
            "to give it; log in first (for kubelogin: --login azurecli, or convert-kubeconfig)"
        )


def _decoded(value: object, where: str) -> bytes:
    if not isinstance(value, str):
        raise ReadError(f"{where} is not a base64 string")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ReadError(f"{where} is not valid base64") from None


def _file(value: object, where: str, base: str) -> None:
    if not isinstance(value, str) or not value:
        raise ReadError(f"{where} is not a file path")
    if not os.path.isfile(os.path.join(base, value)):
        raise ReadError(f"{where}: {value} does not exist (relative paths start at {base})")


def _token_file(value: object, where: str, base: str) -> str:
    _file(value, where, base)
    path = os.path.join(base, str(value))
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError) as err:
        raise ReadError(f"{where}: {path} cannot be read ({_reason(err)})") from None


class _SecretDir:
    """A private temporary directory, made on demand and removed by `remove()`, by garbage
    collection or at the interpreter's exit, whichever comes first."""

    def __init__(self) -> None:
        self.path: str | None = None
        self._count = 0
        self._finalizer: weakref.finalize | None = None

    def make(self) -> str:
        if self.path is None:
            path = tempfile.mkdtemp(prefix="kueue-aks-kubeconfig-")  # 0700 already; chmod against an odd umask
            os.chmod(path, 0o700)
            self._finalizer = weakref.finalize(self, shutil.rmtree, path, ignore_errors=True)
            self.path = path
        return self.path

    def write(self, name: str, data: bytes) -> str:
        self._count += 1
        file = os.path.join(self.make(), f"{self._count}-{name}")
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return file

    def remove(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self.path = None


# --- exec plugins ------------------------------------------------------------------------------


class _ExecPlugin:
    """A kubeconfig user's `exec` stanza, as the client's ExecProvider reads it (command, args,
    env, provideClusterInfo), run here with a time limit."""

    def __init__(self, provider: ExecProvider, spec: dict[str, Any], who: str, server: str, timeout: float) -> None:
        self.provider, self.command, self.install_hint = provider, spec["command"], str(spec.get("installHint") or "")
        self.who, self.server, self.timeout = who, server, timeout

    def run(self) -> dict[str, Any]:
        """The ExecCredential's status, with `expiry` (epoch seconds) when it has expirationTimestamp."""
        from kubernetes.config.dateutil import parse_rfc3339

        fail = f"cannot read {self.server}: {self.who} gets its credentials from {self.command}"
        provider = self.provider
        # KUBERNETES_EXEC_INFO as ExecProvider.run writes it, never interactive.
        spec: dict[str, Any] = {"interactive": False}
        if provider.cluster:
            cluster = dict(provider.cluster.value)
            for extension in cluster.get("extensions") or []:
                if isinstance(extension, dict) and extension.get("name") == EXEC_CONFIG_EXTENSION:
                    cluster["config"] = extension.get("extension")
            spec["cluster"] = cluster
        info = {"apiVersion": provider.api_version, "kind": "ExecCredential", "spec": spec}
        try:
            process = subprocess.Popen(
                provider.args,
                cwd=provider.cwd,
                env={**provider.env, "KUBERNETES_EXEC_INFO": json.dumps(info)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, killed whole at the timeout
            )
        except OSError as err:
            hint = f"; {self.install_hint.strip()}" if self.install_hint.strip() else ""
            raise ReadError(f"{fail}, which could not be started ({_reason(err)}){hint}") from None
        try:
            out, stderr = process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            raise ReadError(f"{fail}, which gave none within {self.timeout:g} s") from None
        if process.returncode != 0:
            raise ReadError(f"{fail}, which failed (exit status {process.returncode}): {_last_line(stderr)}")
        try:
            credential = json.loads(out)
        except ValueError:
            credential = None  # not quoted: it may be a token
        if not isinstance(credential, dict) or credential.get("kind") != "ExecCredential":
            raise ReadError(f"{fail}, which did not print an ExecCredential (JSON) on stdout")
        if credential.get("apiVersion") != provider.api_version:
            raise ReadError(
                f"{fail}, which answered with apiVersion {credential.get('apiVersion')!r} "
                f"where the kubeconfig asks for {provider.api_version}"
            )
        status = credential.get("status")
        if not isinstance(status, dict):
            raise ReadError(f"{fail}, whose ExecCredential has no status")
        has_cert, has_key = bool(status.get("clientCertificateData")), bool(status.get("clientKeyData"))
        if has_cert != has_key:
            raise ReadError(f"{fail}, whose ExecCredential has only one of clientCertificateData and clientKeyData")
        if not status.get("token") and not has_cert:
            raise ReadError(f"{fail}, whose ExecCredential has neither a token nor a client certificate and key")
        for field in ("token", "clientCertificateData", "clientKeyData"):
            if status.get(field) is not None and not isinstance(status[field], str):
                raise ReadError(f"{fail}, whose ExecCredential's status.{field} is not a string")
        result = dict(status)
        stamp = status.get("expirationTimestamp")
        if stamp:
            try:
                result["expiry"] = parse_rfc3339(str(stamp)).timestamp()
            except ValueError:
                raise ReadError(
                    f"{fail}, whose ExecCredential's expirationTimestamp {stamp!r} is not RFC 3339"
                ) from None
        return result


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill a plugin that ran out of time, with whatever it started (its own session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    if not lines:
        return "it wrote nothing on stderr"
    last = lines[-1]
    return last if len(last) <= 400 else last[:400] + "…"


# --- errors ------------------------------------------------------------------------------------


def _detail(data: bytes) -> str:
    """The Status message of an error answer, or the start of its body."""
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    text = data.decode(errors="replace").strip()
    if not text:
        return "no message"
    return text if len(text) <= 300 else text[:300] + "…"


def _chain(err: BaseException) -> list[BaseException]:
    """The exceptions behind `err`, outermost first: causes, contexts, urllib3's `reason` and
    exceptions passed as arguments."""
    seen: set[int] = set()
    order: list[BaseException] = []
    stack = [err]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        order.append(current)
        inner = [current.__cause__, current.__context__, getattr(current, "reason", None), *current.args]
        stack.extend(e for e in reversed(inner) if isinstance(e, BaseException))
    return order


def _why(err: BaseException, timeout: float) -> str:
    """Why a request got no answer, in a few words: from the Python errors behind urllib3's and
    the client's, whose own messages hold the pool and URL."""
    from kubernetes.client.exceptions import OpenApiException

    errors = urllib3.exceptions
    chain = _chain(err)
    if any(isinstance(e, errors.ConnectTimeoutError) and not isinstance(e, errors.NewConnectionError) for e in chain):
        return f"the connection timed out after {timeout:g} s"
    if any(isinstance(e, (errors.ReadTimeoutError, TimeoutError, socket.timeout)) for e in chain):
        return f"it did not answer within {timeout:g} s (timed out)"
    causes = [e for e in chain if not isinstance(e, (errors.HTTPError, OpenApiException))]
    for cause in causes:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"its TLS certificate was not accepted ({cause.verify_message or cause.reason})"
        if isinstance(cause, ssl.SSLError):
            return f"the TLS handshake failed ({cause.reason or cause.strerror or cause})"
        if type(cause).__name__ == "CertificateError":  # urllib3's own host name check
            return f"its TLS certificate was not accepted ({cause})"
    if any(isinstance(e, errors.ProxyError) for e in chain):
        return f"the proxy failed ({_why(causes[-1], timeout) if causes else 'no reason given'})"
    for cause in causes:
        if isinstance(cause, socket.gaierror):
            return f"its host name could not be resolved ({cause.strerror or cause})"
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror[0].lower() + cause.strerror[1:]
    # Only an OSError's own words (http.client's and the system's): a ValueError's may quote a header, a token.
    last = causes[-1] if causes else err
    return _reason(last) if isinstance(last, OSError) else type(last).__name__


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err) or type(err).__name__
