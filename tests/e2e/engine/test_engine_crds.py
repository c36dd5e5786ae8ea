"""An operator's CRDs through the real Pulumi engine: a Helm release of the chart the program
writes (components/operators/crd_chart.py). After `up` the API server serves each CRD exactly as
the pinned module ships it (what the validator checked the stack's objects against), Helm owns
it, Kueue started after it, no CRD body is in the stack's state, a second preview changes
nothing, and `destroy` removes it after the release. A stack brought up by the earlier layout
(each CRD a resource of its own) is handed over by `python -m components.operators.migrate`
without the CRD, or a JobSet in it, ever being deleted.

JobSet stands for the operators (one CRD, a chart from the tier's mirror). test_manifests.py
applies every operator's CRDs the plan writes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from components.config.parse import parse_config, raw_from_stack_file
from components.operators.crd_chart import MANAGED_BY, RELEASE_NAME_ANNOTATION, release_name
from components.operators.installs import Install, installs
from testbed.cluster import wait_for
from testbed.control_planes import on_stacks
from testbed.engine import PulumiProject, assert_nothing_left
from testbed.harness import ROOT
from testbed.measurements import report
from testbed.stack_cluster import StackCluster
from testbed.stacks import ENGINE, engine_jobs_config


STACK = "engine-crds"
FRAMEWORKS = ["batch/job", "jobset.x-k8s.io/jobset"]
CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
# The earlier layout's program, as far as the CRDs go: JobOperators with each CRD a child resource
# of its own, named as it named them, on the stack's own kubeconfig provider.
EARLIER_LAYOUT = """
import pulumi
from components.cluster.component import KubeconfigCluster
from components.config.parse import load_stack_config
from components.k8s.manifest import ObjectResource
from components.operators.installs import installs

config = load_stack_config()
cluster = KubeconfigCluster("kueue", config)


class JobOperators(pulumi.ComponentResource):
    def __init__(self) -> None:
        super().__init__("kueue-aks:operators:JobOperators", "operators", None,
                         pulumi.ResourceOptions(providers={"kubernetes": cluster.provider}))
        for install in installs(config):
            for crd in install.crds:
                ObjectResource(f"operators-{install.operator.key}-customresourcedefinition-{crd['metadata']['name']}",
                               crd, opts=pulumi.ResourceOptions(parent=self))


JobOperators()
"""


def crd_config() -> dict[str, Any]:
    config = engine_jobs_config()
    config["kueue-aks:kueue"] = {**config["kueue-aks:kueue"], "frameworks": FRAMEWORKS}
    return config


def jobset_install() -> Install:
    # Parsed as the program parses it once the kubeconfig (a secret, set on the stack) is there.
    raw, location = raw_from_stack_file(
        {"config": {**crd_config(), "kueue-aks:cluster": {"kubeconfig": {"secure": "x"}}}}
    )
    (jobset,) = installs(parse_config(raw, stack=STACK, location=location))
    return jobset


def timed_up(stack: PulumiProject, what: str) -> None:
    started = time.monotonic()
    stack.up()
    report(f"e2e[{ENGINE}]: `pulumi up` of {what} took {time.monotonic() - started:.0f} s")


def assert_served_by_its_release(clean: StackCluster, stack: PulumiProject, install: Install) -> dict[str, Any]:
    """The CRD as the module ships it, Established, Helm's, the release deployed and Kueue after it."""
    (crd,) = install.crds
    served = clean.kubectl.get("crd", crd["metadata"]["name"])
    established = {c["type"]: c["status"] for c in served["status"]["conditions"]}
    meta = served["metadata"]
    print(
        crd["metadata"]["name"],
        established,
        meta.get("labels"),
        meta.get("annotations", {}).get(RELEASE_NAME_ANNOTATION),
    )
    assert established.get("Established") == "True", established
    # The API server keeps the schema as sent: the pinned module's, which the validator read.
    assert served["spec"]["versions"] == crd["spec"]["versions"]
    assert served["spec"]["names"] == {**served["spec"]["names"], **crd["spec"]["names"]}
    name = release_name(install.operator.key)
    assert (meta.get("labels") or {}).get(MANAGED_BY[0]) == MANAGED_BY[1]
    assert (meta.get("annotations") or {}).get(RELEASE_NAME_ANNOTATION) == name
    secrets = clean.kubectl.items("secrets", "-n", install.namespace, "-l", f"owner=helm,name={name}")
    assert "deployed" in {s["metadata"]["labels"]["status"] for s in secrets}, secrets
    resources = stack.resources()
    assert not [r["urn"] for r in resources if r["type"] == CRD_TYPE and not r.get("external")], (
        "no CRD body is a resource of the stack's any more"
    )
    (crd_release,) = [r for r in resources if r["urn"].endswith(f"::operators-{install.operator.key}-crds-release")]
    kueue = next(r for r in resources if r["urn"].endswith("::kueue-release"))
    assert crd_release["urn"] in kueue.get("dependencies", []), "Kueue starts after the job kinds it manages are served"
    return served


def assert_gone_after_destroy(clean: StackCluster, stack: PulumiProject, name: str) -> None:
    assert_nothing_left(clean, stack)  # its destroy
    wait_for(
        f"CRD {name} to be gone", lambda: (clean.kubectl.run("get", "crd", name, check=False).returncode != 0, name), 60
    )


@on_stacks(ENGINE)
def test_engine_crds_an_operators_crd_is_served_by_its_release_after_up_and_gone_after_destroy(
    clean: StackCluster, project: PulumiProject
) -> None:
    stack = project.another_stack(STACK, crd_config(), clean.cluster.kubeconfig.read_text())
    install = jobset_install()
    timed_up(stack, "a stack with JobSet's CRD release and release")
    assert_served_by_its_release(clean, stack, install)
    # The chart's folder is the same relative path on every run, and its version names its bytes.
    assert stack.preview() == []
    assert_gone_after_destroy(clean, stack, install.crds[0]["metadata"]["name"])
    stack.run("stack", "rm", "--yes", STACK, check=False)


@on_stacks(ENGINE)
def test_engine_crds_a_stack_of_the_earlier_layout_is_handed_over_without_deleting_its_crd(
    clean: StackCluster, project: PulumiProject
) -> None:
    stack = project.another_stack(STACK, crd_config(), clean.cluster.kubeconfig.read_text())
    install = jobset_install()
    name = install.crds[0]["metadata"]["name"]
    program = stack.project / "__main__.py"
    current = program.read_text()
    program.write_text(EARLIER_LAYOUT)
    try:
        timed_up(stack, "the earlier layout's JobSet CRD")
    finally:
        program.write_text(current)
    before = clean.kubectl.get("crd", name)
    # A job of the kind, in a namespace the stack does not own: it lives exactly as long as the CRD.
    clean.kubectl.apply(
        [
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": "kept", "namespace": "default"},
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "w",
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "restartPolicy": "Never",
                                            "containers": [{"name": "c", "image": "busybox"}],
                                        }
                                    }
                                }
                            },
                        }
                    ]
                },
            }
        ]
    )

    env = {**stack.env, "PATH": os.pathsep.join([str(clean.kubectl.binary.parent), stack.env["PATH"]])}
    migrate = [
        sys.executable,
        "-m",
        "components.operators.migrate",
        "--stack",
        STACK,
        "--cwd",
        str(stack.project),
        "--kubeconfig",
        str(clean.cluster.kubeconfig),
    ]
    shown = subprocess.run(migrate, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    print(shown.stdout, shown.stderr)
    assert shown.returncode == 0 and f"{name}: {install.namespace}/{release_name('jobset')}" in shown.stdout
    ran = subprocess.run(
        [*migrate, "--run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    print(ran.stdout, ran.stderr)
    assert ran.returncode == 0, ran.stderr
    # What `up` would do now: install the releases, delete nothing (without the hand-over it deleted the CRD).
    deletes = [s["urn"] for s in stack.preview() if s.get("op") in ("delete", "replace", "delete-replaced")]
    assert not deletes, deletes

    timed_up(stack, "the same stack after the hand-over")
    served = assert_served_by_its_release(clean, stack, install)
    assert served["metadata"]["uid"] == before["metadata"]["uid"], "the CRD was made again, so it was deleted"
    assert clean.kubectl.get("jobset", "kept", "-n", "default")["metadata"]["name"] == "kept"
    again = subprocess.run(
        [*migrate, "--run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert again.returncode == 0 and "nothing to hand over" in again.stdout, again.stdout + again.stderr
    assert_gone_after_destroy(clean, stack, name)
    stack.run("stack", "rm", "--yes", STACK, check=False)
