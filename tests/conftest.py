"""pytest's configuration for affidavit's Python tests (none so far).

What the tests share (the repository's path, the engine's, the one way to run it) is in helpers.py,
not here: this file is loaded by every pytest run rooted in the repository, the engine's workers
running tests/cases/ and examples/ included, so it stays empty of anything a worker need not import.
"""

# tests/cases/own_policy/conftest.py sets the event loop policy when imported (the case it holds is
# a project that chose its own loop): `pytest tests` must not recurse into it and change the loop of
# this session. Its test file is run by path, which collect_ignore does not stop.
collect_ignore = ["cases/own_policy"]
