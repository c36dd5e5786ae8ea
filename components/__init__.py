"""kueue-aks: an AKS cluster with CPU and GPU pools, Kueue from its Helm chart, and starter queues.

A package per concern, each with pure builders (plain data in, plain data out, no Pulumi) and a
thin Pulumi component that registers what they build. Imports run one way: the shared Kubernetes
helpers and the stack's state are the floor, the facts and then the config contract sit above
them, the assembly and the offline plan on top (docs/architecture.md draws the layers;
tests/test_layout.py holds them).
"""
