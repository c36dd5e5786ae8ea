"""Kubernetes helpers every concern shares: quantities and the resources the stack counts, name
rules and object metadata, where charts come from, the CRD engine that checks objects as the API
server does, Helm releases and raw objects as Pulumi resources, and a read-only client for
looking inside a cluster before any resource. They decide no policy and import nothing else from
components."""
