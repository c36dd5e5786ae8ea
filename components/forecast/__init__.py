"""What a change to the stack's queues does to how long each team's jobs wait.

A job trace (the stack's own, recorded from a cluster, or a synthetic one from Philly's statistics)
runs through a simulation of Kueue's admission under the queues the program builds, before and
after a change; the plan prints each team's waits, GPU-hours and finished jobs side by side.
"""
