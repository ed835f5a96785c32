"""Model of https://github.com/empicano/aiomqtt/issues/5 ("Not receiving first few Retained
messages after subscribing": the maintainer points at the race between subscribing and starting to
listen for messages).

A broker (a plain thread, standing in for a remote MQTT broker) answers SUB with SUBACK after 0.1 s
and sends the topic's retained message 0.05 s later. The client has a reader task that resolves the
SUBACK future and hands MSG lines to the listeners registered at that moment (none -> dropped). The
application does `await client.subscribe(topic)` and only then registers its listener.

Under natural timing the application resumes after SUBACK and registers its listener long before
the retained message arrives. Bad interleaving: both lines are already in the socket buffer when the
reader task runs (the loop was busy for 0.05 s or more around the SUBACK's arrival); readline()
returns the second line without suspending, so the reader dispatches the retained message before
the application task resumes, and the message is dropped.
"""
import asyncio
import socket
import threading
import time

import pytest


def broker_thread(listener):
    conn, _ = listener.accept()
    with conn:
        f = conn.makefile("rb")
        topic = f.readline().split()[1].decode()
        time.sleep(0.1)  # auth/ACL check
        conn.sendall(f"SUBACK {topic}\n".encode())
        time.sleep(0.05)  # retained-store lookup
        conn.sendall(f"MSG {topic} firmware=1.4.2\n".encode())
        f.readline()  # wait for the client to hang up


class Client:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.listeners, self.pending, self.dropped = {}, {}, []
        self.task = asyncio.create_task(self._read())

    async def _read(self):
        while line := await self.reader.readline():
            kind, topic, *rest = line.decode().split()
            if kind == "SUBACK":
                self.pending.pop(topic).set_result(None)
            elif topic in self.listeners:
                self.listeners[topic].put_nowait(rest[0])
            else:
                self.dropped.append(rest[0])

    async def subscribe(self, topic):
        fut = self.pending[topic] = asyncio.get_running_loop().create_future()
        self.writer.write(f"SUB {topic}\n".encode())
        await fut

    def listen(self, topic):
        q = self.listeners[topic] = asyncio.Queue()
        return q


@pytest.mark.asyncio
async def test_retained_message_reaches_the_subscriber():
    listener = socket.create_server(("127.0.0.1", 0))
    thread = threading.Thread(target=broker_thread, args=(listener,), daemon=True)
    thread.start()
    reader, writer = await asyncio.open_connection(*listener.getsockname())
    client = Client(reader, writer)
    try:
        await asyncio.wait_for(client.subscribe("device/7/config"), 20)
        messages = client.listen("device/7/config")
        got = await asyncio.wait_for(messages.get(), 2)
        assert got == "firmware=1.4.2"
    except asyncio.TimeoutError:
        pytest.fail(f"retained message lost; dropped before listening: {client.dropped}")
    finally:
        writer.close()
        await writer.wait_closed()
        client.task.cancel()
        await asyncio.gather(client.task, return_exceptions=True)
        thread.join(5)
        listener.close()
