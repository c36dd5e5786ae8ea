"""A read-only Kubernetes API client built from a kubeconfig document, for looking inside a
cluster at preview, before any Pulumi resource exists (pure; no Pulumi import, no `kubernetes`
package: requests, PyYAML and the standard library).

It reads what kubectl reads from the kubeconfig's current-context: the cluster's `server`,
`certificate-authority-data` or `certificate-authority`, `insecure-skip-tls-verify`,
`tls-server-name` and `proxy-url`; the user's `client-certificate-data`/`client-key-data` or the
`client-certificate`/`client-key` files, `token` or `tokenFile`, `username`/`password`, or an
`exec` plugin (client.authentication.k8s.io/v1 and v1beta1, as kubelogin writes for AKS). An
explicit token or basic login wins over `exec`, as in kubectl. Relative file paths start at the
working directory (the document has no file to be relative to). Impersonation (`as`) and the
removed `auth-provider` plugins are not read.

Certificate and key *data* go to a private temporary directory (0700, files 0600), because ssl
takes only file paths; `close()` (or leaving the `with` block) removes it, and so does garbage
collection or the interpreter's exit if the reader is never closed.

Every failure is a `ReadError` whose message names the server and what failed, never a token, a
key or a line of the kubeconfig.
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
from datetime import datetime
from typing import Any

import requests
import urllib3
import yaml
from requests.adapters import HTTPAdapter
from requests.auth import AuthBase

PAGE = 500  # items a list asks for at a time (kubectl's chunk size)
EXEC_TIMEOUT = 60.0  # seconds an exec plugin may take (kubelogin may call Azure's token endpoint)
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_CONFIG_EXTENSION = "client.authentication.k8s.io/exec"  # the cluster extension passed as spec.cluster.config
USER_AGENT = "kueue-aks-reader"
_REFRESH_MARGIN = 10.0  # seconds before an exec credential's expiry at which it is fetched again


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
        *,
        context: str = "",
        user: str = "",
        verify: bool | str = True,
        cert: tuple[str, str] | None = None,
        authorization: str | None = None,
        exec_plugin: _ExecPlugin | None = None,
        tls_server_name: str | None = None,
        proxy_url: str | None = None,
        timeout: float = 15.0,
        secrets: _SecretDir | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        self.context = context
        self.user = user
        self.timeout = timeout
        self._verify = verify
        self._cert = cert
        self._authorization = authorization
        self._exec = exec_plugin
        self._exec_authorization: str | None = None
        self._exec_cert: tuple[str, str] | None = None
        self._exec_expiry: float | None = None  # epoch seconds; None: not fetched yet
        self._secrets = secrets or _SecretDir()
        self._proxies = {"https": proxy_url, "http": proxy_url} if proxy_url else None
        self._closed = False
        self._session = requests.Session()
        self._session.headers.update({"Accept": "application/json", "User-Agent": USER_AGENT})
        if tls_server_name:
            self._session.mount("https://", _ServerNameAdapter(tls_server_name))

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
            return cls._build(server, name, cluster_name, cluster, user_name, user, secrets, timeout, exec_timeout)
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
        where = f"cluster {cluster_name!r} of the kubeconfig"
        insecure = _flag(cluster.get("insecure-skip-tls-verify"), f"{where}: insecure-skip-tls-verify")
        ca_pem: bytes | None = None
        verify: bool | str = True
        if cluster.get("certificate-authority-data"):
            ca_pem = _decoded(cluster["certificate-authority-data"], f"{where}: certificate-authority-data")
            if b"-----BEGIN" not in ca_pem:
                raise ReadError(f"{where}: certificate-authority-data is not a PEM certificate")
            verify = secrets.write("ca.crt", ca_pem)
        elif cluster.get("certificate-authority"):
            verify = _file(cluster["certificate-authority"], f"{where}: certificate-authority")
        if insecure:
            if verify is not True:
                raise ReadError(
                    f"{where} sets insecure-skip-tls-verify together with a certificate authority; "
                    "kubectl refuses that too (keep one)"
                )
            verify = False
        tls_server_name = _optional_str(cluster.get("tls-server-name"), f"{where}: tls-server-name")
        proxy_url = _optional_str(cluster.get("proxy-url"), f"{where}: proxy-url")

        who = f"user {user_name!r} of the kubeconfig"
        cert: tuple[str, str] | None = None
        if user.get("client-certificate-data") or user.get("client-key-data"):
            if not (user.get("client-certificate-data") and user.get("client-key-data")):
                raise ReadError(f"{who} has only one of client-certificate-data and client-key-data; it needs both")
            cert = (
                secrets.write(
                    "client.crt", _decoded(user["client-certificate-data"], f"{who}: client-certificate-data")
                ),
                secrets.write("client.key", _decoded(user["client-key-data"], f"{who}: client-key-data")),
            )
        elif user.get("client-certificate") or user.get("client-key"):
            if not (user.get("client-certificate") and user.get("client-key")):
                raise ReadError(f"{who} has only one of client-certificate and client-key; it needs both")
            cert = (
                _file(user["client-certificate"], f"{who}: client-certificate"),
                _file(user["client-key"], f"{who}: client-key"),
            )

        authorization: str | None = None
        token = _optional_str(user.get("token"), f"{who}: token")
        if user.get("tokenFile"):
            path = _file(user["tokenFile"], f"{who}: tokenFile")
            try:
                with open(path, encoding="utf-8") as handle:
                    token = handle.read().strip()
            except (OSError, UnicodeDecodeError) as err:
                raise ReadError(f"{who}: tokenFile {path} cannot be read ({_reason(err)})") from None
        username = _optional_str(user.get("username"), f"{who}: username")
        password = _optional_str(user.get("password"), f"{who}: password")
        if token and (username or password):
            raise ReadError(f"{who} has both a token and a username/password; kubectl takes only one of them")
        if token:
            authorization = f"Bearer {token}"
        elif username or password:
            pair = f"{username or ''}:{password or ''}".encode()
            authorization = f"Basic {base64.b64encode(pair).decode()}"

        plugin: _ExecPlugin | None = None
        if user.get("exec") and authorization is None:
            info = _cluster_info(server, cluster, ca_pem, verify, insecure, tls_server_name, proxy_url)
            plugin = _ExecPlugin.parse(user["exec"], who, server, info, exec_timeout)
        elif user.get("auth-provider") and authorization is None and cert is None:
            provider = user["auth-provider"].get("name") if isinstance(user["auth-provider"], dict) else None
            raise ReadError(
                f"{who} logs in through the {provider or 'unnamed'} auth-provider, which kubectl no "
                "longer supports either; convert the kubeconfig to an exec plugin "
                "(for AKS: kubelogin convert-kubeconfig)"
            )
        return cls(
            server,
            context=context,
            user=user_name,
            verify=verify,
            cert=cert,
            authorization=authorization,
            exec_plugin=plugin,
            tls_server_name=tls_server_name,
            proxy_url=proxy_url,
            timeout=timeout,
            secrets=secrets,
        )

    # --- reading ----------------------------------------------------------------------------

    def get(self, path: str) -> dict[str, Any] | None:
        """The object at `path` (an API path such as /api/v1/namespaces/kube-system), or None if
        the server answers 404."""
        response = self._request(path, None)
        if response.status_code == 404:
            return None
        return self._body(response, path)

    def list(self, path: str, label_selector: str | None = None) -> list[dict[str, Any]]:
        """The items of the collection at `path`, every page of it (limit/continue), each with the
        apiVersion and kind the list omits; [] if the server answers 404 (the resource is not
        served, such as a CRD that is not installed)."""
        limit: int | None = PAGE
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            params: dict[str, str] = {}
            if limit:
                params["limit"] = str(limit)
            if token:
                params["continue"] = token
            if label_selector:
                params["labelSelector"] = label_selector
            response = self._request(path, params)
            if response.status_code == 404 and not token:
                return []
            if response.status_code == 410 and token and limit:
                # The continue token expired between pages: read the whole list at once (client-go's pager does).
                limit, items, token = None, [], None
                continue
            body = self._body(response, path)
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
        self._session.close()
        self._secrets.remove()

    def __enter__(self) -> ClusterReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ClusterReader(server={self.server!r}, context={self.context!r}, user={self.user!r})"

    # --- internals --------------------------------------------------------------------------

    def _request(self, path: str, params: dict[str, str] | None) -> requests.Response:
        if self._closed:
            raise ValueError(f"the reader of {self.server} is closed")
        if not path.startswith("/"):
            raise ValueError(f"an API path starts with '/': {path!r}")
        url = self.server + path
        for attempt in (1, 2):
            authorization, cert = self._credentials()
            try:
                with warnings.catch_warnings():
                    if self._verify is False:
                        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
                    response = self._session.get(
                        url,
                        params=params,
                        auth=_Authorization(authorization),
                        verify=self._verify,
                        cert=cert,
                        timeout=self.timeout,
                        proxies=self._proxies,
                    )
            except requests.RequestException as err:
                raise ReadError(f"{self.server} could not be reached: {_why(err, self.timeout)} (GET {path})") from None
            if response.status_code == 401 and self._exec is not None and attempt == 1:
                self._exec_expiry = None  # the plugin's credential was refused: fetch a new one, once
                continue
            return response
        return response

    def _credentials(self) -> tuple[str | None, tuple[str, str] | None]:
        if self._exec is None:
            return self._authorization, self._cert
        if self._exec_expiry is None or time.time() >= self._exec_expiry - _REFRESH_MARGIN:
            status = self._exec.run()
            self._exec_authorization = f"Bearer {status['token']}" if status.get("token") else None
            self._exec_cert = None
            if status.get("clientCertificateData"):
                self._exec_cert = (
                    self._secrets.write("exec-client.crt", status["clientCertificateData"].encode()),
                    self._secrets.write("exec-client.key", status["clientKeyData"].encode()),
                )
            self._exec_expiry = status.get("expiry") or float("inf")
        return self._exec_authorization, self._exec_cert or self._cert

    def _body(self, response: requests.Response, path: str) -> dict[str, Any]:
        status = response.status_code
        if status in (401, 403):
            who = f"user {self.user!r}" if self.user else "user (anonymous)"
            raise ReadError(
                f"the kubeconfig's {who} cannot read {path} on {self.server} (HTTP {status}: {_detail(response)})",
                status,
            )
        if status != 200:
            raise ReadError(f"{self.server}: GET {path} failed (HTTP {status}: {_detail(response)})", status)
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            kind = response.headers.get("Content-Type") or "no content type"
            raise ReadError(f"{self.server}: GET {path} answered with something other than a JSON object ({kind})")
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


def _flag(value: object, where: str) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ReadError(f"{where} is neither true nor false")


def _optional_str(value: object, where: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ReadError(f"{where} is not a string")
    return value


def _decoded(value: object, where: str) -> bytes:
    if not isinstance(value, str):
        raise ReadError(f"{where} is not a base64 string")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ReadError(f"{where} is not valid base64") from None


def _file(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ReadError(f"{where} is not a file path")
    path = os.path.expanduser(value)
    if not os.path.exists(path):
        raise ReadError(f"{where}: {path} does not exist (relative paths start at {os.getcwd()})")
    return path


def _cluster_info(
    server: str,
    cluster: dict[str, Any],
    ca_pem: bytes | None,
    verify: bool | str,
    insecure: bool,
    tls_server_name: str | None,
    proxy_url: str | None,
) -> dict[str, Any]:
    """The cluster as an exec plugin sees it in KUBERNETES_EXEC_INFO's spec.cluster (client-go's
    clientauthentication Cluster; empty fields omitted)."""
    if ca_pem is None and isinstance(verify, str):
        try:
            with open(verify, "rb") as handle:
                ca_pem = handle.read()
        except OSError:
            ca_pem = None
    info: dict[str, Any] = {"server": server}
    if tls_server_name:
        info["tls-server-name"] = tls_server_name
    if insecure:
        info["insecure-skip-tls-verify"] = True
    if ca_pem:
        info["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    if proxy_url:
        info["proxy-url"] = proxy_url
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, dict) and extension.get("name") == EXEC_CONFIG_EXTENSION:
            info["config"] = extension.get("extension")
    return info


class _SecretDir:
    """A private temporary directory, made on the first write and removed by `remove()`, by
    garbage collection or at the interpreter's exit, whichever comes first."""

    def __init__(self) -> None:
        self.path: str | None = None
        self._count = 0
        self._finalizer: weakref.finalize | None = None

    def write(self, name: str, data: bytes) -> str:
        if self.path is None:
            path = tempfile.mkdtemp(prefix="kueue-aks-kubeconfig-")  # 0700 already; chmod against an odd umask
            os.chmod(path, 0o700)
            self._finalizer = weakref.finalize(self, shutil.rmtree, path, ignore_errors=True)
            self.path = path
        self._count += 1
        file = os.path.join(self.path, f"{self._count}-{name}")
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
    """A kubeconfig user's `exec` stanza: runs the command and reads its ExecCredential."""

    def __init__(
        self,
        command: str,
        args: list[str],
        env: dict[str, str],
        api_version: str,
        install_hint: str,
        info: dict[str, Any],
        who: str,
        server: str,
        timeout: float,
    ) -> None:
        self.command, self.args, self.env, self.api_version = command, args, env, api_version
        self.install_hint, self.info, self.who, self.server, self.timeout = install_hint, info, who, server, timeout

    @classmethod
    def parse(cls, spec: object, who: str, server: str, cluster_info: dict[str, Any], timeout: float) -> _ExecPlugin:
        where = f"{who}: exec"
        if not isinstance(spec, dict):
            raise ReadError(f"{where} is not a mapping")
        command = spec.get("command")
        if not command or not isinstance(command, str):
            raise ReadError(f"{where} has no command")
        api_version = spec.get("apiVersion")
        if api_version not in EXEC_API_VERSIONS:
            raise ReadError(f"{where} has apiVersion {api_version!r}; supported: {', '.join(EXEC_API_VERSIONS)}")
        args = spec.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
            raise ReadError(f"{where}.args is not a list of strings")
        env: dict[str, str] = {}
        for variable in spec.get("env") or []:
            if not isinstance(variable, dict) or not isinstance(variable.get("name"), str):
                raise ReadError(f"{where}.env holds an entry without a name")
            env[variable["name"]] = "" if variable.get("value") is None else str(variable["value"])
        if spec.get("interactiveMode") == "Always":
            raise ReadError(
                f"{where} runs {command} with interactiveMode: Always, and a preview has no terminal "
                "to give it; log in first (for kubelogin: --login azurecli, or convert-kubeconfig)"
            )
        info: dict[str, Any] = {"interactive": False}
        if spec.get("provideClusterInfo"):
            info["cluster"] = cluster_info
        return cls(
            command,
            [str(a) for a in args],
            env,
            api_version,
            str(spec.get("installHint") or ""),
            {"kind": "ExecCredential", "apiVersion": api_version, "spec": info},
            who,
            server,
            timeout,
        )

    def run(self) -> dict[str, Any]:
        """The ExecCredential's status, with `expiry` (epoch seconds) when it has expirationTimestamp."""
        fail = f"cannot read {self.server}: {self.who} gets its credentials from {self.command}"
        environ = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": json.dumps(self.info)}
        try:
            process = subprocess.Popen(
                [self.command, *self.args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=environ,
                start_new_session=True,
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
        if credential.get("apiVersion") != self.api_version:
            raise ReadError(
                f"{fail}, which answered with apiVersion {credential.get('apiVersion')!r} "
                f"where the kubeconfig asks for {self.api_version}"
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
                result["expiry"] = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
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


# --- HTTP --------------------------------------------------------------------------------------


class _Authorization(AuthBase):
    """Sets the Authorization header (or none); given on every request so that requests never
    falls back to ~/.netrc."""

    def __init__(self, value: str | None) -> None:
        self.value = value

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if self.value:
            request.headers["Authorization"] = self.value
        return request


class _ServerNameAdapter(HTTPAdapter):
    """HTTPS whose TLS server name (SNI and the name the certificate must hold) is the cluster's
    tls-server-name rather than the server URL's host."""

    def __init__(self, server_name: str) -> None:
        self.server_name = server_name
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs.update(server_hostname=self.server_name, assert_hostname=self.server_name)
        super().init_poolmanager(*args, **kwargs)

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        kwargs.update(server_hostname=self.server_name, assert_hostname=self.server_name)
        return super().proxy_manager_for(proxy, **kwargs)


def _detail(response: requests.Response) -> str:
    """The Status message of an error answer, or the start of its body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    text = response.text.strip()
    if not text:
        return response.reason or "no message"
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


def _why(err: requests.RequestException, timeout: float) -> str:
    """Why a request got no answer, in a few words."""
    causes = [e for e in _chain(err) if not isinstance(e, (requests.RequestException, urllib3.exceptions.HTTPError))]
    if isinstance(err, requests.ConnectTimeout):
        return f"the connection timed out after {timeout:g} s"
    if isinstance(err, requests.ReadTimeout) or any(isinstance(e, (TimeoutError, socket.timeout)) for e in causes):
        return f"it did not answer within {timeout:g} s (timed out)"
    for cause in causes:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"its TLS certificate was not accepted ({cause.verify_message or cause.reason})"
        if isinstance(cause, ssl.SSLError):
            return f"the TLS handshake failed ({cause.reason or cause.strerror or cause})"
        if type(cause).__name__ == "CertificateError":  # urllib3's own host name check
            return f"its TLS certificate was not accepted ({cause})"
    if isinstance(err, requests.exceptions.ProxyError):
        return f"the proxy failed ({_reason(causes[-1]) if causes else err})"
    for cause in causes:
        if isinstance(cause, socket.gaierror):
            return f"its host name could not be resolved ({cause.strerror or cause})"
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror[0].lower() + cause.strerror[1:]
    return _reason(causes[-1] if causes else err)


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err) or type(err).__name__
