"""A real pytest file for tests/reports_in/test_format_junit.py: run with --junitxml.

Copied into tmp_path as test_sample.py: a pass, a failure, an error, a skip.
"""

import pytest


@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")


def test_pass():
    assert 1 + 1 == 2


def test_fail():
    assert 1 + 1 == 3, "math is off"


def test_error(broken):
    pass


@pytest.mark.skip(reason="no database")
def test_skip():
    pass


class TestGroup:
    def test_in_class(self):
        assert True
