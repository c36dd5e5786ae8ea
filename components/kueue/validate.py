"""Check Kueue objects (plain dicts) against the pinned Kueue version before anything is applied.

The checks run in the order the API server and Kueue apply them (rule ids: docs/design-notes.md#kueue-rule-ids):

1. ``schema`` (needs CRDs): the CRD's OpenAPI ``openAPIV3Schema`` for the object's apiVersion,
   checked with jsonschema after dropping the ``x-kubernetes-*`` markers, bounding
   ``format: int32/int64``, and rejecting unknown fields (the API server would prune them
   silently, so a misspelt field is a bug); plus ``x-kubernetes-list-type`` map/set uniqueness
   (CQ4, CQ5, CQ30) and "is this apiVersion/kind served".
2. CEL (needs CRDs): every ``x-kubernetes-validations`` rule of the CRD, evaluated generically with
   cel-python on the object after the schema's defaults are applied (the API server defaults
   before it validates). Each rule gets its id from ``_CEL_RULE_IDS`` (``"CEL"`` for a
   rule the table does not know). Transition rules (those using ``oldSelf``: LQ2, RF11, TP5)
   only run on updates and are skipped, since these objects are validated as creates.
3. Webhook rules, re-implemented here because only a running Kueue enforces them (kueue v0.19.2
   source: pkg/webhooks/): CQ7-CQ13, CQ15-CQ18, CQ22, CQ24, CQ26, CQ28, CQ31, CQ33, CO3, CO4, CO6,
   RF2, RF5, RF8; plus LQ4, which nothing upstream checks, object names (``NAME``) and labels
   (``LABEL``). CQ16, CQ24 and CQ26 are enforced by both CEL and the webhook upstream; here the
   webhook version reports them (with the exact field path) and the CEL twin is not repeated.
4. Cross-object checks no CRD can do: ``DUPLICATE`` (kind, namespace, name), ``REF-flavor``,
   ``REF-topology``, ``REF-clusterqueue``, ``REF-namespace``, ``TAS-mixed`` (a ClusterQueue whose
   flavors are partly topology-aware), ``LQ5`` (the ClusterQueue's
   namespaceSelector must select the LocalQueue's namespace), and with ``capacity`` given
   ``CAPACITY`` / ``CAPACITY-missing``.

Without CRDs (``crds=None``) steps 1 and 2 are skipped: the rules only CEL enforces (CQ6, CO2,
RF4, RF7, RF10, TP3, TP4) and the OpenAPI schema are then not checked. Steps 3 and 4 always run.

The CRDs come from the Kueue chart the program installs (components/kueue/crds.py, which hands its
CRD documents to ``crds_from_documents``), or from the directory in ``KUEUE_CRDS_DIR``
(``load_crds``): the ``*.yaml`` files there are read and every ``CustomResourceDefinition`` of group
kueue.x-k8s.io in them is used, so either the files of ``config/components/crd/bases`` at the Kueue
release tag or the release's ``manifests.yaml`` work.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..k8s import documents
from ..k8s.crd_schema import CrdError, CrdSchemas, compile_crds, schema_findings
from .findings import KUEUE_GROUP, Capacity, KueueValidationError, Violation
from .references import ObjectIndex, capacity_violations, describe, reference_violations
from .webhooks import KIND_FINDINGS, metadata_findings

CRDS_ENV = "KUEUE_CRDS_DIR"


# The rule ids (docs/design-notes.md#kueue-rule-ids) of the CRDs' CEL rules: (kind, schema path, words in
# the message, id); first match wins. A rule of another Kueue version that matches nothing is reported as "CEL".
_CEL_RULE_IDS: tuple[tuple[str, str, str, str], ...] = (
    ("ClusterQueue", "spec", "borrowingLimit must be nil", "CQ16"),
    ("ClusterQueue", "spec.resourceGroups[*]", "same number of resources", "CQ6"),
    ("ClusterQueue", "spec.preemption", "reclaimWithinCohort=Never", "CQ24"),
    ("ClusterQueue", "spec.flavorFungibility", "preference can only be set", "CQ26"),
    ("Cohort", "spec.resourceGroups[*]", "same number of resources", "CO2"),
    ("LocalQueue", "spec.clusterQueue", "immutable", "LQ2"),
    ("ResourceFlavor", "spec.nodeTaints", "taint effect", "RF4"),
    ("ResourceFlavor", "spec.tolerations", "", "RF7"),  # all five toleration rules are RF7
    ("ResourceFlavor", "spec", "nodeLabel is required", "RF10"),
    ("ResourceFlavor", "spec", "immutable", "RF11"),
    ("Topology", "spec.levels", "immutable", "TP5"),
    ("Topology", "spec.levels", "unique", "TP3"),
    ("Topology", "spec.levels", "kubernetes.io/hostname", "TP4"),
)


# Rules Kueue enforces twice, in the CRD's CEL and in its webhook (kubernetes-sigs/kueue pkg/webhooks@v0.19.2).
_WEBHOOK_TWINS = frozenset({"CQ16", "CQ24", "CQ26"})


def _cel_rule_id(kind: str, path: str, message: str) -> str:
    for rule_kind, rule_path, words, rule_id in _CEL_RULE_IDS:
        if (rule_kind, rule_path) == (kind, path) and words in message:
            return rule_id
    return "CEL"


def load_crds(crds_dir: str | os.PathLike[str]) -> CrdSchemas:
    """Read every Kueue CRD in ``crds_dir`` (``*.yaml``); loaded once per directory."""
    path = Path(crds_dir).expanduser().resolve()
    if not path.is_dir():
        raise CrdError(
            f"Kueue CRD directory {str(crds_dir)!r} does not exist; put the CRDs of your Kueue "
            f"version there (config/components/crd/bases at the release tag) and set {CRDS_ENV}"
        )
    return _load_crds(str(path))


@functools.cache
def _load_crds(path: str) -> CrdSchemas:
    docs: list[object] = []
    for file in sorted(Path(path).glob("*.yaml")):
        with file.open(encoding="utf-8") as stream:
            docs.extend(documents.load_all(stream))
    return crds_from_documents(docs, source=path, where=f"{path}/*.yaml")


def crds_from_documents(
    docs: Iterable[object], *, source: str, where: str | None = None, grammar_cache: Path | None = None
) -> CrdSchemas:
    """The Kueue CRDs among ``docs`` (parsed YAML documents; anything else is ignored), compiled.

    ``source`` names where they came from (a directory, or a chart and its version);
    ``grammar_cache`` is where the CEL parser's tables may be kept (crd_schema.cel_environment)."""
    versions = compile_crds(docs, group=KUEUE_GROUP, rule_id=_cel_rule_id, grammar_cache=grammar_cache)
    if not versions:
        raise CrdError(f"no CustomResourceDefinition of group {KUEUE_GROUP} in {where or source}")
    return CrdSchemas(source=source, versions=versions)


def crds_from_env(*, required: bool) -> CrdSchemas | None:
    """The CRDs in ``$KUEUE_CRDS_DIR``; when it is unset, an error if ``required``, else None."""
    value = os.environ.get(CRDS_ENV, "").strip()
    if not value:
        if required:
            raise CrdError(
                f"{CRDS_ENV} is not set: point it at a directory holding the Kueue CRDs of the "
                "pinned version (config/components/crd/bases at the Kueue release tag)"
            )
        return None
    return load_crds(value)


def _plain(value: Any) -> Any:
    """A private copy with Mappings as dicts and tuples as lists, as YAML/JSON would carry them."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _is_supported(obj: Mapping[str, Any]) -> bool:
    api_version = str(obj.get("apiVersion", ""))
    if obj.get("kind") == "Namespace":
        return api_version == "v1"
    return api_version.split("/")[0] == KUEUE_GROUP


def validate_objects(
    objects: Iterable[Mapping[str, Any]],
    *,
    crds: CrdSchemas | None = None,
    capacity: Capacity | None = None,
) -> list[Violation]:
    """Every violation in ``objects`` (Kueue objects of any served apiVersion and v1 Namespaces).

    ``crds`` None skips the OpenAPI-schema and CEL steps (see the module docstring for the rules
    that then go unchecked). ``capacity`` maps flavor -> resource -> quantity: the nominalQuota
    of all ClusterQueues and Cohorts per flavor and resource must fit in it, and a quota for a
    flavor or resource it lacks is reported.
    """
    violations: list[Violation] = []
    index = ObjectIndex()
    for position, raw in enumerate(objects):
        if not isinstance(raw, Mapping):
            violations.append(Violation(f"<object #{position}>", "KIND", "is not a mapping"))
            continue
        obj = _plain(raw)
        label = describe(obj)
        if not _is_supported(obj):
            violations.append(
                Violation(
                    label,
                    "KIND",
                    f"apiVersion {obj.get('apiVersion')!r} kind {obj.get('kind')!r} is neither a "
                    f"{KUEUE_GROUP} object nor a v1 Namespace",
                )
            )
            continue
        if not index.add(obj):
            violations.append(
                Violation(label, "DUPLICATE", "appears more than once; kind, namespace and name must be unique")
            )
        problems = list(metadata_findings(obj))
        kind_problems = KIND_FINDINGS.get(str(obj.get("kind")))
        if kind_problems is not None:
            problems += kind_problems(obj)
        if crds is not None and obj.get("kind") != "Namespace":
            # A rule both CEL and the webhook enforce is reported once, by the webhook step.
            problems += schema_findings(crds, obj, _WEBHOOK_TWINS & {rule for rule, _ in problems})
        violations.extend(Violation(label, rule, message) for rule, message in problems)
    violations.extend(reference_violations(index))
    if capacity is not None:
        violations.extend(capacity_violations(index, capacity))
    return violations


def check_objects(
    objects: Iterable[Mapping[str, Any]],
    *,
    crds: CrdSchemas | None = None,
    capacity: Capacity | None = None,
) -> None:
    """Raise KueueValidationError listing every violation, if there is any."""
    violations = validate_objects(objects, crds=crds, capacity=capacity)
    if violations:
        raise KueueValidationError(violations)
