"""Every refusal docs/config-refusals.md lists (components/config/refusals.py) is made: its example
is refused at the key it names, and the smallest stack the examples start from is valid."""

from __future__ import annotations

import pytest

from components.config.checks import ConfigError
from components.config.parse import parse_config
from components.config.refusals import MINIMAL, REFUSALS, Refusal


def test_the_examples_start_from_a_valid_stack() -> None:
    assert [t.name for t in parse_config(dict(MINIMAL), stack="test", location="eastus2").teams] == ["research"]


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda r: f"{r.path} {r.rule[:30]}")
def test_each_refusal_is_made_at_its_key(refusal: Refusal) -> None:
    raw = {**MINIMAL, **refusal.example}
    with pytest.raises(ConfigError) as err:
        # No secret keys, as the stack file's reader (components/plan.py) passes none.
        parse_config(raw, stack="test", location="eastus2", other_keys=refusal.other_keys, secret_keys=())
    paths = [p.path for p in err.value.problems]
    assert refusal.path in paths, [str(p) for p in err.value.problems]
    # The message says what is allowed or what to do, in a readable length.
    assert all(len(p.message) < 1000 for p in err.value.problems)
