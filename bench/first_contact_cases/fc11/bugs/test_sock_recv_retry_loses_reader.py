"""Model of https://github.com/python/cpython/issues/74250 (bpo-30064), as fixed by
https://github.com/python/cpython/pull/20369: after a cancelled ``sock_recv``, the
cleanup that unregisters its reader ran later, from a done callback, and removed
whatever reader was registered for the fd at that time, including the reader of
an immediate retry. The retry then never sees its data.

``legacy_sock_recv`` re-implements the loop method as it behaved between the two
fixes (3.8-era): try ``recv`` once, otherwise ``add_reader`` plus a done
callback that calls ``remove_reader(fd)``. The client waits for a reply with
``asyncio.wait(timeout=1.0)``, cancels and retries on timeout. The peer is a
thread that answers 0.1 s after the request. Under natural timing the reply
arrives before the timeout. If the reply lands after the timeout (a slow peer),
the retry registers its reader, the stale cleanup removes it, and the reply is
never read.
"""
import asyncio
import socket
import threading
import time

import pytest

REPLY_DELAY = 0.1


async def legacy_sock_recv(sock, n):
    loop = asyncio.get_running_loop()
    try:
        return sock.recv(n)
    except (BlockingIOError, InterruptedError):
        pass
    fut = loop.create_future()
    fd = sock.fileno()

    def on_readable():
        if fut.done():
            return
        try:
            data = sock.recv(n)
        except (BlockingIOError, InterruptedError):
            return
        except BaseException as exc:  # noqa: BLE001
            fut.set_exception(exc)
        else:
            fut.set_result(data)

    loop.add_reader(fd, on_readable)
    fut.add_done_callback(lambda f: loop.remove_reader(fd))
    return await fut


async def request(sock, payload):
    loop = asyncio.get_running_loop()
    await loop.sock_sendall(sock, payload)
    first = asyncio.ensure_future(legacy_sock_recv(sock, 1024))
    done, _ = await asyncio.wait([first], timeout=1.0)
    if done:
        return first.result()
    first.cancel()
    return await legacy_sock_recv(sock, 1024)


def peer(sock):
    data = sock.recv(1024)
    time.sleep(REPLY_DELAY)  # the server thinks
    sock.sendall(data.upper())


@pytest.mark.asyncio
async def test_reply_is_read():
    client, server = socket.socketpair()
    with client, server:
        client.setblocking(False)
        th = threading.Thread(target=peer, args=(server,))
        th.start()
        try:
            reply = await asyncio.wait_for(request(client, b"status?"), 5)
        except asyncio.TimeoutError:
            pytest.fail("reply never read: the retry's reader was unregistered")
        finally:
            await asyncio.to_thread(th.join, 10)
        assert reply == b"STATUS?"
