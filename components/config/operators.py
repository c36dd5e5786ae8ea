"""`kueue-aks:operators`: how each job operator the frameworks need is installed (by the stack,
or already on the cluster) and from where.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from ..facts import operators as operator_catalog
from ..k8s.charts import chart_source_problem, image_repository_problem
from .checks import PROJECT_ROOT, Problems, Reader, checked
from .keys import OPERATORS
from .kueue import KueueSettings


@dataclass(frozen=True)
class OperatorSettings:
    """An operator the enabled frameworks need (components/facts/operators.py)."""

    key: str  # kuberay | jobset | trainer | mpiOperator | trainingOperator | leaderWorkerSet | ...
    install: str = "managed"  # managed: the stack installs it | external: the cluster already has it
    chart: str | None = None  # a mirror of the operator's chart (Helm operators only)
    image_repository: str | None = None  # a mirror of the controller image; tag = the pinned version


def parse_operators(problems: Problems, raw: Any, kueue: KueueSettings) -> tuple[OperatorSettings, ...]:
    """`kueue-aks:operators`: one entry per operator, all optional. The frameworks decide which
    operators are needed; an entry may only say how (managed or external) and from where."""
    path = OPERATORS.name
    catalog = operator_catalog.OPERATORS
    r = Reader(problems, path, raw, OPERATORS)
    needed = {o.key: o for o in operator_catalog.needed_operators(kueue.frameworks)}
    out: list[OperatorSettings] = []
    for key, operator in catalog.items():
        op = f"{path}.{key}"
        if key in r.value and r.value[key] is None:
            problems.add(op, "is empty; allowed: an object with keys " + ", ".join(OPERATORS.key(key).names))
        entry = Reader(problems, op, r.value.get(key), OPERATORS.key(key))
        if key not in needed:
            if key in r.value:
                problems.add(
                    op,
                    f"has no effect: none of its frameworks ({', '.join(operator.frameworks)}) is in "
                    "kueue-aks:kueue.frameworks; enable one there or remove this key",
                )
            continue
        default = "managed" if operator.managed else None
        install = entry.get("install", default)
        if install is None:
            problems.add(
                entry.at("install"),
                f"is required: the stack does not install the {operator.title} controller "
                f"that {', '.join(f for f in operator.frameworks if f in kueue.frameworks)} needs; install it "
                "yourself and set install: external, or remove the framework from kueue-aks:kueue.frameworks",
            )
            continue
        if install == "managed" and not operator.managed:
            problems.add(
                entry.at("install"),
                f"managed is not possible: the stack does not ship the {operator.title} "
                "controller; install it yourself and set install: external",
            )
            continue
        if install == "external":
            for extra in ("chart", "imageRepository"):
                if extra in entry.value:
                    problems.add(
                        entry.at(extra), "has no effect with install: external (the stack installs nothing); remove it"
                    )
            out.append(OperatorSettings(key=key, install=install))
            continue
        version = operator_catalog.OPERATOR_PINS.get(kueue.version, {}).get(key)
        if version is None:  # install is managed here: external returned above
            problems.add(
                entry.at("install"),
                f"the stack has no pinned {operator.title} version for Kueue {kueue.version} "
                "(components/facts/operators.py OPERATOR_PINS); set install: external",
            )
            continue
        chart = (
            entry.get(
                "chart",
                None,
                checked(problems, partial(chart_source_problem, version=version.version, root=PROJECT_ROOT)),
            )
            if operator.chart
            else None
        )
        image = entry.get("imageRepository", None, checked(problems, image_repository_problem))
        out.append(OperatorSettings(key=key, install=install, chart=chart, image_repository=image))
    return tuple(out)
