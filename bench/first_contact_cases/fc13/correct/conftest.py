"""Root conftest: makes ``pacer`` importable (rootdir-relative) and registers markers."""


def pytest_configure(config):
    config.addinivalue_line("markers", "realtime: test measures real elapsed time")
    config.addinivalue_line("markers", "threads: test starts threads")
