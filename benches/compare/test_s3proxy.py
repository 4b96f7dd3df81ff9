"""Self-test of s3proxy.py's HTTP/1.1 handling and counters against a scripted upstream.

    python benches/compare/test_s3proxy.py     (stdlib only; any Python >= 3.11)

The upstream answers by path: /chunked (a chunked body with a trailer), /eof (a body ended by
closing the connection), /echo (the request body back, with Content-Length), /close (a short
body, then the upstream closes its side), anything else 204. Each test speaks raw HTTP to the
proxy over one connection, so keep-alive, pipelining and the framing are what is tested.
"""

from __future__ import annotations

import asyncio
import json
import sys
import unittest
from pathlib import Path

PROXY = Path(__file__).resolve().parent / "s3proxy.py"


async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        await answer(reader, writer)
    finally:
        writer.close()


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers requests on one connection until the client closes it (or a path says so)."""
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            break
        lines = head.decode().split("\r\n")
        path = lines[0].split()[1]
        hdr = {l.split(":")[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
        body = b""
        if hdr.get("transfer-encoding") == "chunked":
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip(), 16)
                if size == 0:
                    await reader.readuntil(b"\r\n")
                    break
                body += await reader.readexactly(size)
                await reader.readexactly(2)
        elif "content-length" in hdr:
            body = await reader.readexactly(int(hdr["content-length"]))
        if path.startswith("/bkt/chunked"):
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"5\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n")
        elif path.startswith("/bkt/eof"):
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-eof-body")
            await writer.drain()
            writer.close()
            return
        elif path.startswith("/bkt/echo"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        elif path.startswith("/bkt/close"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            writer.close()
            return
        else:
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()


async def read_response(reader: asyncio.StreamReader, head_only: bool = False) -> tuple[bytes, bytes]:
    """(head, body) of one response, the body de-chunked."""
    head = await reader.readuntil(b"\r\n\r\n")
    hl = head.lower()
    if head_only or b" 204 " in head.split(b"\r\n")[0] or b" 100 " in head.split(b"\r\n")[0]:
        return head, b""
    if b"transfer-encoding: chunked" in hl:
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":
                    pass
                return head, body
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    for line in hl.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return head, await reader.readexactly(int(line.split(b":")[1]))
    return head, await reader.read()


class ProxyBase(unittest.IsolatedAsyncioTestCase):
    """A scripted upstream, the proxy (with ARGS) in front of it, one client connection."""

    ARGS: list[str] = []

    async def asyncSetUp(self) -> None:
        self.server = await asyncio.start_server(upstream, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, str(PROXY), "--upstream", f"127.0.0.1:{port}", "--delay-ms", "1",
            "--max-seconds", "60", *self.ARGS, stdout=asyncio.subprocess.PIPE)
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        self.port = int(line.decode().rsplit(":", 1)[1])
        self.r, self.w = await asyncio.open_connection("127.0.0.1", self.port)

    async def asyncTearDown(self) -> None:
        self.w.close()
        self.proc.terminate()
        await self.proc.wait()
        self.server.close()
        await self.server.wait_closed()

    async def ask(self, raw: bytes, head_only: bool = False) -> tuple[bytes, bytes]:
        self.w.write(raw)
        await self.w.drain()
        return await asyncio.wait_for(read_response(self.r, head_only), 10)

    async def stats(self) -> dict:
        _, body = await self.ask(b"GET /__stats HTTP/1.1\r\nHost: x\r\n\r\n")
        return json.loads(body)



class ProxyTest(ProxyBase):
    async def test_framings_on_one_connection(self) -> None:
        _, body = await self.ask(b"GET /bkt/chunked HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(body, b"hello world")
        _, body = await self.ask(b"PUT /bkt/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
                                 b"chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
        self.assertEqual(body, b"abcde")
        head, _ = await self.ask(b"PUT /bkt/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                                 b"Expect: 100-continue\r\n\r\nwxyz")
        self.assertIn(b" 100 ", head)
        _, body = await read_response(self.r)
        self.assertEqual(body, b"wxyz")
        head, body = await self.ask(b"GET /bkt/eof HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(body, b"until-eof-body")  # re-framed as chunked: the connection stays
        self.assertNotIn(b"connection: close", head.lower())
        head, _ = await self.ask(b"HEAD /bkt/echo HTTP/1.1\r\nHost: x\r\n\r\n", head_only=True)
        self.assertIn(b"200", head)
        _, body = await self.ask(b"GET /bkt/close HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(body, b"ok")
        # Pipelined, after upstream closed its side: the proxy reconnects.
        self.w.write(b"GET /bkt/close HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET /bkt/chunked?list-type=2 HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual((await read_response(self.r))[1], b"ok")
        self.assertEqual((await read_response(self.r))[1], b"hello world")
        st = await self.stats()
        self.assertEqual(st["requests"], 8)
        self.assertEqual(st["by_class"], {"GET": 4, "HEAD": 1, "LIST": 1, "OTHER": 2})
        self.assertEqual(st["by_method"], {"GET": 5, "PUT": 2, "HEAD": 1})
        self.assertEqual(st["get_bytes"], len(b"hello world" b"until-eof-body" b"ok" b"ok"))
        self.assertEqual(st["upstream_errors"], 0)

    async def test_list_classes_and_reset(self) -> None:
        await self.ask(b"GET /bkt?list-type=2&prefix=a%2F HTTP/1.1\r\nHost: x\r\n\r\n")
        await self.ask(b"GET /bkt?prefix=a%2F HTTP/1.1\r\nHost: x\r\n\r\n")
        await self.ask(b"GET /bkt?location HTTP/1.1\r\nHost: x\r\n\r\n")
        await self.ask(b"GET /bkt/k HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n\r\n")
        _, body = await self.ask(b"GET /__stats?reset=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        st = json.loads(body)
        self.assertEqual(st["by_class"], {"GET": 1, "HEAD": 0, "LIST": 2, "OTHER": 1})
        self.assertEqual(st["ranged_gets"], 1)
        self.assertEqual(st["objects"], {"bkt/k": 1})
        self.assertEqual((await self.stats())["requests"], 0)

    async def test_http10_client_gets_close(self) -> None:
        self.w.write(b"GET /bkt/eof HTTP/1.0\r\nHost: x\r\n\r\n")
        await self.w.drain()
        raw = await asyncio.wait_for(self.r.read(), 10)  # the proxy closes after it
        self.assertTrue(raw.endswith(b"\r\n\r\nuntil-eof-body"))
        self.assertIn(b"connection: close", raw.lower())


class FaultsTest(ProxyBase):
    ARGS = ["--faults", "cut-list=2,503-list=3,deny=secret,seed=1"]

    async def reconnect(self) -> None:
        self.w.close()
        self.r, self.w = await asyncio.open_connection("127.0.0.1", self.port)

    async def test_listings_cut_failed_and_denied_keys(self) -> None:
        listing = b"GET /bkt/chunked?list-type=2 HTTP/1.1\r\nHost: x\r\n\r\n"
        _, body = await self.ask(listing)
        self.assertEqual(body, b"hello world")
        # The second listing: its head, half its body, then the connection is gone.
        self.w.write(listing)
        await self.w.drain()
        raw = await asyncio.wait_for(self.r.read(), 10)
        self.assertTrue(raw.startswith(b"HTTP/1.1 200 OK"), raw)
        self.assertNotIn(b"0\r\nX-T: 1", raw)  # the end of the chunked body never came
        await self.reconnect()
        head, body = await self.ask(listing)
        self.assertIn(b" 503 ", head)
        self.assertIn(b"<Code>SlowDown</Code>", body)
        for _ in range(2):  # denied every time, the connection kept
            head, body = await self.ask(b"GET /bkt/a/secret.nc HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertIn(b" 403 ", head)
            self.assertIn(b"<Code>AccessDenied</Code>", body)
        _, body = await self.ask(listing)  # the fourth listing: as it is
        self.assertEqual(body, b"hello world")
        st = await self.stats()
        self.assertEqual(st["faults"], {"cut": 1, "503": 1, "403": 2})


class ResetTest(ProxyBase):
    ARGS = ["--faults", "reset=1"]

    async def test_reset_answers_nothing(self) -> None:
        self.w.write(b"GET /bkt/echo HTTP/1.1\r\nHost: x\r\n\r\n")
        await self.w.drain()
        try:
            raw = await asyncio.wait_for(self.r.read(), 10)
        except ConnectionResetError:
            raw = b""
        self.assertEqual(raw, b"")
        # Not a fault: requests other than reads and listings pass.
        self.r, self.w = await asyncio.open_connection("127.0.0.1", self.port)
        _, body = await self.ask(b"PUT /bkt/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2"
                                 b"\r\n\r\nok")
        self.assertEqual(body, b"ok")
        self.assertEqual((await self.stats())["faults"], {"reset": 1})


if __name__ == "__main__":
    unittest.main()
