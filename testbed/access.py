"""A team member's refusals on the control plane, as the API server's RBAC words them."""

from __future__ import annotations

from .cluster import Kubectl

# The API server's RBAC refusal, as kubectl prints it after `Error from server (Forbidden): `.
FORBIDDEN = 'User "{user}" cannot {verb} resource "{resource}" {where}'


def forbidden(user: str, verb: str, resource: str, where: str) -> str:
    return FORBIDDEN.format(user=user, verb=verb, resource=resource, where=where)


def refused(kubectl: Kubectl, *args: str, input: str | None = None) -> str:
    done = kubectl.run(*args, input=input, check=False)
    assert done.returncode != 0, f"kubectl {' '.join(args)} was allowed:\n{done.stdout}"
    assert "forbidden" in done.stderr.lower(), done.stderr
    return done.stderr
