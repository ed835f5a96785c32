"""pytest's configuration for affidavit's Python tests (none so far).

What the tests share (the repository's path, the engine's, the one way to run it) is in helpers.py,
not here: this file is loaded by every pytest run rooted in the repository, the engine's workers
running tests/cases/ and examples/ included, so it stays empty of anything a worker need not import.
"""
