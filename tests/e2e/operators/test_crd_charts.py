"""Every operator's CRD chart (components/operators/crd_chart.py) as Helm reads it: the tier's helm
renders each chart the dev stack writes, and what it prints is each CRD exactly as the pinned
module ships it: the template prints the files verbatim (a `{{` in a description stays text), and
Helm takes the chart's version with its digest. No cluster: `helm template`."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import yaml

from components.k8s import documents
from components.operators.crd_chart import crd_chart, write_chart
from components.operators.installs import installs
from components.plan import load_stack
from testbed.binaries import Binaries
from testbed.harness import ROOT


def test_every_operators_crd_chart_renders_its_crds_as_the_module_ships_them(
    binaries: Binaries, tmp_path: Path
) -> None:
    done = installs(load_stack("dev", ROOT))
    assert len(done) == 5, [i.operator.key for i in done]
    env = {f"HELM_{d}_HOME": str(tmp_path / "helm" / d.lower()) for d in ("CACHE", "CONFIG", "DATA")}
    for install in done:
        chart = crd_chart(install.operator.key, install.pin.version, install.crds)
        folder = write_chart(chart, tmp_path / "charts")
        shown = subprocess.run(
            [str(binaries.helm), "show", "chart", str(folder)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert yaml.safe_load(shown.stdout)["version"] == chart.version
        rendered = subprocess.run(
            [str(binaries.helm), "template", chart.name, str(folder), f"--namespace={install.namespace}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        docs = [d for d in documents.load_all(rendered.stdout) if d]
        print(install.operator.key, chart.version, [d["metadata"]["name"] for d in docs])
        assert docs == sorted(install.crds, key=lambda c: c["metadata"]["name"])
    # A description with template syntax in it is printed as text, not run.
    (jobset,) = [copy.deepcopy(i.crds) for i in done if i.operator.key == "jobset"]
    jobset[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "{{ .Release.Name }} {{ fail }}"
    chart = crd_chart("jobset", "0.0.0", jobset)
    rendered = subprocess.run(
        [str(binaries.helm), "template", chart.name, str(write_chart(chart, tmp_path / "charts"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert [d for d in documents.load_all(rendered.stdout) if d] == jobset
