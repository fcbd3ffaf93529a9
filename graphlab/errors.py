"""The one exception type for bad user input."""


class GraphlabError(ValueError):
    """A bad value from the user: the message names it and what is allowed.

    The command line prints it on one line and exits with status 2, so callers never see a
    traceback from deep inside for a typo.
    """


def check_choice(name: str, value, allowed) -> None:
    """Raise GraphlabError unless `value` is one of `allowed` (the message lists them)."""
    if value not in allowed:
        raise GraphlabError(f"{name} {value!r} is not one of {', '.join(map(str, allowed))}")
