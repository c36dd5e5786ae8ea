"""Credentials stay secret: none in a chart URL or an image repository, none in a plain-text
kubeconfig, and a registry's sign-in only as a Pulumi secret, which reaches Helm as a secret input
and appears nowhere in the plan's output, its manifests, the user's cache or the registered state."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime.rpc import is_rpc_secret

from components import plan
from components.config.parse import parse_config
from components.config.refusals import MINIMAL
from components.k8s.charts import chart_ref
from components.k8s.helm import repository_opts
from testbed.config_errors import refused
from testbed.harness import ROOT, run_program
from testbed.stacks import stack_file_config

TOKEN = "tok-3f9c1d2e7b"  # what must never show
KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://k.example.com"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "c",
}
EXEC_USER = {
    "exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "kubelogin",
        "args": ["get-token", "--login", "azurecli", "--server-id", "6dae42f8-4368-4678-94ff-3960e28e3630"],
    }
}
PLAIN_USERS = {
    "token": {"token": TOKEN},
    "password": {"username": "admin", "password": TOKEN},
    "client key": {"client-certificate-data": "Y2VydA==", "client-key-data": TOKEN},
    "auth provider": {"auth-provider": {"name": "oidc", "config": {"refresh-token": TOKEN}}},
    "exec flag": {"exec": {**EXEC_USER["exec"], "args": ["get-token", f"--client-secret={TOKEN}"]}},
    "exec env": {"exec": {**EXEC_USER["exec"], "env": [{"name": "AZURE_CLIENT_SECRET", "value": TOKEN}]}},
}


def kubeconfig(user: dict[str, Any]) -> str:
    return yaml.safe_dump({**KUBECONFIG, "users": [{"name": "u", "user": user}]})


@pytest.mark.parametrize("user", PLAIN_USERS.values(), ids=PLAIN_USERS.keys())
def test_a_kubeconfig_with_a_plain_text_credential_is_refused_without_quoting_it(user: dict[str, Any]) -> None:
    found = refused(
        parse_config,
        {**MINIMAL, **{"cluster": {"kubeconfig": kubeconfig(user)}}},
        stack="t",
        location="eastus2",
        secret_keys=(),
    ).pairs
    assert [path for path, _ in found] == ["kueue-aks:cluster.kubeconfig"], found
    assert "pulumi config set --secret" in found[0][1] and TOKEN not in found[0][1]


@pytest.mark.parametrize("user", PLAIN_USERS.values(), ids=PLAIN_USERS.keys())
def test_the_same_kubeconfig_handed_to_the_program_as_a_secret_is_taken(user: dict[str, Any]) -> None:
    config = parse_config(
        {**MINIMAL, "cluster": {"kubeconfig": kubeconfig(user)}},
        stack="t",
        location=None,
        secret_keys=("kueue-aks:cluster",),
    )
    assert config.cluster.mode == "kubeconfig"


def test_a_kubeconfig_whose_users_sign_in_by_exec_holds_no_credential_and_stays_plain() -> None:
    config = parse_config(
        {**MINIMAL, "cluster": {"kubeconfig": kubeconfig(EXEC_USER)}}, stack="t", location=None, secret_keys=()
    )
    assert config.cluster.kubeconfig is not None and "kubelogin" in config.cluster.kubeconfig


def test_a_kubeconfig_of_nested_aliases_is_refused_before_it_expands() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(12)
    )
    assert [
        path
        for path, _ in refused(
            parse_config,
            {**MINIMAL, **{"cluster": {"kubeconfig": bomb}}},
            stack="t",
            location="eastus2",
            secret_keys=(),
        ).pairs
    ] == ["kueue-aks:cluster.kubeconfig"]


CHART_KEYS = {
    "kueue": ({"kueue": {"chart": f"https://ci:{TOKEN}@charts.example.com/kueue"}}, "kueue-aks:kueue.chart"),
    "device plugin": (
        {"devicePlugin": {"chart": f"oci://ci:{TOKEN}@myregistry.azurecr.io/helm/nvidia"}},
        "kueue-aks:devicePlugin.chart",
    ),
    "operator": (
        {
            "kueue": {"frameworks": ["batch/job", "ray.io/rayjob", "ray.io/raycluster"]},
            "operators": {"kuberay": {"chart": f"https://{TOKEN}@charts.example.com/kuberay"}},
        },
        "kueue-aks:operators.kuberay.chart",
    ),
    "SAS token": (
        {"kueue": {"chart": f"https://acct.blob.core.windows.net/charts?sv=2024&sig={TOKEN}"}},
        "kueue-aks:kueue.chart",
    ),
    "image": (
        {"kueue": {"imageRepository": f"ci:{TOKEN}@myregistry.azurecr.io/kueue/kueue"}},
        "kueue-aks:kueue.imageRepository",
    ),
}


@pytest.mark.parametrize(("raw", "path"), CHART_KEYS.values(), ids=CHART_KEYS.keys())
def test_a_credential_in_a_chart_url_or_image_repository_is_refused_without_quoting_it(
    raw: dict[str, Any], path: str
) -> None:
    found = refused(
        parse_config, {**MINIMAL, **raw}, stack="t", location="eastus2", secret_keys=None
    ).pairs  # whoever calls: the URL itself is the leak
    assert path in [p for p, _ in found], found
    assert all(TOKEN not in message for _, message in found), found


@pytest.mark.parametrize("source", ["https://", "oci://", "https:///kueue", "oci://a b/kueue"])
def test_a_chart_url_without_a_host_is_refused_at_its_key(source: str) -> None:
    found = refused(
        parse_config, {**MINIMAL, **{"kueue": {"chart": source}}}, stack="t", location="eastus2", secret_keys=()
    ).pairs
    assert [p for p, _ in found] == ["kueue-aks:kueue.chart"], found


PRIVATE = {
    "kueue": {"chart": "oci://myregistry.azurecr.io/helm/kueue"},
    "devicePlugin": {"chart": "https://charts.example.com/nvidia"},
}


def logins(password: Any) -> list[dict[str, Any]]:
    copy = dict if isinstance(password, dict) else str  # two objects: a YAML dump would alias one
    return [
        {"registry": "MyRegistry.azurecr.io", "username": "ci", "password": copy(password)},
        {"registry": "charts.example.com", "username": "ci2", "password": copy(password)},
    ]


def test_a_registry_password_in_plain_text_is_refused_naming_the_secret_command() -> None:
    found = refused(
        parse_config,
        {**MINIMAL, **{**PRIVATE, "registryCredentials": logins(TOKEN)}},
        stack="t",
        location="eastus2",
        secret_keys=(),
    ).pairs
    assert [p for p, _ in found] == [f"kueue-aks:registryCredentials[{i}].password" for i in (0, 1)], found
    assert all("pulumi config set --secret --path" in m and TOKEN not in m for _, m in found)


def test_a_sign_in_for_a_registry_no_chart_comes_from_or_given_twice_is_refused() -> None:
    twice = [
        *logins({"secure": "v1:x"}),
        {"registry": "myregistry.azurecr.io", "username": "x", "password": {"secure": "v1:y"}},
    ]
    found = refused(
        parse_config,
        {**MINIMAL, **{**PRIVATE, "registryCredentials": twice}},
        stack="t",
        location="eastus2",
        secret_keys=(),
    ).pairs
    assert [p for p, _ in found] == ["kueue-aks:registryCredentials[2].registry"], found
    unused = refused(
        parse_config,
        {**MINIMAL, **{"registryCredentials": logins({"secure": "v1:x"})}},
        stack="t",
        location="eastus2",
        secret_keys=(),
    ).pairs
    assert [p for p, _ in unused] == [f"kueue-aks:registryCredentials[{i}].registry" for i in (0, 1)], unused


def test_each_chart_goes_with_the_sign_in_of_its_registry() -> None:
    config = parse_config(
        {**MINIMAL, **PRIVATE, "registryCredentials": logins(TOKEN)},
        stack="t",
        location="eastus2",
        secret_keys=("kueue-aks:registryCredentials",),
    )
    oci = chart_ref(config.kueue.chart, "kueue", "0.19.2", config.registry_logins)
    https = chart_ref(config.device_plugin.chart, "nvidia-device-plugin", "0.17.1", config.registry_logins)
    local = chart_ref("charts/kueue-0.19.2.tgz", "kueue", "0.19.2", config.registry_logins)
    assert (oci.login.username if oci.login else None, https.login.username if https.login else None) == ("ci", "ci2")
    assert local.login is None and TOKEN not in repr(config) and TOKEN not in repr(oci)
    assert repository_opts(local) is None


def plain(value: Any, needle: str) -> list[str]:
    """Where `needle` appears in `value` outside a secret (an rpc secret's insides are encrypted in state)."""
    if is_rpc_secret(value):
        return []
    if isinstance(value, dict):
        return [f"{k}.{w}" for k, v in value.items() for w in plain(v, needle)] + (
            [str(k) for k in value if needle in str(k)]
        )
    if isinstance(value, list):
        return [f"[{i}].{w}" for i, v in enumerate(value) for w in plain(v, needle)]
    return ["(here)"] if needle in str(value) else []


def test_the_program_hands_helm_the_password_as_a_secret_and_nowhere_else() -> None:
    config = {
        **stack_file_config("dev"),
        "kueue-aks:kueue": PRIVATE["kueue"],
        "kueue-aks:devicePlugin": PRIVATE["devicePlugin"],
        "kueue-aks:registryCredentials": logins(TOKEN),
    }
    run = run_program(config, secret_keys=["kueue-aks:registryCredentials"])
    releases = {r.name: r.inputs for r in run.of_type("kubernetes:helm.sh/v3:Release")}
    for name in ("kueue-release", "gpu-release"):
        opts = releases[name]["repositoryOpts"]
        password = opts["value"]["password"] if is_rpc_secret(opts) else opts["password"]
        assert (is_rpc_secret(opts) or is_rpc_secret(password)) and TOKEN in str(password), (name, opts)
    leaks = {r.urn: plain(r.inputs, TOKEN) for r in run.registrations if plain(r.inputs, TOKEN)}
    assert not leaks, leaks
    assert TOKEN not in repr(run.exports)


def test_the_program_refuses_the_password_the_engine_did_not_mark_secret() -> None:
    config = {
        **stack_file_config("dev"),
        "kueue-aks:kueue": PRIVATE["kueue"],
        "kueue-aks:registryCredentials": logins(TOKEN)[:1],
    }
    with pytest.raises(Exception) as err:
        run_program(config, secret_keys=[])
    assert "kueue-aks:registryCredentials[0].password" in str(err.value) and TOKEN not in str(err.value)


def files_holding(folder: Path, needle: str) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if needle in str(path.relative_to(folder)) or (path.is_file() and needle.encode() in path.read_bytes()):
            found.append(str(path))
    return found


def test_the_plan_neither_prints_nor_writes_nor_caches_a_credential(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secure = "v1:ZW5jcnlwdGVkLXBhc3N3b3Jk"
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"].update({f"kueue-aks:{k}": v for k, v in PRIVATE.items()})
    doc["config"]["kueue-aks:registryCredentials"] = logins({"secure": secure})
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(doc))
    assert plan.main(["--stack", "dev", "--root", str(tmp_path), "--manifests", str(tmp_path / "m")]) == 0
    out = capsys.readouterr()
    order = (tmp_path / "m" / "ORDER.md").read_text()
    assert '--username ci --password "$HELM_REGISTRY_PASSWORD"' in order, order
    assert secure not in out.out + out.err and not files_holding(tmp_path / "m", secure)

    # A credential in the URL instead: refused, and neither printed nor left in the cache's paths.
    doc["config"]["kueue-aks:kueue"] = {"chart": f"oci://ci:{TOKEN}@myregistry.azurecr.io/helm/kueue"}
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(doc))
    assert plan.main(["--stack", "dev", "--root", str(tmp_path), "--manifests", str(tmp_path / "m2")]) != 0
    out = capsys.readouterr()
    assert "kueue-aks:kueue.chart" in out.out + out.err and TOKEN not in out.out + out.err
    assert not files_holding(Path(os.environ["XDG_CACHE_HOME"]), TOKEN)
    assert not (tmp_path / "m2").exists() or not files_holding(tmp_path / "m2", TOKEN)
