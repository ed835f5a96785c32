"""Older suites: unittest.IsolatedAsyncioTestCase with asyncSetUp / asyncTearDown."""
import asyncio
import unittest

import wire
from wire.rpc import RpcClient, RpcServerHandler, demo_methods
from wire.server import line_echo_handler


class EchoServerCase(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.server = await wire.serve_tcp(line_echo_handler, name="unittest-echo")
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.server.port)

    async def asyncTearDown(self):
        self.writer.close()
        await self.writer.wait_closed()
        await self.server.close()

    async def test_echo(self):
        self.writer.write(b"unittest\n")
        self.assertEqual(await asyncio.wait_for(self.reader.readline(), 20), b"unittest\r\n")

    async def test_quit_closes_from_the_server_side(self):
        self.writer.write(b"QUIT\n")
        self.assertEqual(await asyncio.wait_for(self.reader.readline(), 20), b"BYE\r\n")
        self.assertEqual(await asyncio.wait_for(self.reader.read(), 20), b"")


class RpcCase(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.server = await wire.serve_tcp(RpcServerHandler(demo_methods()), name="unittest-rpc")
        self.addAsyncCleanup(self.server.close)
        self.client = await RpcClient.connect("127.0.0.1", self.server.port)
        self.addAsyncCleanup(self.client.close)

    async def test_pipelined_calls(self):
        results = await asyncio.wait_for(asyncio.gather(
            self.client.call("sleep", 0.02, "b"), self.client.call("echo", "a")), 20)
        self.assertEqual(results, ["b", "a"])

    async def test_timeout(self):
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        with self.assertRaises(asyncio.TimeoutError):
            await self.client.call("sleep", 30, timeout=0.03)
        self.assertGreaterEqual(loop.time() - t0, 0.03 - 0.010)
