"""One Pulumi resource for any Kubernetes object given as a plain dict (a builder's or an upstream
manifest's), sent exactly as it is; and a ValidatingAdmissionPolicy with its binding from the plain
dicts of k8s/admission.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes.apiextensions import CustomResource
from pulumi_kubernetes.apiextensions.CustomResource import CustomResourceArgs


def type_token(api_version: str, kind: str) -> str:
    """The kubernetes provider's type for an object: core kinds are `core/v1`."""
    return f"kubernetes:{api_version if '/' in api_version else 'core/' + api_version}:{kind}"


class ObjectResource(CustomResource):
    """A Kubernetes object of any kind, with every top-level field kept.

    The typed CustomResource only takes `metadata` and `spec`; other top-level fields (a
    WorkloadPriorityClass's `value`, a ClusterRole's `rules`, a webhook configuration's `webhooks`)
    are added to the same arguments. The provider treats the object by its type, so a Deployment
    is awaited as a Deployment.
    """

    def __init__(self, resource_name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None) -> None:
        self._top_level = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "spec")}
        super().__init__(
            resource_name,
            api_version=obj["apiVersion"],
            kind=obj["kind"],
            metadata=obj["metadata"],
            spec=obj.get("spec"),
            opts=opts,
        )

    def _internal_init(
        self,
        resource_name: str,
        api_version: str,
        kind: str,
        opts: pulumi.ResourceOptions | None = None,
        metadata: Any = None,
        spec: Any = None,
        __props__: Any = None,
    ) -> None:
        props = CustomResourceArgs.__new__(CustomResourceArgs)
        props.__dict__.update(api_version=api_version, kind=kind, metadata=metadata, spec=spec, **self._top_level)
        # An input-type args object, as the generated SDK passes it, not the plain Mapping the stub names.
        pulumi.CustomResource.__init__(self, type_token(api_version, kind), resource_name, props, opts)  # type: ignore[arg-type]


def admission_policy(
    parent: pulumi.Resource, name: str, policy: dict[str, Any], binding: dict[str, Any]
) -> list[pulumi.Resource]:
    """A ValidatingAdmissionPolicy and its binding (after it), children of `parent`."""
    created = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        name, metadata=policy["metadata"], spec=policy["spec"], opts=pulumi.ResourceOptions(parent=parent)
    )
    bound = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        f"{name}-binding",
        metadata=binding["metadata"],
        spec=binding["spec"],
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[created]),
    )
    return [created, bound]
