"""Offline plan: what a stack's queues will hold, and the manifests, without any cloud access (with
--azure, also what Azure's vCPU quota and VM sizes allow).

    python -m components.plan --stack dev                      # capacity and quota table
    python -m components.plan --stack dev --manifests out/     # plus every object as YAML, in apply order
    python -m components.plan --stack dev --azure              # plus Azure's vCPU quota and VM sizes
    python -m components.plan --stack dev --base origin/main   # quota changes against another version

It reads `Pulumi.<stack>.yaml`, validates it with the same config model, builders and validator
the program uses, and prints a Markdown table (fit for a terminal or a GitHub job summary).
The Kueue CRDs come from the chart the program installs, as in the program (components/kueue/crds.py).
With --azure it also runs the program's preflight (components/preflight): it reads the
subscription (--subscription, AZURE_SUBSCRIPTION_ID / ARM_SUBSCRIPTION_ID, or `az login`'s default) as
azure-identity's DefaultAzureCredential logs in (az login, a service principal's or workload
identity's environment variables, a managed identity), prints the capacity table, and under
quotaPolicy clamp shows the quotas clamped; on a cluster that exists it also checks the cluster's
AKS extensions (managed Kueue, KubeRay) against what the stack installs. Without it, nothing leaves
the machine.
With --base it prints only the quota changes from the stack's version on a git ref of the
project's repository (`git show REF:Pulumi.<stack>.yaml`; a MultiKueue manager's workers from that
ref too) or in a stack file given by its path (workers from --root), both sides built and validated
alike (components/kueue/compare.py). A base without the stack shows it as new; a base whose file no
longer parses, or whose objects fail validation, under this code is reported as such on stdout
with exit code 2 or 3.
Exit codes: 0 ok, 2 config error, 3 a generated object fails validation, 4 the Kueue CRDs cannot be
read (a chart source that answers wrongly, or no chart with CI=true), 5 the preflight failed
(Azure cannot give the pools, the cluster's AKS extensions clash with the stack, or Azure cannot be read).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .access.azure_roles import assigned_roles, roles_needed
from .access.identity import (
    SERVICE_ACCOUNT,
    USE_LABEL,
    aks_cluster_name,
    identity_teams,
    role_changes,
    role_text,
)
from .access.members import team_access
from .assembly import stack_parts
from .cluster.edits import edit_lines
from .config.checks import ConfigError, Problem
from .config.names import CONFIG_PREFIX
from .config.network import ApiServer, NetworkSettings
from .config.parse import parse_config, raw_from_stack_file
from .config.stack import StackConfig
from .config.stackfile import read_stack_file
from .config.teams import DEFAULT_PRIORITY, Team
from .facts.azure_names import team_identity_name
from .facts.operators import OPERATOR_PINS, OPERATORS
from .forecast.forecast import forecast_markdown
from .k8s.crd_schema import CrdError
from .k8s.resources import UNITS, human
from .kueue.compare import comparison_markdown, stack_quotas, unreadable_base_markdown
from .kueue.crds import kueue_crds
from .kueue.findings import KueueValidationError
from .kueue.objects import (
    COHORT_NAME,
    QueueSet,
    QuotaRow,
    flavor_order,
    local_queue_targets,
    most_held,
    provisioning_check,
    queue_set,
    zero_gpu_quotas,
)
from .kueue.validate import check_objects
from .manifests.folders import write_manifests
from .multikueue.manager import Worker, manager_local_queues, manager_queue_set, worker_problems, worker_quotas
from .multikueue.worker import worker_facts
from .preflight.arm import ArmClient, PreflightError, cli_subscription
from .preflight.check import PreflightFailed, decide, read
from .preflight.quota import capacity_markdown


def load_stack(stack: str, root: Path) -> StackConfig:
    return parse_stack(stack, (root / f"Pulumi.{stack}.yaml").read_text())


def parse_stack(stack: str, text: str) -> StackConfig:
    # As the Pulumi CLI reads the file and hands its config to the program (components/config/stackfile.py).
    doc = read_stack_file(stack, text)
    raw, location = raw_from_stack_file(doc)
    others = [str(k) for k in (doc.get("config") or {}) if not str(k).startswith(f"{CONFIG_PREFIX}:")]
    # No secret keys: a secret in the stack file is still {secure: ...}; plain text is plain.
    return parse_config(raw, stack=stack, location=location, other_keys=others, secret_keys=())


@dataclass(frozen=True)
class StackFiles:
    """Where the plan reads stack files: the project directory, or a git ref of its repository."""

    root: Path
    ref: str | None = None

    def where(self, stack: str) -> str:
        return str(self.root / f"Pulumi.{stack}.yaml") if self.ref is None else f"{self.ref}:Pulumi.{stack}.yaml"

    def read(self, stack: str) -> str | None:
        """The stack file's text; None when there is no such file (there)."""
        if self.ref is None:
            path = self.root / f"Pulumi.{stack}.yaml"
            return path.read_text() if path.exists() else None
        # `./` makes the path relative to root, which need not be the repository's top.
        shown = subprocess.run(
            ["git", "-C", str(self.root), "show", f"{self.ref}:./Pulumi.{stack}.yaml"],
            capture_output=True,
            text=True,
            check=False,
        )
        return shown.stdout if shown.returncode == 0 else None


def is_git_ref(ref: str, root: Path) -> bool:
    found = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return found.returncode == 0


def _quota_cell(row: QuotaRow, team: Team) -> str:
    most = most_held(row, team)
    quota = human(row.resource, row.teams[team.name])
    return quota if most >= row.capacity else f"{quota} (≤ {human(row.resource, most)})"


def quota_markdown(config: StackConfig, rows: Sequence[QuotaRow]) -> str:
    teams = [t.name for t in config.teams]
    lines = [
        f"### kueue-aks plan: stack `{config.stack}` ({config.kueue.described}, cluster `{config.cluster.name}`)",
        "",
        "Capacity is allocatable per node × maxCount (AKS reservations subtracted). Each team's nominal "
        f"quota is its share of that, rounded down; the cohort `{COHORT_NAME}` holds the rest. A team borrows "
        "what others leave idle, up to the pool's capacity or, with `borrowing`, its multiple of the quota "
        "(`(≤ n)`: the most it can then hold); lenders reclaim it by preemption.",
        "",
        "| flavor | resource | capacity | " + " | ".join(f"{t} ({_share(config, t)}%)" for t in teams) + " | cohort |",
        "|---|---|---:|" + "---:|" * len(teams) + "---:|",
    ]
    by_name = {t.name: t for t in config.teams}
    for row in rows:
        unit = UNITS[row.resource][0]
        cells = [_quota_cell(row, by_name[t]) if t in row.teams else "–" for t in teams]
        lines.append(
            f"| {row.flavor} | {row.resource} ({unit}) | {human(row.resource, row.capacity)} | "
            + " | ".join(cells)
            + f" | {human(row.resource, row.cohort)} |"
        )
    # The same warnings the program logs: a share that rounds down to 0 GPUs only ever borrows them.
    for warning in zero_gpu_quotas(config, rows):
        lines += ["", f"**Warning:** {warning}."]
    lines += [
        "",
        "| team | submit to (namespace/LocalQueue) | ClusterQueue | pools | placement |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {t.name} | `{t.name}/{name}` | `{q.name}` | {', '.join(q.pools)} | "
        f"{'packed by topology (every job)' if q.topology else 'any node of the pool'} |"
        for t in config.teams
        for name, q in local_queue_targets(config, t).items()
    ]
    return "\n".join(lines) + "\n" + pools_markdown(config)


def manager_markdown(config: StackConfig, workers: Sequence[Worker]) -> str:
    """A MultiKueue manager's plan: each team's quota on every worker and in total, which is the
    manager's ClusterQueue quota, and where the teams submit."""
    names = [w.name for w in workers]
    lines = [
        f"### kueue-aks plan: MultiKueue manager `{config.stack}` ({config.kueue.described}, cluster "
        f"`{config.cluster.name}`)",
        "",
        "The manager runs no team jobs: each job its queues admit runs on the first worker whose own queues "
        "admit it. A team's quota here is the sum of its quotas on the workers (their stack files, as their "
        f"stacks export them); the cohort `{COHORT_NAME}` holds the workers' unassigned remainder.",
        "",
        "| team | flavor | resource | "
        + " | ".join(f"{w.name} ({w.stack.rsplit('/', 1)[-1]})" for w in workers)
        + " | total |",
        "|---|---|---|" + "---:|" * (len(workers) + 1),
    ]
    for q in worker_quotas(config, workers):
        unit = UNITS[q.resource][0]
        cells = [human(q.resource, q.workers[n]) if n in q.workers else "–" for n in names]
        lines.append(
            f"| {q.team} | {q.flavor} | {q.resource} ({unit}) | "
            + " | ".join(cells)
            + f" | {human(q.resource, q.total)} |"
        )
    lines += ["", "| team | submit to (namespace/LocalQueue) | ClusterQueue | dispatched to |", "|---|---|---|---|"]
    lines += [
        f"| {team} | `{team}/{lq}` | `{cq}` | {', '.join(names)} ({config.multi_kueue.dispatcher}) |"
        for team, queues in manager_local_queues(config, workers).items()
        for lq, cq in queues.items()
    ]
    return "\n".join(lines) + "\n"


def plan_workers(config: StackConfig, files: StackFiles) -> list[Worker]:
    """A manager's workers, their facts computed from their stack files (the last part of each
    stack reference names the file) as their stacks would export them; ConfigError names the
    worker that is missing, invalid or does not fit."""
    workers = []
    for i, settings in enumerate(config.multi_kueue.workers):
        stack = settings.stack.rsplit("/", 1)[-1]
        path = f"{CONFIG_PREFIX}:multiKueue.workers[{i}].stack"
        text = files.read(stack)
        if text is None:
            raise ConfigError(
                [
                    Problem(
                        path, f"the plan reads worker {settings.name!r} from {files.where(stack)}, which does not exist"
                    )
                ]
            )
        try:
            worker = parse_stack(stack, text)
        except ConfigError as err:
            raise ConfigError([Problem(path, f"worker {settings.name!r}: {p}") for p in err.problems]) from None
        facts = worker_facts(worker) if worker.multi_kueue.is_worker else None
        workers.append(Worker(settings.name, settings.stack, facts))
    problems = worker_problems(config, workers)
    if problems:
        raise ConfigError(problems)
    return workers


def pools_markdown(config: StackConfig) -> str:
    """How each pool gets its nodes: fixed, pod by pod, or all of a job's nodes before admission."""
    lines = ["", "| pool | nodes | a job starts | admission check (ClusterQueues, per flavor) |", "|---|---|---|---|"]
    for pool in flavor_order(config.node_pools):
        check = provisioning_check(pool)
        nodes = f"{pool.min_count}–{pool.max_count}, autoscaled" if pool.autoscaled else f"{pool.max_count}, fixed"
        if pool.quota_nodes is not None:
            nodes += f"; Kueue counts {pool.capacity_nodes} (Azure's vCPU quota, quotaPolicy clamp)"
        if check:
            starts = "when the autoscaler has added all its nodes (ProvisioningRequest, all or nothing)"
        elif pool.autoscaled:
            starts = "at once; nodes follow its pending pods"
        else:
            starts = "at once, on the nodes there"
        lines.append(f"| {pool.name} | {nodes} | {starts} | {f'`{check}`' if check else '–'} |")
    return "\n".join(lines) + "\n"


def network_markdown(config: StackConfig) -> str:
    """Where the nodes are and who reaches the API server, when the stack says (docs/network.md);
    empty for AKS's own VNet and a public API server."""
    settings = config.cluster
    network, api = settings.network, settings.api_server
    if settings.mode != "create" or (network == NetworkSettings() and api == ApiServer()):
        return ""
    lines = []
    if network.subnet_id and network.vnet_id:
        own = ", ".join(f"{p.name} in `{p.subnet_id.rsplit('/', 1)[1]}`" for p in config.node_pools if p.subnet_id)
        lines.append(
            f"**Network:** every pool in subnet `{network.subnet_id.rsplit('/', 1)[1]}` of VNet "
            f"`{network.vnet_id.rsplit('/', 1)[1]}`{f' (but {own})' if own else ''}; the control plane's "
            "own identity joins them (Network Contributor on the VNet)."
        )
    ranges = [
        f"{k} {v}"
        for k, v in (
            ("pods", network.pod_cidr),
            ("Services", network.service_cidr),
            ("cluster DNS", network.dns_service_ip),
        )
        if v
    ]
    egress = f"Egress: {network.outbound_type or 'loadBalancer'}" + (f"; {', '.join(ranges)}." if ranges else ".")
    lines.append(egress)
    if api.exposure == "private":
        lines.append(
            "**API server:** private, reachable only from the VNet and networks peered to it: `pulumi up` (its "
            "Kubernetes half) must run there, e.g. on a self-hosted runner, and so must the batch users' kubectl "
            "(docs/network.md)."
        )
    elif api.exposure == "authorized":
        lines.append(
            f"**API server:** public, but only {', '.join(api.authorized_ip_ranges)} reach it: the machine that runs "
            "`pulumi up` and the batch users' kubectl must have an address in them (docs/network.md)."
        )
    return "\n\n".join(lines) + "\n\n"


def operators_markdown(config: StackConfig) -> str:
    """The operators the stack installs (or expects) for its frameworks; read from the catalog
    alone, so the plan stays offline-fast (the modules are read only for --manifests)."""
    if not config.operators:
        return ""
    lines = ["", "| operator | version | runs (enabled frameworks) | installed | from |", "|---|---|---|---|---|"]
    for settings in config.operators:
        operator = OPERATORS[settings.key]
        enabled = [f for f in operator.frameworks if f in config.kueue.frameworks] or ["(needed by another operator)"]
        if settings.install == "external":
            lines.append(f"| {operator.title} | yours | {', '.join(enabled)} | external | – |")
            continue
        pin = OPERATOR_PINS[config.kueue.version][settings.key]
        source = f"chart `{settings.chart or operator.chart}`" if operator.chart else f"manifests of `{pin.module}`"
        lines.append(
            f"| {operator.title} | {pin.version} | {', '.join(enabled)} | `{operator.namespace}`, "
            f"system pool | {source} |"
        )
    return "\n".join(lines) + "\n"


def access_markdown(config: StackConfig, queues: QueueSet) -> str:
    """Who can submit where: each team's namespace, LocalQueues, quota and member groups, and the
    priority a job without a priority label gets."""
    lines = ["", "| team | namespace | LocalQueues | quota (nominal) | members (groups) |", "|---|---|---|---|---|"]
    for t in team_access(config, queues):
        quota = "; ".join(f"{flavor}: " + ", ".join(resources.values()) for flavor, resources in t.quota.items()) or "–"
        members = ", ".join(f"`{g}`" for g in t.members) or "none: only the cluster's admins can submit here"
        lines.append(f"| {t.team} | `{t.team}` | {', '.join(f'`{q}`' for q in t.local_queues)} | {quota} | {members} |")
    classes = ", ".join(f"`{pc.name}` {pc.value}" for pc in sorted(config.priority_classes, key=lambda pc: -pc.value))
    same = config.unlabelled_class
    lines += [
        "",
        f"Priorities: {classes}. A job without the `kueue.x-k8s.io/priority-class` label runs at "
        f"{DEFAULT_PRIORITY}" + (f", as `{same}`." if same else ", which no class here has."),
    ]
    return "\n".join(lines) + "\n"


def identities_markdown(config: StackConfig) -> str:
    """Each team identity: the managed identity, what the team's jobs run as, and its roles."""
    teams = identity_teams(config)
    if not teams:
        return ""
    cluster = aks_cluster_name(config)
    lines = ["", "| team | Azure identity (managed) | its jobs run as | roles |", "|---|---|---|---|"]
    lines += [
        f"| {t.name} | `{team_identity_name(cluster, t.name)}` | ServiceAccount `{t.name}/{SERVICE_ACCOUNT}`, "
        f'pods labelled `{USE_LABEL}: "true"` | {"; ".join(role_text(r) for r in t.identity.roles)} |'
        for t in teams
        if t.identity
    ]
    return "\n".join(lines) + "\n"


def _share(config: StackConfig, team: str) -> str:
    share = next(t.share for t in config.teams if t.name == team)
    return f"{share.normalize():f}"


def azure_preflight(config: StackConfig, root: Path, subscription: str | None) -> tuple[StackConfig, str]:
    """The program's preflight, with azure-identity's credential instead of the provider's token."""
    from azure.identity import DefaultAzureCredential

    subscription = (
        subscription
        or os.environ.get("AZURE_SUBSCRIPTION_ID")
        or os.environ.get("ARM_SUBSCRIPTION_ID")
        or cli_subscription()  # `az login` alone
    )
    if not subscription:
        raise PreflightError(
            "no subscription: run `az login` (its default subscription is used), pass --subscription, or set "
            "AZURE_SUBSCRIPTION_ID"
        )
    project = (yaml.safe_load((root / "Pulumi.yaml").read_text()) or {}).get("name", "kueue-aks")
    api = ArmClient(DefaultAzureCredential(), subscription, os.environ.get("ARM_ENVIRONMENT"))
    assessment = read(config, api, f"{project}/{config.stack}")
    built, notes = decide(config, assessment)
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    return built, capacity_markdown(assessment)


def built_queues(config: StackConfig, files: StackFiles, root: Path) -> tuple[list[Worker], QueueSet, Any]:
    """The stack's QueueSet as the program builds it, checked against the CRDs of the chart it
    installs (None when they could not be read, with a warning). Raises ConfigError (the
    workers), CrdError and KueueValidationError."""
    workers = plan_workers(config, files) if config.multi_kueue.is_manager else []
    queues = manager_queue_set(config, workers) if config.multi_kueue.is_manager else queue_set(config)
    found = kueue_crds(config.kueue.chart, config.kueue.version, root=root)
    if found.missing:
        print(f"warning: {found.missing}", file=sys.stderr)
    check_objects(queues.objects, crds=found.crds, capacity=queues.capacity)
    return workers, queues, found.crds


def compare_with_base(head: StackConfig, queues: QueueSet, base: str, root: Path) -> tuple[int, str]:
    """Exit code and Markdown of the quota changes from `base`'s version of the stack: a git ref
    of root's repository, or a stack file's path (its manager's workers then from root)."""
    stack, label = head.stack, f"`{base}`"
    text: str | None
    if Path(base).is_file():
        files, text = StackFiles(root), Path(base).read_text()
    else:
        files = StackFiles(root, base)
        text = files.read(stack)
    after = stack_quotas(head, queues)
    if text is None:
        forecast = forecast_markdown(None, (head, queues), root)
        return 0, comparison_markdown(stack, label, None, after, role_changes(None, head)) + forecast
    try:
        config = parse_stack(stack, text)
        _, base_queues, _ = built_queues(config, files, root)
    except ConfigError as err:
        return 2, unreadable_base_markdown(
            stack, label, "does not parse under this change's code", [f"`{p.path}`: {p.message}" for p in err.problems]
        )
    except KueueValidationError as err:
        return 3, unreadable_base_markdown(
            stack, label, "builds Kueue objects this change's validator rejects", [str(v) for v in err.violations]
        )
    changes = comparison_markdown(
        stack, label, stack_quotas(config, base_queues), after, role_changes(config, head), edit_lines(config, head)
    )
    return 0, changes + forecast_markdown((config, base_queues), (head, queues), root)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True, help="stack name: reads Pulumi.<stack>.yaml")
    parser.add_argument("--manifests", type=Path, help="write every object and the Helm values as YAML here")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="project directory (default: current)")
    parser.add_argument(
        "--azure",
        action="store_true",
        help="read Azure's vCPU quota and VM sizes, and the cluster's AKS extensions (the preflight)",
    )
    parser.add_argument(
        "--subscription",
        help="with --azure: the subscription id (default: AZURE_SUBSCRIPTION_ID, then ARM_SUBSCRIPTION_ID, then "
        "the Azure CLI's default subscription)",
    )
    parser.add_argument(
        "--base",
        metavar="REF",
        help="print only the quota changes from the stack's version on this "
        "git ref (e.g. origin/main) or in this stack file",
    )
    parser.add_argument(
        "--assigned-roles",
        action="store_true",
        help="print only the role definitions the stack assigns, as {guid, guid} for the condition of CI's "
        "Role Based Access Control Administrator (docs/ci-cd.md)",
    )
    args = parser.parse_args(argv)
    if args.assigned_roles and (args.base or args.azure or args.manifests):
        parser.error("--assigned-roles prints the roles alone: leave out --base, --azure and --manifests")
    if args.base and (args.azure or args.manifests):
        # The base has no preflight of its own: a clamped head would show quota changes nobody made.
        parser.error("--base compares the stack files alone: leave out --azure and --manifests")

    if not (args.root / f"Pulumi.{args.stack}.yaml").exists():
        print(f"error: {args.root / f'Pulumi.{args.stack}.yaml'} does not exist", file=sys.stderr)
        return 2
    if args.base and not Path(args.base).is_file() and not is_git_ref(args.base, args.root):
        print(
            f"error: --base {args.base}: neither a stack file nor a git ref of {args.root}'s repository",
            file=sys.stderr,
        )
        return 2
    try:
        config = load_stack(args.stack, args.root)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.assigned_roles:
        print(assigned_roles(config))
        return 0
    capacity = ""
    if args.azure:
        try:
            config, capacity = azure_preflight(config, args.root, args.subscription)
        except (PreflightError, PreflightFailed) as err:
            print(f"error: preflight: {err}" if isinstance(err, PreflightError) else f"error: {err}", file=sys.stderr)
            return 5
    try:
        workers, stack_queues, crds = built_queues(config, StackFiles(args.root), args.root)
        if args.base:
            code, changes = compare_with_base(config, stack_queues, args.base, args.root)
            print(changes, end="")
            return code
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except CrdError as err:
        print(f"error: the Kueue CRDs to validate against: {err}", file=sys.stderr)
        return 4
    except KueueValidationError as err:
        print(f"error: generated Kueue objects are invalid:\n{err}", file=sys.stderr)
        return 3
    queues = manager_markdown(config, workers) if workers else quota_markdown(config, stack_queues.rows)
    queues += forecast_markdown(None, (config, stack_queues), args.root)
    print(queues + access_markdown(config, stack_queues) + identities_markdown(config) + operators_markdown(config))
    network = network_markdown(config)
    if network:
        print(network, end="")
    roles = roles_needed(config)
    if roles:
        print(f"**Azure roles:** {roles}\n")
    print(capacity or "_Azure's vCPU quota and VM sizes not read: pass --azure to run the preflight._\n")
    if crds is None:
        print("_CRD schema and CEL rules not checked: the Kueue chart could not be read (see the warning)._")
    if args.manifests:
        written = write_manifests(config, stack_parts(config, stack_queues), args.manifests)
        print(f"\nWrote {len(written)} files to {args.manifests}/ (the order below is also in ORDER.md).\n")
        print((args.manifests / "ORDER.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
