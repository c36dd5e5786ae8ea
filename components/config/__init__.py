"""The stack-config contract: the `kueue-aks:*` keys parsed into frozen dataclasses, every rule
checked before any resource is registered (components.config.parse.parse_config). A module per
section holds its dataclass, defaults and parser side by side; names, checks, stack and rules are
what the sections share. It imports only the facts and the Kubernetes helpers below it."""
