"""Views: figures and the explorer widget. They read sizing results and benchmark frames; they
never run a model (no torch). May import `graphlab.sizing` and `graphlab.errors`.
"""

from graphlab.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "explorer": "widgets",
        "plot_padding": "padding",
        "PATH_COLORS": "style",
        "plot_step_timeline": "costs",
        "plot_adaptive_price": "costs",
    },
)
