"""MultiKueue: one manager cluster keeps the teams' queues and dispatches each admitted workload to a
worker cluster with room (docs/multikueue.md). A worker stack grants its managers access and
publishes the facts they plan with; a manager checks those facts and sums its quotas from them."""
