"""A real pytest file for tests/reports_in/test_format_junit.py: run with --junitxml.

Copied into tmp_path as test_outcomes.py: a failure whose teardown also errors
(pytest writes two <testcase> for it), a pass whose teardown errors, xfail,
xpass and strict xpass.
"""

import pytest


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown broke")


def test_fails_then_teardown_errors(broken_teardown):
    assert 1 == 2, "one is not two"


def test_passes_then_teardown_errors(broken_teardown):
    pass


@pytest.mark.xfail(reason="bug 12")
def test_expected_failure():
    assert 0


@pytest.mark.xfail(reason="bug 13")
def test_unexpected_pass():
    pass


@pytest.mark.xfail(reason="bug 14", strict=True)
def test_unexpected_pass_strict():
    pass
