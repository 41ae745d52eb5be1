"""Reading ELVES_* environment variables: the one parser both platforms' settings use.

`read` takes a variable's text (or the default's, written as a user would write it) through
a parser; a parser's ValueError says what is wrong with the text, and `read` puts the
variable's name in front, so every bad setting is named the same way. Standard library only:
the shell scripts' facts (elves.shell_env) read the local settings with the system's python3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def read(env: Mapping[str, str], name: str, default: str, parse: Callable[[str], T]) -> T:
    """`parse` of the variable `name`, or of `default` when it is unset or empty;
    ValueError("NAME: <what parse said>") on a bad value."""
    text = env.get(name) or default
    try:
        return parse(text)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer") from None


def count(text: str) -> int:
    """A whole number of at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def one_of(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"{text!r} is not one of {', '.join(choices)}")
        return text
    return parse
