"""The real Pulumi engine running the project's own program against a local control plane.

`PulumiProject` copies the program (unchanged: Pulumi.yaml, __main__.py, components/, dashboards/)
into a work folder, points its `venv` at the interpreter running the tests, and drives the CLI
built by binaries.ensure_engine with a local file backend and a passphrase secrets provider. The
stack runs in kubeconfig mode, its kubeconfig set as a secret, as a platform admin would set it.

On AKS, Kueue's pods start when its release's Deployment exists and stop when it goes. kwok runs
no containers, so `KueueFollower` does that with the real Kueue controller as a local process
(kueue_controller.py): it starts it once the release has rendered the Deployment, and stops it when
`pulumi destroy` has deleted the Deployment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Self

import yaml

from components.config.names import KUEUE_NAMESPACE
from components.kueue.objects import build_objects
from components.kueue.values import KUEUE_RELEASE_NAME
from testbed.harness import ROOT

from .binaries import Engine
from .cluster import Api, Kubectl, log_tail
from .kueue_controller import DEPLOYMENT, KueueController
from .operator_controllers import OperatorController
from .stack_cluster import StackCluster

PROGRAM_FILES = ("Pulumi.yaml", "__main__.py", "requirements.txt")
PROGRAM_DIRS = ("components", "dashboards")
PASSPHRASE = "e2e-engine-tests"  # a throwaway stack's secrets; the state stays in the test's folder
# A first `up` installs Kueue (an awaited, atomic release), its objects and the device plugin;
# measured here in about 30 s. Longer than this is a hang, and the test shows where.
UP_TIMEOUT_SECONDS = 300


class EngineError(AssertionError):
    """A pulumi command failed; the message has its output."""


class PulumiProject:
    def __init__(
        self,
        engine: Engine,
        workdir: Path,
        stack: str,
        *,
        env: Mapping[str, str] | None = None,
        rewrite: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        """`env`: more environment for the CLI (e.g. the chart mirror's CA); `rewrite`: what every
        config set on the stack goes through (e.g. the mirror's chart keys, as a private-registry
        user writes them)."""
        self.engine, self.workdir, self.stack = engine, workdir, stack
        self.extra_env, self.rewrite = dict(env or {}), rewrite
        self.project = workdir / "project"
        self.logs = workdir / "pulumi-logs"
        self.runs = 0
        path = os.pathsep.join([*map(str, engine.path), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        self.env = {
            **os.environ,
            "PATH": path,
            "PULUMI_HOME": str(workdir / "pulumi-home"),
            "PULUMI_BACKEND_URL": f"file://{workdir / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            # Every plugin is the one built here, found on PATH: never a download.
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            # The program's chart cache (components/kueue/crds.py) in the test's folder: a stack
            # reads only the charts its own run fetched or its test put there, never the user's.
            "XDG_CACHE_HOME": str(workdir / "cache"),
            # The kubernetes provider writes the stack's kubeconfig to a temporary file per run
            # (and leaves it): in the test's folder, not the machine's /tmp.
            "TMPDIR": str(workdir / "tmp"),
            **self.extra_env,
        }

    def create(self, config: Mapping[str, Any], kubeconfig: str) -> None:
        """The program's copy, a fresh file backend, the stack and its config (kubeconfig a secret)."""
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.project.mkdir(parents=True)
        (self.workdir / "state").mkdir()
        (self.workdir / "tmp").mkdir()
        self.logs.mkdir()
        # The CLI's automatic log (pulumi v3.260, pkg/logging/encrypted.go: every command, always
        # on since pulumi/pulumi#23731) gzips every resource property the engine handles; for a
        # stack with the operators' 4.2 MB of CRDs that was 3/4 of a preview here (45 s against
        # 12 s without). A file where its folder would be makes StartLogging fail, and the CLI
        # runs on without it: the log is a diagnostic the tests do not read (they keep the CLI's
        # output in pulumi-logs/), and nothing the engine does to the cluster depends on it.
        home = Path(self.env["PULUMI_HOME"])
        home.mkdir()
        (home / "logs").write_text("the CLI's automatic log is off for the e2e tier: testbed/engine.py\n")
        for name in PROGRAM_FILES:
            shutil.copy(ROOT / name, self.project / name)
        for name in PROGRAM_DIRS:
            shutil.copytree(ROOT / name, self.project / name, ignore=shutil.ignore_patterns("__pycache__"))
        # Pulumi.yaml's `virtualenv: venv`: the environment the tests run in has the requirements.
        (self.project / "venv").symlink_to(Path(sys.prefix))
        self.run("stack", "init", self.stack)
        self.set_config(config)
        self.run("config", "set", "--secret", "--path", "kueue-aks:cluster.kubeconfig", input=kubeconfig)

    def set_config(self, config: Mapping[str, Any]) -> None:
        """Replace the stack's plain config, keeping its secure values (the kubeconfig)."""
        stack_file = self.project / f"Pulumi.{self.stack}.yaml"
        current = yaml.safe_load(stack_file.read_text()) if stack_file.exists() else {}
        current = current or {}
        merged = self.rewrite(config) if self.rewrite else dict(config)
        cluster = (current.get("config") or {}).get("kueue-aks:cluster")
        if cluster:
            merged["kueue-aks:cluster"] = {**(config.get("kueue-aks:cluster") or {}), **cluster}
        stack_file.write_text(yaml.safe_dump({**current, "config": merged}, sort_keys=False))

    def _argv(self, args: tuple[str, ...]) -> tuple[list[str], Path]:
        self.runs += 1
        argv = [str(self.engine.pulumi), *args, "--non-interactive", "--cwd", str(self.project)]
        if args[0] not in ("stack", "config"):
            argv += ["--stack", self.stack]
        return argv, self.logs / f"{self.runs:02d}-{args[0]}.log"

    def start(self, *args: str) -> subprocess.Popen[str]:
        """The CLI running in the background, in a process group of its own (the language host and
        the provider plugins are its children), so a test can interrupt the whole of it as a
        closed laptop or a cancelled CI job does. Its output goes to the run's log file."""
        argv, log = self._argv(args)
        out = log.open("w")
        out.write(f"$ pulumi {' '.join(args)} (in the background)\n")
        out.flush()
        return subprocess.Popen(
            argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )

    def run(
        self, *args: str, input: str | None = None, timeout: float = 300, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv, log = self._argv(args)
        try:
            done = subprocess.run(argv, input=input, env=self.env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as err:
            out = _text(err.stdout) + "\n" + _text(err.stderr)
            log.write_text(f"$ pulumi {' '.join(args)} (killed after {timeout:.0f} s)\n{out}\n")
            raise EngineError(f"`pulumi {' '.join(args)}` did not finish in {timeout:.0f} s:\n{out[-6000:]}") from None
        log.write_text(f"$ pulumi {' '.join(args)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}\n")
        if check and done.returncode != 0:
            raise EngineError(
                f"`pulumi {' '.join(args)}` exited with {done.returncode}:\n"
                f"{done.stdout[-6000:]}\n{done.stderr[-3000:]}\n(whole output: {log})"
            )
        return done

    def up(self) -> subprocess.CompletedProcess[str]:
        return self.run("up", "--yes", "--skip-preview", timeout=UP_TIMEOUT_SECONDS)

    def destroy(self) -> subprocess.CompletedProcess[str]:
        return self.run("destroy", "--yes", "--skip-preview", timeout=UP_TIMEOUT_SECONDS)

    def preview(self) -> list[dict[str, Any]]:
        """The steps a preview would take, other than leaving a resource as it is."""
        done = self.run("preview", "--json", "--diff")
        steps = json.loads(done.stdout).get("steps") or []
        return [s for s in steps if s.get("op") not in ("same", "read")]

    def outputs(self, *, show_secrets: bool = False) -> dict[str, Any]:
        shown = ["--show-secrets"] if show_secrets else []
        return json.loads(self.run("stack", "output", "--json", *shown, "--stack", self.stack).stdout)

    def another_stack(self, stack: str, config: Mapping[str, Any], kubeconfig: str) -> PulumiProject:
        """A second stack of the same project and backend (e.g. a MultiKueue manager that
        references this one), with its config and secret kubeconfig."""
        other = PulumiProject(self.engine, self.workdir, stack, env=self.extra_env, rewrite=self.rewrite)
        other.runs = self.runs + 100  # its logs sort after this stack's, in the same folder
        other.run("stack", "init", stack)
        other.set_config(config)
        other.run(
            "config", "set", "--secret", "--path", "kueue-aks:cluster.kubeconfig", "--stack", stack, input=kubeconfig
        )
        self.run("stack", "select", self.stack)  # `stack init` selected the new one
        return other

    def stacks(self) -> list[str]:
        """The names of every stack of the project in this backend."""
        listed = json.loads(self.run("stack", "ls", "--json").stdout or "[]")
        return [s["name"].rsplit("/", 1)[-1] for s in listed]

    def recover(self, cluster: StackCluster) -> subprocess.CompletedProcess[str]:
        """`python -m components.recovery --run` for this stack, as docs/day-2.md tells the user
        (Helm on PATH, the cluster's kubeconfig)."""
        env = {
            **self.env,
            "PATH": os.pathsep.join([str(cluster.helm.binary.parent), self.env["PATH"]]),
            **{k: v for k, v in cluster.helm.env.items() if k.startswith("HELM_")},
        }
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "components.recovery",
                "--stack",
                self.stack,
                "--cwd",
                str(self.project),
                "--kubeconfig",
                str(cluster.cluster.kubeconfig),
                "--run",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def remove(self, cluster: StackCluster) -> str | None:
        """Remove the stack, first taking down what it holds, whatever state a failed test left it
        in: so one failure stays one failure, not a cascade of "already exists" in the tests after
        it. Says what it ran and how each step ended; None for a stack that held nothing."""
        deployment = self.deployment()
        if not _held(deployment.get("resources") or []) and not deployment.get("pending_operations"):
            self.run("stack", "rm", self.stack, "--yes", "--force")
            return None
        steps = [
            ("cancel", lambda: self.run("cancel", "--yes", check=False)),
            ("recovery", lambda: self.recover(cluster)),
            (
                "destroy",
                lambda: self.run("destroy", "--yes", "--skip-preview", check=False, timeout=UP_TIMEOUT_SECONDS),
            ),
            ("stack rm", lambda: self.run("stack", "rm", self.stack, "--yes", "--force", check=False)),
        ]
        said = []
        for name, step in steps:
            try:
                said.append(f"{name}: exit {step().returncode}")
            except (EngineError, subprocess.TimeoutExpired) as err:
                said.append(f"{name}: {type(err).__name__}")
        return f"stack {self.stack}: " + ", ".join(said)

    def deployment(self) -> dict[str, Any]:
        return json.loads(self.run("stack", "export", "--stack", self.stack).stdout).get("deployment") or {}

    def resources(self) -> list[dict[str, Any]]:
        return self.deployment().get("resources") or []

    def pending(self) -> list[dict[str, Any]]:
        return self.deployment().get("pending_operations") or []

    def created(self) -> list[str]:
        """The URNs of what the stack holds, but the stack itself."""
        return _held(self.resources())


def _held(resources: list[dict[str, Any]]) -> list[str]:
    """The URNs of the resources a state holds, but the stack itself."""
    return [r["urn"] for r in resources if r.get("type") != "pulumi:pulumi:Stack"]


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def changed(step: Mapping[str, Any]) -> str:
    """A step as one line: the operation, the resource's type and name, the fields that differ."""
    _, _, kind, name = (str(step.get("urn", "")).split("::") + ["", "", "", ""])[:4]
    fields = step.get("diffReasons") or list(step.get("detailedDiff") or {}) or step.get("diffs") or []
    return f"{step.get('op')} {kind.rsplit('$', 1)[-1]} {name}: {fields}"


class _Follower:
    """A thread that, every half second until the `with` block ends, makes the controllers it
    stands for run or stop as the cluster says (`_step`); then it stops what it started. Errors
    are kept for the test (`errors`), never lost in the thread. It reads the cluster over one
    kept-alive connection of its own: a kubectl process twice a second per controller took a
    good part of a core (measured: 60 % in `ps` during the engine's scenarios)."""

    JOIN_SECONDS = 30

    def __init__(self, name: str, kubectl: Kubectl) -> None:
        self.api = Api(kubectl.kubeconfig, timeout=10)
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name=name, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.JOIN_SECONDS)
        self._stop_all()
        self.api.close()

    def _follow(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self._step()
            except Exception as err:  # noqa: BLE001 - reported by the test, never lost in a thread
                self.errors.append(f"{type(err).__name__}: {err}")

    def _step(self) -> None:
        raise NotImplementedError

    def _stop_all(self) -> None:
        raise NotImplementedError

    def _deployments(self, namespace: str | None = None) -> dict[tuple[str, str], dict[str, Any]]:
        """The cluster's Deployments (of `namespace`, or all) by (namespace, name)."""
        path = f"/apis/apps/v1/namespaces/{namespace}/deployments" if namespace else "/apis/apps/v1/deployments"
        return {(d["metadata"]["namespace"], d["metadata"]["name"]): d for d in self.api.items(path)}


class KueueFollower(_Follower):
    """Runs the real Kueue controller while the program's Kueue release has its Deployment, at the
    version its image names: a kubelet would start the new image when an upgrade rolls the
    Deployment, so the follower restarts the controller with that version's binary
    (`binary_for`, e.g. binaries.ensure_kueue)."""

    def __init__(
        self, controller: KueueController, kubectl: Kubectl, binary_for: Callable[[str], Path] | None = None
    ) -> None:
        super().__init__("e2e-kueue-follower", kubectl)
        self.controller, self.binary_for = controller, binary_for
        self.running = False
        self.version: str | None = None  # the version the running controller was started at
        self.versions_run: list[str] = []

    def _stop_all(self) -> None:
        if self.running:
            self.controller.stop()
            self.running = False

    def _deployment_version(self) -> str | None:
        """The Kueue version of the Deployment's image (its tag, `v<version>`); None without one."""
        deployment = self._deployments(KUEUE_NAMESPACE).get((KUEUE_NAMESPACE, DEPLOYMENT))
        if deployment is None:
            return None
        image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        return image.rsplit(":", 1)[-1].lstrip("v") or "?"

    def _step(self) -> None:
        version = self._deployment_version()
        if self.running and version != self.version:
            self.controller.stop()
            self.running = False
        if version is not None and not self.running:
            if self.binary_for is not None:
                self.controller.binary = self.binary_for(version)
            self.controller.start()
            self.running, self.version = True, version
            self.versions_run.append(version)

    def describe(self) -> str:
        return f"follower errors: {self.errors}\nkueue log tail:\n{log_tail(self.controller.log, 40)}"


class OperatorFollower(_Follower):
    """Runs each job operator's real controller while the program's release or manifests have its
    Deployment, as KueueFollower does for Kueue (a kubelet would start its pods)."""

    JOIN_SECONDS = 60

    def __init__(self, controllers: Mapping[str, OperatorController], kubectl: Kubectl) -> None:
        super().__init__("e2e-operator-follower", kubectl)
        self.controllers = dict(controllers)
        self.running: set[str] = set()

    def _stop_all(self) -> None:
        for name in sorted(self.running):
            self.controllers[name].stop()
        self.running.clear()

    def _step(self) -> None:
        deployments = self._deployments()
        for name, controller in self.controllers.items():
            try:  # one operator's error does not keep the others from following
                present = (controller.spec.namespace, controller.spec.deployment) in deployments
                if present and name not in self.running:
                    controller.start()
                    self.running.add(name)
                    controller.wait_ready()
                elif not present and name in self.running:
                    controller.stop()
                    self.running.discard(name)
            except Exception as err:  # noqa: BLE001 - reported by the test, never lost in a thread
                self.errors.append(f"{name}: {type(err).__name__}: {err}")

    def describe(self) -> str:
        return f"operator follower errors: {self.errors}; running: {sorted(self.running)}\n" + "\n".join(
            f"--- {name}\n{c.log_tail(15)}" for name, c in self.controllers.items() if name in self.running
        )


def release_states(cluster: StackCluster) -> list[str]:
    """Kueue's release in Helm's records: `v<revision>=<status>`, oldest first."""
    secrets = cluster.kubectl.items("secrets", "-n", KUEUE_NAMESPACE, "-l", f"owner=helm,name={KUEUE_RELEASE_NAME}")
    return sorted(f"v{s['metadata']['labels'].get('version')}={s['metadata']['labels'].get('status')}" for s in secrets)


def assert_nothing_left(cluster: StackCluster, stack: PulumiProject) -> None:
    """Destroy `stack` and check it left no team namespace, Kueue namespace or CRD, nor state."""
    stack.destroy()
    assert not stack.created(), stack.created()
    teams = {o["metadata"]["name"] for o in build_objects(cluster.config) if o["kind"] == "Namespace"}
    namespaces = {n["metadata"]["name"] for n in cluster.kubectl.items("namespaces")}
    assert not namespaces & (teams | {KUEUE_NAMESPACE}), namespaces
    crds = [c for c in cluster.kubectl.run("get", "crds", "-o", "name").stdout.split() if "kueue.x-k8s.io" in c]
    assert not crds, crds
