"""Input for tests/test_cli.py: a plain synchronous test (no event loop to control)."""


def test_sync() -> None:
    assert sum([1, 2]) == 3
