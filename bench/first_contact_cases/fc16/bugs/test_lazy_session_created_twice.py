"""Two requests lazily create the shared HTTP session at the same time.

Modelled on Osmantic/ODS#1588 (a `_get_aio_session()` helper checked
`session is None`, then awaited the creation, so concurrent callers each
created a session and leaked the earlier ones; fixed with an asyncio.Lock and
a re-check) and openai/openai-agents-python#3820 (two coroutines both saw
`_session_id is None` during lazy initialisation and split the history).

Only tasks are involved, no threads.  Request A finds no session and awaits
the handshake (a 2 ms timer).  Request B parses its JSON body cooperatively
(in chunks with `await asyncio.sleep(0)` between them) and then asks for the
session.  If B's parse outlasts the handshake, B reuses A's session; if B is
a little faster, it also sees `None` and opens a second session.

Kind: race (tasks only; check-then-act across an await).
"""
import asyncio
import json

import pytest

HANDSHAKE = 0.002
CHUNKS = 26
BODY_CHUNK = json.dumps([{"id": i, "sku": f"sku-{i}", "qty": i % 9} for i in range(275)])


class Session:
    def __init__(self, n):
        self.n = n
        self.closed = False


class Client:
    def __init__(self):
        self.session = None
        self.created = []

    async def get_session(self):
        if self.session is None:  # BUG: no lock, no re-check after the await
            await asyncio.sleep(HANDSHAKE)  # TLS handshake
            s = Session(len(self.created) + 1)
            self.created.append(s)
            self.session = s
        return self.session


async def handle(client, chunks):
    items = []
    for _ in range(chunks):
        items.extend(json.loads(BODY_CHUNK))
        await asyncio.sleep(0)
    session = await client.get_session()
    return session.n, len(items)


@pytest.mark.asyncio
async def test_one_session_is_shared():
    client = Client()
    results = await asyncio.gather(handle(client, 0), handle(client, CHUNKS))
    assert len(client.created) == 1, f"{len(client.created)} sessions were opened"
    assert {n for n, _ in results} == {1}
