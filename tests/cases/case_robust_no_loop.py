"""Tests `affidavit explore` cannot explore (tests/test_plugin_robust.py): they run no asyncio
loop, and one of them fails on its own."""


def test_plain_sum():
    assert sum([1, 2]) == 3


def test_fails_on_its_own():
    assert [1, 2] == [1, 3], "the test's own failure"
