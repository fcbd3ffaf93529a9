"""Every figure of the kit in one namespace: `plots.plot_latency(df)`.

Each function takes a DataFrame shaped like one of the CSVs in data/ (columns in data/README.md),
a frame of graphlab.bench or a sizing result, and returns a matplotlib Figure; each lives in the
module of its concept, imported here.
"""

from graphlab.views.costs import plot_adaptive_price, plot_step_timeline
from graphlab.views.crash_map import plot_crash_map
from graphlab.views.latency import plot_eager_ratio, plot_latency
from graphlab.views.logged_steps import plot_logged_steps
from graphlab.views.memory import plot_graph_memory
from graphlab.views.padding import plot_padding
from graphlab.views.plan import plot_plan
from graphlab.views.reference import reference_figures
from graphlab.views.spec_decode import plot_spec_decode
from graphlab.views.style import inline

__all__ = [
    "inline",
    "plot_adaptive_price",
    "plot_crash_map",
    "plot_eager_ratio",
    "plot_graph_memory",
    "plot_latency",
    "plot_logged_steps",
    "plot_padding",
    "plot_plan",
    "plot_spec_decode",
    "plot_step_timeline",
    "reference_figures",
]
