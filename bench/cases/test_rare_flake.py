"""A rare flake (< 1% naturally): the notifier reads the session before it is stored, after one long step.

Storing the session takes 1 ms; the notifier, started first, gives it 4 ms. That margin holds
unless the test's step between starting the two is slow (over 3 ms), which happens when the
signing key has to be re-derived (pbkdf2, about 6 ms of CPU): about once in 250 runs.
"""

import asyncio
import hashlib
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "order_violation", "resource": "SESSION"}

SESSION: dict = {}


def signing_key() -> bytes:
    if random.random() < 0.004:  # the key cache expired: derive it again
        return hashlib.pbkdf2_hmac("sha256", b"secret", b"salt", 30000)
    return b"cached-key"


async def store_session() -> None:
    await asyncio.sleep(0.001)  # the session store's write
    SESSION["user"] = "ada"


async def notify() -> str:
    await asyncio.sleep(0.004)  # "the session is stored within 1 ms"
    return SESSION.get("user", "nobody")


@pytest.mark.asyncio
async def test_welcome_mail_names_user() -> None:
    SESSION.clear()
    notifier = asyncio.create_task(notify())
    await asyncio.sleep(0)  # the notifier starts its countdown
    signing_key()
    store = asyncio.create_task(store_session())
    recipient = await notifier
    await store
    assert recipient == "ada"
