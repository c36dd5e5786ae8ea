"""Kueue itself: its Helm values and manager configuration, every Kueue object and team quota, the
validation of those objects against the pinned release before anything is applied, the guards
its uninstall needs and how two versions of a stack's queues differ, all as plain data; the
components install Kueue (the Helm release or AKS's managed extension) and create the team
namespaces and queues."""
