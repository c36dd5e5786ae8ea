"""How the stack marks what it creates in Azure, so that the next preview's preflight finds its
own node pools (and counts their nodes once)."""

import pulumi

STACK_TAG = "kueue-aks-stack"


def stack_tag() -> str:
    """The tag's value: this program's project and stack."""
    return f"{pulumi.get_project()}/{pulumi.get_stack()}"
