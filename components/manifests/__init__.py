"""The stack's in-cluster setup as files to review and apply by hand (`plan --manifests`): which
objects go before the Helm releases and which after, and the order to apply them in."""
