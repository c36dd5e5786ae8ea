"""A refused stack config, read one way by every test: the problems its ConfigError names.

`refused(parse, *args)` runs the parse the test names (parse_config, load_stack, read_stack_file,
plan.parse_stack…), fails the test when it is accepted, and gives the problems in the order the
program reports them, with the views tests compare: paths, messages, `path: message` lines, pairs,
by path, or the messages of a refusal that must all be at one path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.config.checks import ConfigError, Problem


class Refusal(tuple[Problem, ...]):
    """The problems of one ConfigError, in its order."""

    @property
    def paths(self) -> list[str]:
        return [p.path for p in self]

    @property
    def messages(self) -> list[str]:
        return [p.message for p in self]

    @property
    def lines(self) -> list[str]:
        """Each as the error prints it: `<path>: <message>`."""
        return [str(p) for p in self]

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return [(p.path, p.message) for p in self]

    @property
    def by_path(self) -> dict[str, str]:
        """Path to message (a path named twice keeps its last message)."""
        return {p.path: p.message for p in self}

    def only_at(self, path: str) -> list[str]:
        """The messages, each of which must be at `path` (a stack file's own problems, say)."""
        assert self.paths == [path] * len(self), self.lines
        return self.messages


def refused(parse: Callable[..., Any], *args: Any, **kwargs: Any) -> Refusal:
    """The problems `parse(*args, **kwargs)` refuses the config with; the test fails if it parses."""
    with pytest.raises(ConfigError) as err:
        parse(*args, **kwargs)
    return Refusal(err.value.problems)
