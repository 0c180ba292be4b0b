"""A result table's cells read the same whether pandas holds them or a CSV gave them back."""

import io
import math

import numpy as np
import pandas as pd

from augbench.analysis.cells import is_true, number


def test_a_flag_reads_the_same_from_a_frame_and_from_its_csv():
    frame = pd.DataFrame({"flag": [True, False, None, np.True_, np.False_]})
    back = pd.read_csv(io.StringIO(frame.to_csv(index=False)))
    assert [is_true(v) for v in frame["flag"]] == [True, False, False, True, False]
    assert [is_true(v) for v in back["flag"]] == [True, False, False, True, False]


def test_a_flag_that_was_not_measured_is_false_and_the_string_false_is_false():
    assert not is_true(math.nan)
    assert not is_true("")
    assert not is_true("False")
    assert is_true(" true ")


def test_a_number_cell_is_nan_where_it_is_empty_or_text():
    assert number("1.5") == 1.5
    assert number(2) == 2.0
    assert math.isnan(number(""))
    assert math.isnan(number("n/a"))
    assert math.isnan(number(None))
