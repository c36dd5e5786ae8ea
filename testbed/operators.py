"""The job operators of a stack on the local control plane, installed as the program installs them.

`install_operators` does inside the cluster what components/operators/component.py registers, from
the same `Install` data (components/operators/installs.py): each operator's namespace and CRDs (a
release of the chart the program writes, components/operators/crd_chart.py),
then its chart with the program's values (CRDs skipped, as the program's release skips them) or
its manifest objects, then its real controller as a local process (operator_controllers.py);
Trainer's runtime once Trainer's webhook serves; the RayService guard.

Charts: no registry is reachable here, so a chart comes from the operator's own pinned module,
the same module the program reads its CRDs from (JobSet's `charts/jobset`, Trainer's
`charts/kubeflow-trainer`). The published charts are packaged from those folders (kubernetes-sigs/jobset
hack/helm-chart-package.sh@v0.12.0);
the difference is the image, which nothing pulls on kwok. Trainer's chart declares the JobSet and
LWS charts as dependencies, which Helm requires present even when disabled: JobSet's own chart
and an empty chart named lws stand in for them, and both stay disabled (`jobset.install: false`,
no data cache). KubeRay's chart is in no module (it lives in ray-project/kuberay-helm), so the
tier installs KubeRay's CRDs and runs its controller, and the chart's values are checked only
under mocks; KubeRay's chart has no webhooks, so nothing the controller serves is missing.
"""

from __future__ import annotations

import io
import shutil
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.k8s.charts import ChartRef
from components.operators.crd_chart import crd_chart, write_chart
from components.operators.installs import Install, installs, trainer_runtimes
from components.facts.operators import Module
from components.operators.sources import module_zip
from components.operators.policies import rayservice_guard

from .binaries import OPERATOR_BUILDS
from .cluster import E2EError, Helm, Kubectl, is_true, wait_for
from .forward import Forwarder
from .operator_controllers import OperatorController

# The program's catalog keys → the controller runner's (and its build's) names.
CONTROLLERS = {build.key: name for name, build in OPERATOR_BUILDS.items()}
HELM_WAIT_SECONDS = 180


def module_folder(module: Module, folder: str, into: Path) -> Path:
    """One chart folder of the module's zip (checked against its pinned checksum, components/
    operators/sources.py), written under `into` as `into/<folder's last name>`."""
    prefix = f"{module}/{folder}/"
    target = into / Path(folder).name
    shutil.rmtree(target, ignore_errors=True)
    with zipfile.ZipFile(io.BytesIO(module_zip(module))) as zf:
        for name in zf.namelist():
            if name.startswith(prefix) and not name.endswith("/"):
                path = target / name[len(prefix) :]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(zf.read(name))
    if not (target / "Chart.yaml").is_file():
        raise E2EError(f"{module} has no chart at {folder}/")
    return target


def local_chart(install: Install, jobset: Install | None, workdir: Path) -> ChartRef | None:
    """The chart folder the tier installs for `install`, or None where no module has it (KubeRay)."""
    key, module = install.operator.key, install.pin.module
    charts = workdir / "charts"
    if key == "jobset":
        return ChartRef(str(module_folder(module, "charts/jobset", charts)), install.pin.version)
    if key == "trainer":
        chart = module_folder(module, "charts/kubeflow-trainer", charts)
        deps = chart / "charts"
        deps.mkdir(exist_ok=True)
        if jobset is None:
            raise E2EError("Trainer's chart needs JobSet's chart as its (disabled) dependency")
        module_folder(jobset.pin.module, "charts/jobset", deps)
        declared = {d["name"]: d for d in yaml.safe_load((chart / "Chart.yaml").read_text())["dependencies"]}
        (deps / "lws").mkdir(exist_ok=True)
        (deps / "lws" / "Chart.yaml").write_text(
            yaml.safe_dump(
                {"apiVersion": "v2", "name": "lws", "version": declared["lws"]["version"], "type": "application"}
            )
        )
        return ChartRef(str(chart), install.pin.version)
    return None


@dataclass
class Operators:
    kubectl: Kubectl
    helm: Helm
    workdir: Path
    forwarder: Forwarder
    binaries: dict[str, Path]
    installs: list[Install] = field(default_factory=list)
    controllers: dict[str, OperatorController] = field(default_factory=dict)
    released: set[str] = field(default_factory=set)  # the operators installed by a local chart
    timings: dict[str, float] = field(default_factory=dict)

    def install_crds(self, config: Any) -> None:
        """Every operator's namespace and CRDs, each operator's a release of the chart the program
        writes (components/operators/crd_chart.py), awaited as the program's release is (Helm waits
        until they are Established; the MPI Operator exits otherwise): before Kueue starts, side by
        side, as the program's releases need only their namespaces (components/operators/component.py)."""
        self.installs = installs(config)
        self.kubectl.apply(
            [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": i.namespace}} for i in self.installs]
        )

        def release(install: Install) -> None:
            chart = crd_chart(install.operator.key, install.pin.version, install.crds)
            folder = write_chart(chart, self.workdir / "crd-charts")
            self.helm.install(
                chart.name,
                ChartRef(str(folder), chart.version),
                namespace=install.namespace,
                values={},
                workdir=self.workdir,
                wait_seconds=HELM_WAIT_SECONDS,
            )

        with ThreadPoolExecutor(max_workers=len(self.installs) or 1) as pool:
            list(pool.map(release, self.installs))  # the first failure is raised, with helm's message
        names = [c["metadata"]["name"] for install in self.installs for c in install.crds]
        wait_for("the operators' CRDs to be Established", lambda: self._established(names), 60)

    def install(self, config: Any, timed: Any) -> None:
        """Each operator's namespace, chart or objects and controller, after install_crds."""
        by_key = {i.operator.key: i for i in self.installs}
        for install in self.installs:  # catalog order: JobSet before Trainer, whose controller watches JobSets
            key = install.operator.key
            self.kubectl.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": install.namespace}}])
            chart = local_chart(install, by_key.get("jobset"), self.workdir) if install.chart else None
            if chart is not None:
                self.helm.install(
                    install.operator.release_name,
                    chart,
                    namespace=install.namespace,
                    values=install.values,
                    workdir=self.workdir,
                    wait_seconds=HELM_WAIT_SECONDS,
                    extra=["--skip-crds"],
                )
                self.released.add(key)
            if install.objects:
                self.kubectl.apply(install.objects)
            controller = OperatorController(
                CONTROLLERS[key],
                self.binaries[CONTROLLERS[key]],
                self.kubectl,
                self.workdir / "operators" / key,
                self.forwarder,
            )
            self.controllers[key] = controller
            controller.start()
            controller.wait_ready()
            timed(f"{key} ready")
        if "trainer" in by_key:
            self.kubectl.apply(trainer_runtimes())
        guard = rayservice_guard(config)
        if guard:
            self.kubectl.apply(guard)

    def _established(self, names: list[str]) -> tuple[bool, Any]:
        got = self.kubectl.get("crd", *names)  # only these: the Training Operator's are 0.6 MB each
        crds = got["items"] if got.get("kind") == "List" else [got]
        established = {c["metadata"]["name"] for c in crds if is_true(c, "Established")}
        return set(names) <= established, sorted(set(names) - established)

    def stop(self, key: str | None = None) -> None:
        """Stop one controller (as its pods go when its release is uninstalled), or all."""
        for name, controller in self.controllers.items():
            if key is None or name == key:
                controller.stop()

    def describe(self) -> dict[str, str]:
        return {key: c.log_tail(15) for key, c in self.controllers.items()}
