"""The one exception type for bad user input."""


class GraphlabError(ValueError):
    """A bad value from the user: the message names it and what is allowed.

    The command line prints it on one line and exits with status 2, so callers never see a
    traceback from deep inside for a typo.
    """
