"""Recovery after an interrupted `pulumi up`: which of the stack's pending operations are real
objects in the cluster, and the commands that bring the state back in line (docs/day-2.md
#an-interrupted-up). The decision is pure; `python -m components.recovery` reads the state and
the cluster and prints, or runs, the commands."""
