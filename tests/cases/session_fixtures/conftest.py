"""Session-scoped fixtures of four kinds (tests/test_session_fixtures.py). Each says which process
made it: under pytest, the session's own; under affidavit, the worker that forks the runs when it
was made once for them all, else each run."""

import os
import queue
import threading

import pytest


@pytest.fixture(scope="session")
def made_once():
    """Pure in-memory work (a certificate store, a parsed schema): made once per session."""
    return {"pid": os.getpid(), "items": []}


@pytest.fixture(scope="session")
def writes_the_project(request):
    """Writes a file next to the tests and removes it at teardown: its teardown must run in every
    run that made it, or the file stays in the user's project."""
    path = os.path.join(str(request.config.rootpath), "made_by_fixture.txt")
    with open(path, "w") as f:
        f.write("x")
    yield os.getpid()
    os.remove(path)


@pytest.fixture(scope="session")
def starts_a_thread():
    """A server thread: a forked copy would not have it."""
    requests: "queue.Queue[int]" = queue.Queue()
    answers: "queue.Queue[int]" = queue.Queue()

    def serve() -> None:
        while True:
            n = requests.get()
            if n < 0:
                return
            answers.put(n * 2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield os.getpid(), requests, answers
    requests.put(-1)
    thread.join()
