#!/usr/bin/env python3
"""Git clean filter for notebooks: what git stores is the notebook without what running it adds.

    git config filter.nbstrip.clean "python3 scripts/nbstrip.py"   # `make env` does this
    python3 scripts/nbstrip.py < in.ipynb > out.ipynb

Drops outputs and execution counts, the cell metadata that Jupyter, JupyterLab and papermill
write while running (execution timing, papermill, scrolling and collapse state), papermill's
injected-parameters cell and empty tag lists, saved widget state, and the Python patch version
JupyterLab writes into language_info. Keeps everything the authors wrote, tags included. Standard
library only (git runs it with whatever python3 is on PATH); output formatted as nbformat and
JupyterLab write it.
"""

from __future__ import annotations

import json
import sys

RUN_CELL_METADATA = ("execution", "papermill", "scrolled", "collapsed", "jupyter", "ExecuteTime")
RUN_NOTEBOOK_METADATA = ("papermill", "widgets", "toc-autonumbering")


def strip(nb: dict) -> dict:
    cells = []
    for cell in nb.get("cells", []):
        metadata = cell.get("metadata", {})
        if "injected-parameters" in metadata.get("tags", []):
            continue
        for key in RUN_CELL_METADATA:
            metadata.pop(key, None)
        if metadata.get("tags") == []:  # papermill adds an empty list to every cell
            del metadata["tags"]
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cells.append(cell)
    nb["cells"] = cells
    metadata = nb.get("metadata", {})
    for key in RUN_NOTEBOOK_METADATA:
        metadata.pop(key, None)
    metadata.get("language_info", {}).pop("version", None)  # differs per machine
    return nb


def main() -> int:
    text = sys.stdin.read()
    try:
        nb = json.loads(text)
    except json.JSONDecodeError:
        sys.stdout.write(text)  # not a notebook git can read: store it as it is
        return 0
    sys.stdout.write(json.dumps(strip(nb), indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
