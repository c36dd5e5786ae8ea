"""An operator's CRDs as the stack's own resources, through the real Pulumi engine: after `up` the
API server serves the CRD exactly as the pinned module ships it (what the validator checked the
stack's objects against), Kueue started after it, and `destroy` removes it after the release.

JobSet stands for the operators (one CRD, a chart from the tier's mirror): this control plane runs
no operator controller, and JobSet's chart needs none to install (kwok reports its pod Ready).
test_manifests.py applies every operator's CRDs the plan writes.
"""

from __future__ import annotations

import time
from typing import Any

from components.config import parse_config, raw_from_stack_file
from components.operators.installs import installs

from .cluster import wait_for
from .conftest import on_stacks, report
from .engine import PulumiProject, assert_nothing_left
from .stack_cluster import StackCluster
from .stacks import ENGINE, engine_jobs_config

STACK = "engine-crds"
FRAMEWORKS = ["batch/job", "jobset.x-k8s.io/jobset"]


def crd_config() -> dict[str, Any]:
    config = engine_jobs_config()
    config["kueue-aks:kueue"] = {**config["kueue-aks:kueue"], "frameworks": FRAMEWORKS}
    return config


@on_stacks(ENGINE)
def test_engine_crds_an_operators_crd_is_served_after_up_and_gone_after_destroy(clean: StackCluster,
                                                                               project: PulumiProject) -> None:
    stack = project.another_stack(STACK, crd_config(), clean.cluster.kubeconfig.read_text())
    # Parsed as the program parses it once the kubeconfig (a secret, set on the stack) is there.
    raw, location = raw_from_stack_file({"config": {**crd_config(), "kueue-aks:cluster": {"kubeconfig": {"secure": "x"}}}})
    (jobset,) = installs(parse_config(raw, stack=STACK, location=location))
    (crd,) = jobset.crds
    name = crd["metadata"]["name"]
    started = time.monotonic()
    stack.up()
    report(f"e2e[{ENGINE}]: `pulumi up` of a stack with JobSet's CRD and release took {time.monotonic() - started:.0f} s")

    served = clean.kubectl.get("crd", name)
    established = {c["type"]: c["status"] for c in served["status"]["conditions"]}
    print(name, established)
    assert established.get("Established") == "True", established
    # The API server keeps the schema as sent: the pinned module's, which the validator read.
    assert served["spec"]["versions"] == crd["spec"]["versions"]
    assert served["spec"]["names"] == {**served["spec"]["names"], **crd["spec"]["names"]}
    urns = stack.created()
    (crd_urn,) = [u for u in urns if u.endswith(f"::operators-jobset-customresourcedefinition-{name}")]
    kueue = next(r for r in stack.resources() if r["urn"].endswith("::kueue-release"))
    assert crd_urn in kueue.get("dependencies", []), "Kueue starts after the job kinds it manages are served"

    assert_nothing_left(clean, stack)  # its destroy
    wait_for(f"CRD {name} to be gone",
             lambda: (clean.kubectl.run("get", "crd", name, check=False).returncode != 0, name), 60)
    stack.run("stack", "rm", "--yes", STACK, check=False)
