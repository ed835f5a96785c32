import os
from collections import defaultdict as dd

COUNTER = 0
CACHE: dict = {}
A, (B, C) = 1, (2, 3)


def bump():
    global COUNTER
    COUNTER += 1
    CACHE["n"] = COUNTER


def shadow():
    A = 5
    return A + B


def reader():
    return [CACHE[k] for k in CACHE if k != os.sep]
