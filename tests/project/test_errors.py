"""BadInput and UnreadableInput, the kinds the checks raise: a value not allowed, an input file that
cannot be read."""

from __future__ import annotations

import os

import numpy as np
import pytest

import graphlab as g
from graphlab.errors import (
    BadInput,
    GraphlabError,
    UnreadableInput,
    check_choice,
    check_file_name,
    check_float,
    check_input_file,
    check_instance,
    check_int,
    check_json_object,
    check_output_file,
    check_path,
    check_sizes,
)
from graphlab.sizing.planner.inputs import read_latency


def test_a_bad_choice_is_bad_input():
    with pytest.raises(BadInput, match="'big' is not one of small, h100"):
        check_choice("device tier", "big", ("small", "h100"))
    with pytest.raises(BadInput, match="engine 'vllm-9' is not one of"):
        g.audit("vllm-9", g.SizingConfig(8))


def test_an_unreadable_file_is_unreadable_input(tmp_path):
    missing = tmp_path / "missing.csv"
    with pytest.raises(UnreadableInput, match="cannot read --latency .*missing.csv"):
        check_input_file("--latency", missing)
    with pytest.raises(UnreadableInput, match="is a folder; give a regular file"):
        read_latency(tmp_path)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(UnreadableInput, match="cannot read CSV .*empty.csv"):
        read_latency(empty)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableInput, match="is a FIFO"):
        check_input_file("--latency", fifo)


def test_both_kinds_are_graphlab_errors():
    # `except GraphlabError` (the command line's, the notebooks') still catches every bad input
    assert issubclass(BadInput, GraphlabError) and issubclass(UnreadableInput, GraphlabError)
    with pytest.raises(BadInput):  # a NUL in a path is a value no file can have
        check_input_file("--latency", "a\0b")


# ---- what the independent mutation campaign of 2026-12-06 found untested ----------------------


def test_a_flag_is_not_an_integer():
    # bool is an int subclass: True passed by mistake must not read as 1
    with pytest.raises(BadInput, match="n must be an integer >= 0, got True"):
        check_int("n", True, 0)
    assert check_int("n", 1, 0) == 1


def test_a_file_name_holds_no_backslash():
    # a backslash is Windows' path separator: the name would leave its folder there
    with pytest.raises(BadInput, match=r"without '/', '\\', a NUL"):
        check_file_name("frame name", "runs\\latency")
    assert check_file_name("frame name", "latency") == "latency"


def test_an_output_path_under_a_file_is_new_its_folder_checked_apart(tmp_path):
    # os.stat says ENOTDIR, not ENOENT; the caller's folder check names the file in the way
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "latency.csv"
    assert check_output_file("CSV path", path) == path


# ---- what the third independent mutation campaign (2026-12-06) found untested ----------------


def test_an_unhashable_value_is_none_of_the_choices():
    # `[...] in dict` raises TypeError: a list is no engine name
    with pytest.raises(BadInput, match=r"engine \['vllm-0.33.0'\] is not one of vllm-0.33.0"):
        check_choice("engine", ["vllm-0.33.0"], {"vllm-0.33.0": None})


def test_an_integer_may_equal_its_maximum():
    assert check_int("n", 5, 1, 5) == 5
    with pytest.raises(BadInput, match="n must be an integer in 1..5, got 6"):
        check_int("n", 6, 1, 5)


def test_an_empty_path_is_refused():
    # Path("") is the current folder: an empty --out must not write there
    with pytest.raises(BadInput, match="out must be a non-empty path, got ''"):
        check_path("out", "")


def test_an_output_path_that_is_a_folder_is_refused(tmp_path):
    # os.replace onto a folder fails with IsADirectoryError naming the temporary file
    with pytest.raises(BadInput, match="is a folder; give a regular file or a new path"):
        check_output_file("CSV path", tmp_path)


# ---- what mutmut over errors.py (2026-12-06) found untested -----------------------------------


def test_an_unnamed_integer_check_leaves_the_name_to_argparse():
    # argparse prefixes "argument --max-num-seqs: " itself; a name or filler would repeat it
    with pytest.raises(BadInput) as caught:
        check_int("", -1, 0)
    assert str(caught.value) == "must be an integer >= 0, got -1"


def test_a_float_may_equal_either_bound():
    assert check_float("p", 0.0, 0.0, 1.0) == 0.0
    assert check_float("p", 1.0, 0.0, 1.0) == 1.0
    with pytest.raises(BadInput, match=r"^p must be a finite number in 0.0..1.0, got 1.5$"):
        check_float("p", 1.5, 0.0, 1.0)
    with pytest.raises(BadInput, match=r"^p must be a finite number >= 0.0, got -0.5$"):
        check_float("p", -0.5, 0.0)


def test_sizes_keep_the_upper_bound_of_each_entry_and_name_a_wrong_container():
    assert check_sizes("sizes", [1, 512], 1, 512) == (1, 512)
    with pytest.raises(BadInput, match=r"every sizes entry must be an integer in 1..512, got 513"):
        check_sizes("sizes", [1, 513], 1, 512)
    # a dict's order is its keys', not the user's list: the message names what was given
    with pytest.raises(BadInput, match=r"non-empty list or tuple of integers, got dict \{1: 2\}"):
        check_sizes("sizes", {1: 2}, 1)


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/dev/null", "a character device"), ("/dev/loop0", "a block device")],
)
def test_a_device_is_named_for_what_it_is(path, kind):
    if not os.path.exists(path):
        pytest.skip(f"{path} is not on this machine")
    with pytest.raises(
        UnreadableInput, match=rf"^--vllm-log '{path}' is {kind}; give a regular file$"
    ):
        check_input_file("--vllm-log", path)
    with pytest.raises(BadInput, match=rf"^CSV path '{path}' is {kind}; give a regular file or"):
        check_output_file("CSV path", path)


def test_a_socket_is_named_a_socket(tmp_path):
    import socket

    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(UnreadableInput, match=rf"'{path}' is a socket; give a regular file$"):
            check_input_file("--latency", path)


def test_a_nul_in_a_path_names_the_path():
    with pytest.raises(BadInput, match=r"^--latency 'a\\x00b' holds a NUL byte; give a file path$"):
        check_input_file("--latency", "a\0b")


def test_an_output_path_stat_cannot_read_names_the_path_and_the_reason(tmp_path):
    # a name longer than the file system's 255 bytes: ENAMETOOLONG, neither new nor writable
    path = tmp_path / ("x" * 300)
    with pytest.raises(
        GraphlabError, match=rf"^cannot write CSV path '{path}': File name too long$"
    ):
        check_output_file("CSV path", path)


def test_a_link_to_a_regular_file_is_read_as_that_file(tmp_path):
    # os.stat follows the link, as open() does: a log kept behind a symlink is a regular file
    target = tmp_path / "vllm.log"
    target.write_text("INFO\n")
    link = tmp_path / "latest.log"
    link.symlink_to(target)
    assert check_input_file("--vllm-log", link) == link


# ---- what mutmut over errors.py with its own test file found untested (2026-12-06, later) -----


@pytest.mark.parametrize("value", [True, "0.5", float("nan"), float("inf")])
def test_a_float_is_a_finite_real_number_not_a_flag_or_text(value):
    # True would read as 1.0, "0.5" would reach math.isfinite's TypeError, nan compares false
    with pytest.raises(BadInput, match=rf"^p must be a finite number >= 0, got {value!r}$"):
        check_float("p", value, 0)


def test_sizes_take_a_one_dimensional_array_as_python_ints():
    sizes = check_sizes("sizes", np.array([1, 8]), 1)
    assert sizes == (1, 8) and all(type(s) is int for s in sizes)
    # a 2-d array is no list of sizes: named as the container it is, not as a bad entry
    with pytest.raises(
        BadInput, match=r"^sizes must be a non-empty list or tuple of integers, got ndarray"
    ):
        check_sizes("sizes", np.array([[1, 8]]), 1)


@pytest.mark.parametrize("value", ["", ".", "..", ".hidden"])
def test_a_file_name_is_neither_empty_nor_hidden(value):
    with pytest.raises(BadInput, match=rf"^frame name must be .* got {value!r}$"):
        check_file_name("frame name", value)


def test_an_input_file_that_is_no_path_names_the_option():
    # a number: open() would take it for a descriptor (and close it)
    with pytest.raises(BadInput, match=r"^--vllm-log must be a non-empty path, got 1$"):
        check_input_file("--vllm-log", 1)


def test_an_instance_check_returns_the_value_or_names_its_type():
    frames = {"latency": None}
    assert check_instance("frames", frames, dict) is frames
    with pytest.raises(BadInput, match=r"^frames must be a dict, got list$"):
        check_instance("frames", [], dict)


def test_a_json_object_is_none_or_a_dict_json_can_write():
    config = {"cudagraph_mode": "FULL", "sizes": [1, 2]}
    assert check_json_object("compilation_config", config) is config
    assert check_json_object("compilation_config", None) is None
    with pytest.raises(BadInput, match=r"^compilation_config must be a dict, got str$"):
        check_json_object("compilation_config", "x")
    for bad in ({"a": object()}, {"a": float("nan")}):
        with pytest.raises(BadInput, match=r"^compilation_config must hold JSON values only: \w"):
            check_json_object("compilation_config", bad)
