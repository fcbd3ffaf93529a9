"""The lines a run prints about itself: what a reader sees names the backend and the device the
provenance block recorded."""

from graphlab.bench.provenance import computed_provenance, provenance
from graphlab.engine.device import cpu_name
from graphlab.views.report import describe


def test_describe_names_the_backend_and_the_device_of_the_block():
    assert describe(computed_provenance(suite="crash-map")) == f"computed on {cpu_name()}"
    measured = describe(provenance("cpu", backend="cpu-emulated"))
    assert (
        measured.startswith(f"cpu-emulated on {cpu_name()[:-1]}, ") and "torch thread" in measured
    )
