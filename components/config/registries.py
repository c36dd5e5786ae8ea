"""`kueue-aks:registryCredentials`: how Helm signs in to a private chart registry.

A chart URL may not carry a credential (components/k8s/charts.py refuses `https://user:token@…`):
it would be printed by the plan, written into ORDER.md and kept in the state in plain text. The
credential is given here instead, its password a Pulumi secret, and reaches the Helm release as a
secret input (components/k8s/helm.py: repository_opts). A sign-in for a registry no chart comes
from is refused: it is a misspelt host, and the chart would then be pulled without it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..k8s.charts import RegistryLogin, registry_of
from .checks import ENCRYPTED, INVALID, Checks, Problems, Reader
from .credentials import plain_text_problem
from .keys import REGISTRY_CREDENTIALS


def parse_registry_credentials(
    problems: Problems, raw: Any, chart_sources: Iterable[str | None], *, secret: bool | None
) -> tuple[RegistryLogin, ...]:
    """The sign-ins, one per registry. `chart_sources` are the stack's chart URLs (a sign-in must
    serve one); `secret` says whether the program was handed the key as a Pulumi secret (None:
    unknown). Passwords are ENCRYPTED where the stack file still holds them encrypted."""
    path = REGISTRY_CREDENTIALS.name
    entries = [] if raw is None else Checks(problems).value(path, raw, REGISTRY_CREDENTIALS)
    if entries is INVALID:
        return ()
    registries = {host for host in (registry_of(s or "") for s in chart_sources) if host}
    logins: list[RegistryLogin] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        r = Reader(problems, f"{path}[{i}]", entry, REGISTRY_CREDENTIALS.items)  # type: ignore[arg-type]
        if not r.value:
            if entry is None or isinstance(entry, Mapping):
                problems.add(f"{path}[{i}]", "must be an object with registry, username and password")
            continue
        registry = r.get("registry", None)
        username = r.get("username", None)
        password = r.get("password", None)
        if isinstance(password, str) and password is not ENCRYPTED and secret is False:
            problems.add(r.at("password"), plain_text_problem("a password", r.at("password")))
            password = None
        if not isinstance(registry, str):
            continue
        host = registry.lower()
        if host in seen:
            problems.add(r.at("registry"), f"{registry!r} is given twice (also at [{seen[host]}]); keep one sign-in")
            continue
        seen[host] = i
        if host not in registries:
            used = ", ".join(sorted(registries)) or "none: every chart is a local file or the default"
            problems.add(
                r.at("registry"),
                f"{registry!r} is the registry of no chart this stack installs, so the sign-in would go unused; "
                f"the charts come from: {used}",
            )
            continue
        if isinstance(username, str) and isinstance(password, str):
            logins.append(RegistryLogin(host, username, password))
    return tuple(logins)
