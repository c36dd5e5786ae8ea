"""Recovery after an interrupted `pulumi up`: which of the stack's pending operations are real
objects in the cluster, and the commands that bring the state back in line (docs/day-2.md
#an-interrupted-up). `pending` decides from the state and the cluster's answers (pure);
`python -m components.recovery` reads both and prints, or runs, the commands."""
