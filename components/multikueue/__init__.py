"""MultiKueue: one manager cluster keeps the teams' queues and dispatches each admitted workload to a
worker cluster with room (../shared/reference/multikueue.md).

- `worker`: what a worker stack adds to the ordinary cluster: a ServiceAccount with the rules
  MultiKueue needs, its kubeconfig, and the facts (queues, quotas, frameworks) the manager reads.
- `manager`: the manager's checks of its workers' facts and its Kueue objects, quotas summed from
  the workers'.
- `component`: the thin Pulumi wiring of both, and the StackReferences to the workers.
"""
