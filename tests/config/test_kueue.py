"""Kueue's settings in the stack config (components/config/kueue.py): the feature gates it keeps on."""

from __future__ import annotations


from testbed.config_errors import refused
from testbed.stacks import parse_raw, with_changes


def test_the_namespace_selector_gate_stays_on_where_it_is_not_locked() -> None:
    """Kueue 0.18.4 lets ManagedJobsNamespaceSelectorAlwaysRespected be turned off; the stack's
    opt-in team namespaces depend on it, so the config refuses it naming the key."""
    problems = refused(
        parse_raw,
        with_changes(
            kueue={"version": "0.18.4", "featureGates": {"ManagedJobsNamespaceSelectorAlwaysRespected": False}}
        ),
    ).lines
    assert any(
        p.startswith("kueue-aks:kueue.featureGates.ManagedJobsNamespaceSelectorAlwaysRespected: must stay true")
        for p in problems
    ), problems
    assert parse_raw(
        with_changes(kueue={"version": "0.18.4", "featureGates": {"ManagedJobsNamespaceSelectorAlwaysRespected": True}})
    )
