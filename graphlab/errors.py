"""The one exception type for bad user input, and the checks that raise it."""

from __future__ import annotations

import numbers


class GraphlabError(ValueError):
    """A bad value from the user: the message names it and what is allowed.

    The command line prints it on one line and exits with status 2, so callers never see a
    traceback from deep inside for a typo.
    """


def check_choice(name: str, value, allowed) -> None:
    """Raise GraphlabError unless `value` is one of `allowed` (the message lists them)."""
    try:
        known = value in allowed
    except TypeError:  # an unhashable value is in no dict
        known = False
    if not known:
        raise GraphlabError(f"{name} {value!r} is not one of {', '.join(map(str, allowed))}")


def check_int(name: str, value, minimum: int, maximum: int | None = None) -> int:
    """`value` as an int when it is an integer in minimum..maximum (None: no upper bound)."""
    # bool is an int subclass; a flag passed by mistake must not read as 1.
    integer = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not integer or value < minimum or (maximum is not None and value > maximum):
        allowed = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        named = f"{name} " if name else ""  # "": argparse names the flag itself
        raise GraphlabError(f"{named}must be an integer {allowed}, got {value!r}")
    return int(value)


def lookup(name: str, value, table: dict, kind: type):
    """`value` itself when it is a `kind` already, else `table[value]` (GraphlabError listing
    the names when it is none of them): engines, model presets and suites by name or object."""
    if isinstance(value, kind):
        return value
    check_choice(name, value, table)
    return table[value]
