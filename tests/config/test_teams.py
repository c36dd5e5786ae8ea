"""The teams of a stack config (components/config/teams.py): shares, borrowing, names beside the
topology queues, members."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.config.refusals import MINIMAL
from testbed.config_errors import refused
from testbed.stacks import TAS_POOL, parse_raw, with_changes


def test_borrowing_is_a_multiple_of_the_quota_or_unlimited() -> None:
    teams = [
        {"name": "a", "share": 30, "borrowing": 0},
        {"name": "b", "share": 30, "borrowing": 0.5},
        {"name": "c", "share": 20, "borrowing": "unlimited"},
        {"name": "d", "share": 20, "borrowing": 2},
    ]
    assert [t.borrowing for t in parse_raw(with_changes(teams=teams)).teams] == [0, Decimal("0.5"), None, 2]


def test_team_may_not_take_the_name_of_another_teams_topology_queue() -> None:
    # Listed first or last: the clash is reported at the `-topology` team, whatever the order.
    for teams, index in (
        ([{"name": "a", "share": 50}, {"name": "a-topology", "share": 10}], 1),
        ([{"name": "a-topology", "share": 10}, {"name": "a", "share": 50}], 0),
    ):
        problems = refused(parse_raw, with_changes(nodePools=[MINIMAL["nodePools"][0], TAS_POOL], teams=teams)).lines
        assert problems == [
            f"kueue-aks:teams[{index}].name: 'a-topology' is the name of team 'a''s ClusterQueue "
            "for its topology-aware pools; choose another team name"
        ]


def test_topology_suffix_is_free_when_that_team_has_no_topology_aware_pool() -> None:
    teams = [{"name": "a", "share": 50, "pools": ["cpu"]}, {"name": "a-topology", "share": 10}]
    # Team a uses only the ordinary pool, so it has no ClusterQueue "a-topology" to clash with.
    cfg = parse_raw(with_changes(nodePools=[MINIMAL["nodePools"][0], TAS_POOL], teams=teams))
    assert [t.name for t in cfg.teams] == ["a", "a-topology"]
    cfg = parse_raw(with_changes(teams=[{"name": "a", "share": 50}, {"name": "a-topology", "share": 10}]))
    assert [t.name for t in cfg.teams] == ["a", "a-topology"]


@pytest.mark.parametrize("name", [["a"], {"a": 1}])
def test_a_team_name_that_is_no_string_is_a_config_error(name: Any) -> None:
    assert (
        refused(parse_raw, with_changes(teams=[{"name": name, "share": 10}]))
        .lines[0]
        .startswith("kueue-aks:teams[0].name: ")
    )


@settings(max_examples=100, deadline=None)
@given(shares=st.lists(st.decimals(min_value=Decimal("0.1"), max_value=100, places=1), min_size=1, max_size=6))
def test_shares_are_accepted_exactly_when_they_fit(shares: list[Decimal]) -> None:
    raw = with_changes(teams=[{"name": f"t{i}", "share": float(s)} for i, s in enumerate(shares)])
    if sum(shares) <= 100:
        assert len(parse_raw(raw).teams) == len(shares)
    else:
        assert any(p.startswith("kueue-aks:teams: shares add up to") for p in refused(parse_raw, raw).lines)


def test_team_members_parse_and_kueue_install_names_a_mistake() -> None:
    """The contract's keys for team access and AKS's managed Kueue: members are group object IDs
    (tests/access has the rest); install: helm and aksExtension parse (tests/kueue/test_extension.py
    has the rest); a malformed group ID and an unknown install are errors that name the key."""
    group = "11111111-2222-3333-4444-555555555555"
    teams = [{"name": "research", "share": 50, "members": [group]}, {"name": "platform", "share": 50, "members": []}]
    assert [t.members for t in parse_raw(with_changes(teams=teams, kueue={"install": "helm"})).teams] == [(group,), ()]
    problems = refused(
        parse_raw,
        with_changes(
            teams=[
                {"name": "research", "share": 50, "members": [group]},
                {"name": "platform", "share": 50, "members": ["not-a-guid"]},
            ],
            kueue={"install": "extension"},
        ),
    ).lines
    assert not any(p.startswith("kueue-aks:teams[0]") for p in problems), problems
    assert any(p.startswith("kueue-aks:teams[1].members[0]: ") and "object ID" in p for p in problems), problems
    assert any(
        p.startswith("kueue-aks:kueue.install: 'extension' is not allowed") and "one of: helm | aksExtension" in p
        for p in problems
    ), problems
