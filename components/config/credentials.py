"""Where a credential may stand in the config: only in a Pulumi secret.

A value set with `pulumi config set --secret` is encrypted in the stack file and the Pulumi state;
anything else sits in the repository in plain text. The program learns which keys were secrets from
the Pulumi runtime (`is_config_secret`), the plan from the stack file (`{secure: ...}`). Nothing here
ever quotes a credential: messages name where it is, never what it is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import yaml

from ..k8s import documents

# A kubeconfig user's fields that hold a credential itself (not a path to one, not a command that
# fetches one): client-go's clientcmd/api/v1 AuthInfo, and the auth-provider configs' tokens.
_USER_CREDENTIALS = ("token", "password", "client-key-data")
_AUTH_PROVIDER_CREDENTIALS = ("access-token", "refresh-token", "id-token", "client-secret")
# An exec plugin's flags and environment names that carry one (kubelogin's --client-secret, say).
_EXEC_FLAGS = ("--client-secret", "--password", "--token", "--client-certificate-password")
_SECRET_WORDS = ("SECRET", "PASSWORD", "TOKEN")


def kubeconfig_document(text: str) -> Any:
    """The kubeconfig's YAML, or None when it is not YAML or uses anchors or aliases (so a few
    lines of nested aliases cannot expand into gigabytes: no kubeconfig needs them)."""
    try:
        for event in yaml.parse(text, Loader=documents.LOADER):
            if isinstance(event, yaml.AliasEvent):
                return None
        return documents.load(text)
    except (yaml.YAMLError, UnicodeError):  # a lone surrogate cannot be UTF-8 for the C reader
        return None


def kubeconfig_credentials(doc: Any) -> list[str]:
    """Where a kubeconfig document holds a credential in plain text, e.g. `users[0].user.token`;
    empty for one whose users sign in by exec (kubelogin) or read files."""
    found: list[str] = []
    users = doc.get("users") if isinstance(doc, Mapping) else None
    for i, entry in enumerate(users if isinstance(users, list) else []):
        user = entry.get("user") if isinstance(entry, Mapping) else None
        if not isinstance(user, Mapping):
            continue
        at = f"users[{i}].user"
        found += [f"{at}.{field}" for field in _USER_CREDENTIALS if user.get(field)]
        provider = user.get("auth-provider")
        config = provider.get("config") if isinstance(provider, Mapping) else None
        if isinstance(config, Mapping):
            found += [f"{at}.auth-provider.config.{k}" for k in _AUTH_PROVIDER_CREDENTIALS if config.get(k)]
        found += _exec_credentials(user.get("exec"), f"{at}.exec")
    return found


def _exec_credentials(exec_: Any, at: str) -> list[str]:
    if not isinstance(exec_, Mapping):
        return []
    found: list[str] = []
    args = exec_.get("args")
    for j, arg in enumerate(args if isinstance(args, list) else []):
        if isinstance(arg, str) and arg.split("=", 1)[0] in _EXEC_FLAGS:
            found.append(f"{at}.args[{j}]")
    env = exec_.get("env")
    for j, var in enumerate(env if isinstance(env, list) else []):
        name = var.get("name") if isinstance(var, Mapping) else None
        if isinstance(name, str) and var.get("value") and any(w in name.upper() for w in _SECRET_WORDS):
            found.append(f"{at}.env[{j}] ({name})")
    return found


def was_secret(section: str, secret_keys: Collection[str] | None) -> bool | None:
    """Whether the program was handed `section` (a full key, e.g. `kueue-aks:cluster`) as a Pulumi
    secret; None when the caller does not know (a library caller that passes no secret keys)."""
    return None if secret_keys is None else section in secret_keys


def plain_text_problem(what: str, key: str, value: str = "<value>") -> str:
    """The refusal of a credential given in plain text at `key` (a full key path)."""
    return (
        f"holds {what} in plain text, which would sit in the repository and the Pulumi state; set it as a "
        f"secret: pulumi config set --secret --path '{key}' {value}"
    )
