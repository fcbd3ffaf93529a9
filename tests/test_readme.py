"""The README's "Using graphlab in your own code" examples run as printed, and say what they return."""

import ast
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _examples() -> list[str]:
    text = README.read_text()
    section = text.split("## Using graphlab in your own code", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def _claims(block: str):
    """(expression, value) for each line `expr  # literal` whose comment opens with a Python literal."""
    for line in block.splitlines():
        code, _, comment = line.partition("  # ")
        if not comment or "=" in code.split("(")[0]:
            continue
        for end in range(len(comment), 0, -1):  # the longest prefix that is a literal
            try:
                yield code.strip(), ast.literal_eval(comment[:end])
                break
            except (ValueError, SyntaxError):
                continue


def test_the_readme_has_examples_with_claims():
    blocks = _examples()
    assert len(blocks) >= 4 and sum(len(list(_claims(b))) for b in blocks) >= 4


@pytest.mark.parametrize("index", range(len(_examples())))
def test_readme_example_runs_and_returns_what_it_says(index, tmp_path, monkeypatch, one_thread):
    monkeypatch.chdir(tmp_path)  # examples write under build/
    block = _examples()[index]
    namespace: dict = {}
    exec(compile(block, f"README example {index + 1}", "exec"), namespace)
    for expression, value in _claims(block):
        assert eval(expression, namespace) == value, expression
