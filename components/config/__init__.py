"""The stack-config contract: the `kueue-aks:*` keys parsed into frozen dataclasses, every rule
checked and every problem reported before any resource is registered. Each section keeps its
dataclass, defaults and parser together. It reads only the facts and the Kubernetes helpers
below it."""
