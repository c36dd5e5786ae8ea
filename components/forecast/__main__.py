"""Write a trace for the waiting-time forecast from what a cluster ran (docs/forecast.md).

    kubectl get workloads.kueue.x-k8s.io -A -o json > workloads.json
    kubectl get namespaces -o json > namespaces.json
    python -m components.forecast trace --from workloads.json --namespaces namespaces.json > traces/dev.csv

    python -m components.forecast trace --kubeconfig ~/.kube/config --output traces/dev.csv

The second reads the same two lists from the cluster of the kubeconfig's current context, with
the official kubernetes client (components/k8s/reader.py: read-only, exec plugins such as
kubelogin run without a terminal). What was kept and left out goes to stderr.
Exit codes: 0 written, 1 the input could not be read, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..k8s.reader import ClusterReader, ReadError
from .trace import write_trace
from .workloads import comment, namespace_teams, trace_from_workloads

WORKLOADS_PATH = "/apis/kueue.x-k8s.io/v1beta2/workloads"
NAMESPACES_PATH = "/api/v1/namespaces"


class InputError(Exception):
    pass


def _json(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        return json.loads(text)
    except OSError as err:
        raise InputError(f"{path}: cannot be read ({err.strerror or err})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path}: is not the JSON of `kubectl get ... -o json` ({err})") from None


def _from_cluster(kubeconfig: Path) -> tuple[Any, Any, str]:
    try:
        text = kubeconfig.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{kubeconfig}: cannot be read ({err})") from None
    try:
        with ClusterReader.from_kubeconfig(text) as reader:
            return reader.list(WORKLOADS_PATH), reader.list(NAMESPACES_PATH), f"the cluster of {kubeconfig}"
    except ReadError as err:
        raise InputError(str(err)) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.forecast", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    trace = commands.add_parser("trace", help="write a trace (CSV) of a cluster's finished Kueue Workloads")
    trace.add_argument(
        "--from", dest="workloads", help="`kubectl get workloads.kueue.x-k8s.io -A -o json` ('-': stdin)"
    )
    trace.add_argument("--namespaces", help="`kubectl get namespaces -o json`: the teams' namespaces by their label")
    trace.add_argument("--kubeconfig", type=Path, help="read both from this kubeconfig's cluster instead")
    trace.add_argument("--output", "-o", type=Path, help="write the trace here (default: stdout)")
    args = parser.parse_args(argv)
    if args.kubeconfig and (args.workloads or args.namespaces):
        parser.error("--kubeconfig reads the cluster: leave out --from and --namespaces")
    if not args.kubeconfig and not (args.workloads and args.namespaces):
        parser.error("give --from and --namespaces (files), or --kubeconfig")
    try:
        if args.kubeconfig:
            workloads, namespaces, source = _from_cluster(args.kubeconfig)
        else:
            workloads, namespaces, source = _json(args.workloads), _json(args.namespaces), args.workloads
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    recorded = trace_from_workloads(workloads, namespace_teams(namespaces))
    if not recorded.jobs:
        print(f"error: no finished Workload in a team namespace ({recorded.summary()})", file=sys.stderr)
        return 1
    text = write_trace(recorded.jobs, comment(recorded, source))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    print(recorded.summary(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
