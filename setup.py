"""The build step pyproject.toml cannot declare: a built package carries the checkout's reference
data (data/ -> graphlab/data) and the commit it was built from (graphlab/BUILD_COMMIT), so an
installed kit reads `data/cpu/latency.csv` and names its commit in every CSV it writes."""

import importlib.util
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
# graphlab/checkout.py alone (it imports only the standard library): the build has no numpy.
_spec = importlib.util.spec_from_file_location(
    "graphlab_checkout", ROOT / "graphlab" / "checkout.py"
)
checkout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checkout)


def built_commit() -> str:
    """The commit an sdist recorded (a wheel built from it has no .git), else the checkout's."""
    recorded = ROOT / "graphlab" / "BUILD_COMMIT"
    return recorded.read_text().strip() if recorded.is_file() else checkout.git_commit(ROOT)


class BuildPy(build_py):
    def run(self):
        super().run()
        if self.editable_mode:  # an editable install reads the checkout itself
            return
        package = Path(self.build_lib) / "graphlab"
        shutil.rmtree(package / "data", ignore_errors=True)  # a file gone from data/ goes too
        shutil.copytree(ROOT / "data", package / "data")
        (package / "BUILD_COMMIT").write_text(built_commit() + "\n")


class Sdist(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        (Path(base_dir) / "graphlab" / "BUILD_COMMIT").write_text(built_commit() + "\n")


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
