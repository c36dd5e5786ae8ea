"""The test kit: what the tests (tests/) and the benchmarks (bench/) share, and no test of its own.

The one catalogue of stacks (stacks.py); the program run under Pulumi's mocks (harness.py) with
fakes of Azure's Resource Manager, a Kubernetes API server and the Pulumi service; and the e2e
tier's local control planes: the binaries they are built from, the Kueue controller and the job
operators on them, the chart mirror and the real Pulumi engine. It may import the program
(components/); the program never imports it (tests/test_layout.py).
"""
