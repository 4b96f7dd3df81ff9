"""A latency-adding, request-counting, optionally failing HTTP/1.1 proxy in front of a local
S3 server.

    python s3proxy.py --upstream 127.0.0.1:PORT [--delay-ms 20] [--port 0]
                      [--port-file FILE] [--stats-file FILE] [--access-log FILE]
                      [--max-seconds 3600] [--faults SPEC]

Used by benches/compare (bench.py, the object-storage cases): the S3 clients under test
(vzarr's object_store, s3fs, obstore) talk to this proxy instead of the S3 server (moto),
so every request they make costs the configured delay and is counted.

What it does, per client connection (HTTP/1.1 keep-alive: any number of requests in a row):

  - reads one request (request line, headers, body framed by Content-Length or chunked
    transfer coding); answers "Expect: 100-continue" itself and drops that header;
  - sleeps --delay-ms (20 ms), then forwards the request unchanged (same Host header, so
    signatures stay valid) over its own persistent connection to the upstream server;
  - relays the response as it arrives: status line and headers unchanged, the body framed as
    upstream framed it (Content-Length, chunked, or none for HEAD/1xx/204/304); a body that
    upstream delimits by closing the connection is re-framed as chunked for an HTTP/1.1
    client so its connection stays open;
  - counts the request: by class (GET = object read, LIST = GET with ``list-type`` or any
    other bucket-level GET listing, HEAD, OTHER = anything else), by HTTP method, ranged
    GETs, response status classes, response body bytes (and the part of them that object
    GETs returned), bytes written to clients, requests per object key, and the time the
    upstream server took to answer (forwarding to response head, summed).

With --faults, some object reads, HEADs and listings fail as S3 services and networks fail
(the tests of vzarr's retries; tests/interop/test_faults.py). SPEC is a comma-separated list:

  503=P, 500=P          answer with that status and an S3 error body (SlowDown,
                        InternalError) instead of forwarding, with probability P
  reset=P               close the client connection without an answer (an RST)
  cut=P                 forward, then relay the response head and half its body and close
                        the connection (a body cut short)
  cut-list=K[+K...]     cut the body of the K-th listing (1-based, in arrival order)
  503-list=K[+K...]     answer the K-th listing with 503 SlowDown
  deny=TEXT             403 AccessDenied, every time, for object keys containing TEXT
  seed=N                the seed of the draws (default 0)

Probabilities apply to object GETs, HEADs and listings; the draws come from one seeded
generator in the order requests arrive. Faults are counted in the stats ("faults").

Control endpoints (neither delayed nor counted; S3 bucket names cannot start with "__"):

  GET /__stats            the counters as JSON
  GET /__stats?reset=1    the counters as JSON, then set to zero (atomically)

With --access-log, one line per forwarded request (seconds since the start, connection
number, class, method, target, Range header, status, response body bytes, upstream
seconds) and a "# reset" line at each reset, for seeing what a tool asked for and when.

It binds 127.0.0.1 only and forwards to a loopback upstream only. It stops on SIGTERM or
SIGINT, or by itself after --max-seconds, and then writes the counters to --stats-file
(when given). The port it listens on (a free one unless --port is given) is printed on
stdout as ``listening 127.0.0.1:PORT`` and written to --port-file.

test_s3proxy.py (next to this file, stdlib only) tests the framing and the counters.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from urllib.parse import parse_qs, urlsplit

MAX_HEAD = 64 * 1024  # bytes of request line + headers (S3 clients send about 1 KiB)
PIECE = 256 * 1024  # relay bodies in pieces of this size
NO_BODY_STATUS = {204, 304}
LIST_QUERY_KEYS = {"list-type", "prefix", "delimiter", "marker", "max-keys", "encoding-type",
                   "continuation-token", "start-after", "fetch-owner"}


class ProtocolError(Exception):
    """The peer sent something that is not HTTP/1.x as this proxy understands it."""


# --- counters -------------------------------------------------------------------------------


class Stats:
    """Counters of the requests forwarded since the last reset."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.since = time.time()
        self.requests = 0
        self.by_class: Counter[str] = Counter()
        self.by_method: Counter[str] = Counter()
        self.status: Counter[str] = Counter()
        self.ranged_gets = 0
        self.body_bytes = 0  # response bodies, all requests
        self.get_bytes = 0  # response bodies of object GETs: the bytes "fetched"
        self.wire_bytes = 0  # everything written to clients (heads + bodies)
        self.upstream_errors = 0
        self.upstream_seconds = 0.0  # forwarding to response head, summed: the server's time
        self.objects: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()

    def snapshot(self) -> dict:
        return {"since": self.since, "seconds": time.time() - self.since,
                "requests": self.requests,
                "by_class": {k: self.by_class.get(k, 0) for k in ("GET", "HEAD", "LIST", "OTHER")},
                "by_method": dict(self.by_method), "status": dict(self.status),
                "ranged_gets": self.ranged_gets, "body_bytes": self.body_bytes,
                "get_bytes": self.get_bytes, "wire_bytes": self.wire_bytes,
                "upstream_errors": self.upstream_errors,
                "upstream_seconds": self.upstream_seconds, "objects": dict(self.objects),
                "faults": dict(self.faults)}


def classify(method: str, target: str) -> tuple[str, str]:
    """(class, object key) of a request: GET (object), LIST, HEAD or OTHER, for path-style
    S3 URLs (/bucket/key). The key is "" for bucket-level requests."""
    parts = urlsplit(target)
    path = parts.path.lstrip("/")
    bucket, _, key = path.partition("/")
    query = parse_qs(parts.query, keep_blank_values=True)
    if method == "GET":
        if "list-type" in query:
            return "LIST", ""
        if not key:
            # ListObjects v1 (GET /bucket?prefix=...) or ListBuckets (GET /); other
            # bucket-level GETs (?location, ?versioning, ...) are not listings.
            return ("LIST", "") if set(query) <= LIST_QUERY_KEYS else ("OTHER", "")
        return ("GET", f"{bucket}/{key}") if not query else ("OTHER", f"{bucket}/{key}")
    if method == "HEAD":
        return "HEAD", f"{bucket}/{key}" if key else bucket
    return "OTHER", f"{bucket}/{key}" if key else bucket


# --- faults ----------------------------------------------------------------------------------

S3_ERRORS = {"503": ("503 Slow Down", "SlowDown", "Please reduce your request rate."),
             "500": ("500 Internal Server Error", "InternalError",
                     "We encountered an internal error. Please try again."),
             "403": ("403 Forbidden", "AccessDenied", "Access Denied")}


class Faults:
    """What --faults asks for, and the draws."""

    def __init__(self, spec: str) -> None:
        self.p = {"503": 0.0, "500": 0.0, "reset": 0.0, "cut": 0.0}
        self.list_faults: dict[int, str] = {}
        self.deny: list[str] = []
        seed = 0
        for item in filter(None, (x.strip() for x in spec.split(","))):
            name, sep, value = item.partition("=")
            if not sep:
                raise SystemExit(f"s3proxy: --faults: {item!r} is not NAME=VALUE")
            if name in self.p:
                self.p[name] = float(value)
            elif name in ("cut-list", "503-list"):
                for k in value.split("+"):
                    self.list_faults[int(k)] = name.removesuffix("-list")
            elif name == "deny":
                self.deny.append(value)
            elif name == "seed":
                seed = int(value)
            else:
                raise SystemExit(f"s3proxy: --faults: unknown fault {name!r}")
        if sum(self.p.values()) > 1:
            raise SystemExit("s3proxy: --faults: the probabilities add up to more than 1")
        self.rng = random.Random(seed)
        self.lists = 0

    def pick(self, klass: str, key: str) -> str | None:
        """The fault for a request of `klass` on `key` (None: forward it as it is)."""
        if klass not in ("GET", "HEAD", "LIST"):
            return None
        if klass == "LIST":
            self.lists += 1
            if self.lists in self.list_faults:
                return self.list_faults[self.lists]
        elif any(d in key for d in self.deny):
            return "403"
        r, acc = self.rng.random(), 0.0
        for kind, p in self.p.items():
            acc += p
            if r < acc:
                return kind
        return None


# --- HTTP/1.1 framing -------------------------------------------------------------------------


async def read_head(reader: asyncio.StreamReader) -> list[bytes] | None:
    """The start line and header lines of one message (without CRLFs); None at a clean end of
    stream before any byte of a new message."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial.strip():
            return None
        raise ProtocolError("connection closed inside a message head") from e
    except asyncio.LimitOverrunError as e:
        raise ProtocolError("message head too long") from e
    lines = raw[:-4].split(b"\r\n")
    while lines and not lines[0]:  # tolerate stray CRLFs between messages (RFC 9112 2.2)
        lines.pop(0)
    if not lines:
        return None
    return lines


def parse_headers(lines: list[bytes]) -> list[tuple[str, str]]:
    out = []
    for line in lines:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip():
            raise ProtocolError(f"bad header line {line[:80]!r}")
        out.append((name.decode("latin-1"), value.strip().decode("latin-1")))
    return out


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    """The last value of a header (case-insensitive), or None."""
    name = name.lower()
    found = None
    for k, v in headers:
        if k.lower() == name:
            found = v
    return found


def has_token(headers: list[tuple[str, str]], name: str, token: str) -> bool:
    name = name.lower()
    return any(k.lower() == name and token in [t.strip().lower() for t in v.split(",")]
               for k, v in headers)


def serialize_head(start: str, headers: list[tuple[str, str]]) -> bytes:
    return (start + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode(
        "latin-1")


async def read_body(reader: asyncio.StreamReader, headers: list[tuple[str, str]]) -> bytes:
    """A request body, whole, with its framing as sent (chunked bodies stay chunked)."""
    if has_token(headers, "transfer-encoding", "chunked"):
        out = bytearray()
        async for piece, _ in chunked_pieces(reader):
            out += piece
        return bytes(out)
    length = header(headers, "content-length")
    if length is None:
        return b""
    n = content_length(length)
    try:
        return await reader.readexactly(n)
    except asyncio.IncompleteReadError as e:
        raise ProtocolError("connection closed inside a request body") from e


def content_length(value: str) -> int:
    try:
        n = int(value.split(",")[0].strip())
    except ValueError as e:
        raise ProtocolError(f"bad Content-Length {value!r}") from e
    if n < 0:
        raise ProtocolError(f"bad Content-Length {value!r}")
    return n


async def chunked_pieces(reader: asyncio.StreamReader):
    """The raw bytes of a chunked body (size lines, data, CRLFs, trailers) in pieces, as
    (bytes, payload byte count) pairs: the count is the piece's length for chunk data, 0 for
    the framing."""
    while True:
        line = await reader.readuntil(b"\r\n")
        try:
            size = int(line.split(b";")[0].strip(), 16)
        except ValueError as e:
            raise ProtocolError(f"bad chunk size line {line[:40]!r}") from e
        yield line, 0
        if size == 0:
            while True:  # trailers up to an empty line
                t = await reader.readuntil(b"\r\n")
                yield t, 0
                if t == b"\r\n":
                    return
        left = size
        while left:
            piece = await reader.readexactly(min(left, PIECE))
            left -= len(piece)
            yield piece, len(piece)
        if await reader.readexactly(2) != b"\r\n":
            raise ProtocolError("chunk data not followed by CRLF")
        yield b"\r\n", 0


# --- the proxy ----------------------------------------------------------------------------


class Upstream:
    """One persistent connection to the upstream server, (re)opened on demand."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def ensure(self) -> None:
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection(
                self.host, self.port, limit=MAX_HEAD)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class Proxy:
    def __init__(self, upstream: tuple[str, int], delay: float, access_log=None,
                 faults: Faults | None = None) -> None:
        self.upstream = upstream
        self.delay = delay
        self.faults = faults
        self.stats = Stats()
        self.access_log = access_log  # a text file or None
        self.t0 = time.perf_counter()
        self.connections = 0

    def log(self, line: str) -> None:
        if self.access_log is not None:
            self.access_log.write(line + "\n")
            self.access_log.flush()

    async def handle(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        """Serves one client connection: requests in sequence until either side closes."""
        up = Upstream(*self.upstream)
        self.connections += 1
        conn = self.connections
        try:
            while True:
                lines = await read_head(creader)
                if lines is None:
                    break
                keep = await self.one_request(lines, creader, cwriter, up, conn)
                await cwriter.drain()
                if not keep:
                    break
        except (ProtocolError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ConnectionError, ValueError) as e:
            print(f"s3proxy: connection dropped: {type(e).__name__}: {e}", file=sys.stderr)
        except asyncio.CancelledError:
            pass  # the proxy is stopping; open connections just close
        finally:
            up.close()
            cwriter.close()

    async def one_request(self, lines: list[bytes], creader, cwriter, up: Upstream,
                          conn: int = 0) -> bool:
        """Forwards one request and relays its response; True if the client connection stays
        open for another request."""
        start = lines[0].decode("latin-1")
        try:
            method, target, version = start.split(" ")
        except ValueError as e:
            raise ProtocolError(f"bad request line {start[:80]!r}") from e
        headers = parse_headers(lines[1:])
        client_11 = version == "HTTP/1.1"
        client_keep = (not has_token(headers, "connection", "close")) if client_11 else \
            has_token(headers, "connection", "keep-alive")
        if target.startswith("/__stats"):
            return self.control(target, cwriter, client_keep)
        if has_token(headers, "expect", "100-continue"):
            cwriter.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            headers = [(k, v) for k, v in headers if k.lower() != "expect"]
        body = await read_body(creader, headers)
        await asyncio.sleep(self.delay)
        klass, key = classify(method, target)
        st = self.stats
        st.requests += 1
        st.by_class[klass] += 1
        st.by_method[method] += 1
        if key:
            st.objects[key] += 1
        if klass == "GET" and header(headers, "range") is not None:
            st.ranged_gets += 1
        fault = self.faults.pick(klass, key) if self.faults else None
        if fault == "cut" and method == "HEAD":
            fault = "reset"  # nothing to cut
        if fault:
            st.faults[fault] += 1
            self.log(f"{time.perf_counter() - self.t0:.4f} {conn} {klass} {method} {target} "
                     f"fault {fault}")
        if fault in S3_ERRORS:
            status, code, message = S3_ERRORS[fault]
            err = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                   f"<Message>{message}</Message><Resource>{target}</Resource>"
                   f"<RequestId>s3proxy</RequestId></Error>").encode()
            st.status[f"{status[0]}xx"] += 1
            cwriter.write(f"HTTP/1.1 {status}\r\nContent-Type: application/xml\r\n"
                          f"Content-Length: {len(err) if method != 'HEAD' else 0}\r\n\r\n"
                          .encode() + (err if method != "HEAD" else b""))
            return client_keep
        if fault == "reset":
            cwriter.transport.abort()
            return False
        request_bytes = serialize_head(start, headers) + body
        t0 = time.perf_counter()
        try:
            status_line, rheaders = await self.exchange(up, request_bytes)
            server_s = time.perf_counter() - t0
            st.upstream_seconds += server_s
        except (OSError, ProtocolError, asyncio.IncompleteReadError) as e:
            st.upstream_errors += 1
            msg = f"s3proxy: upstream failed: {type(e).__name__}: {e}".encode()
            cwriter.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
                          b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(msg), msg))
            st.status["5xx"] += 1
            up.close()
            return False
        status = int(status_line.split(" ")[1])
        st.status[f"{status // 100}xx"] += 1
        body_expected = method != "HEAD" and status not in NO_BODY_STATUS and status >= 200
        up_close = has_token(rheaders, "connection", "close") or status_line.startswith("HTTP/1.0")
        chunked = has_token(rheaders, "transfer-encoding", "chunked")
        length = header(rheaders, "content-length")
        reframe = body_expected and not chunked and length is None and client_11
        if reframe:
            rheaders = rheaders + [("Transfer-Encoding", "chunked")]
        # Connection and Keep-Alive are hop-by-hop: this proxy decides about the client's.
        rheaders = [(k, v) for k, v in rheaders if k.lower() not in ("connection", "keep-alive")]
        delimited = not body_expected or chunked or length is not None or reframe
        keep = client_keep and delimited
        if not keep:
            rheaders.append(("Connection", "close"))
        head = serialize_head(status_line, rheaders)
        cwriter.write(head)
        st.wire_bytes += len(head)
        payload = 0
        if fault == "cut" and body_expected:
            # Half the body (whatever its framing), then the connection is gone.
            whole = await self.read_whole(up.reader, chunked, length)
            cwriter.write(whole[: len(whole) // 2])
            await cwriter.drain()
            cwriter.transport.abort()
            up.close()
            return False
        if body_expected:
            if chunked:
                payload = await self.relay_chunked(up.reader, cwriter)
            elif length is not None:
                payload = await self.relay_exact(up.reader, cwriter, content_length(length))
            else:
                payload = await self.relay_to_eof(up.reader, cwriter, reframe)
                up_close = True
        st.body_bytes += payload
        if klass == "GET":
            st.get_bytes += payload
        self.log(f"{t0 - self.t0:.4f} {conn} {klass} {method} {target} "
                 f"{header(headers, 'range') or '-'} {status} {payload} {server_s:.4f}")
        if up_close:
            up.close()
        return keep

    async def exchange(self, up: Upstream, request_bytes: bytes) -> tuple[str, list]:
        """Sends one request upstream and reads the response head (skipping interim 1xx
        responses). A persistent connection that upstream closed while idle is reopened
        once, when no byte of a response has arrived."""
        for attempt in (0, 1):
            fresh = up.writer is None or up.writer.is_closing()
            await up.ensure()
            try:
                up.writer.write(request_bytes)
                await up.writer.drain()
                lines = await read_head(up.reader)
                if lines is None:
                    raise ConnectionResetError("upstream closed the connection")
            except (ConnectionError, ProtocolError):
                up.close()
                if attempt == 1 or fresh:
                    raise
                continue
            while True:
                status_line = lines[0].decode("latin-1")
                if not status_line.startswith("HTTP/1."):
                    raise ProtocolError(f"bad status line {status_line[:80]!r}")
                status = int(status_line.split(" ")[1])
                if status >= 200 or status == 101:
                    return status_line, parse_headers(lines[1:])
                lines = await read_head(up.reader)  # an interim 1xx: wait for the real one
                if lines is None:
                    raise ConnectionResetError("upstream closed after an interim response")
        raise AssertionError("unreachable")

    async def read_whole(self, reader, chunked: bool, length: str | None) -> bytes:
        """A response body from upstream, as framed on the wire."""
        if chunked:
            out = bytearray()
            async for piece, _ in chunked_pieces(reader):
                out += piece
            return bytes(out)
        if length is not None:
            return await reader.readexactly(content_length(length))
        return await reader.read()

    async def relay_exact(self, reader, cwriter, n: int) -> int:
        left = n
        while left:
            piece = await reader.readexactly(min(left, PIECE))
            left -= len(piece)
            cwriter.write(piece)
            self.stats.wire_bytes += len(piece)
            await cwriter.drain()
        return n

    async def relay_chunked(self, reader, cwriter) -> int:
        payload = 0
        async for piece, n in chunked_pieces(reader):
            cwriter.write(piece)
            self.stats.wire_bytes += len(piece)
            payload += n
            await cwriter.drain()
        return payload

    async def relay_to_eof(self, reader, cwriter, reframe: bool) -> int:
        payload = 0
        while True:
            piece = await reader.read(PIECE)
            if not piece:
                break
            payload += len(piece)
            out = b"%x\r\n%s\r\n" % (len(piece), piece) if reframe else piece
            cwriter.write(out)
            self.stats.wire_bytes += len(out)
            await cwriter.drain()
        if reframe:
            cwriter.write(b"0\r\n\r\n")
            self.stats.wire_bytes += 5
        return payload

    def control(self, target: str, cwriter, keep: bool) -> bool:
        parts = urlsplit(target)
        if parts.path != "/__stats":
            body, status = b"unknown control endpoint\n", "404 Not Found"
        else:
            snap = self.stats.snapshot()
            snap["delay_ms"] = self.delay * 1000
            if parse_qs(parts.query).get("reset") == ["1"]:
                self.stats.reset()
                self.log(f"# reset {time.perf_counter() - self.t0:.4f}")
            body, status = json.dumps(snap).encode(), "200 OK"
        cwriter.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(body)}\r\n"
                      f"Connection: {'keep-alive' if keep else 'close'}\r\n\r\n".encode()
                      + body)
        return keep


# --- process --------------------------------------------------------------------------------


def loopback(host: str) -> str:
    """host if it is a loopback address (127.0.0.0/8, ::1) or "localhost"; else an error."""
    if host == "localhost":
        return "127.0.0.1"
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise SystemExit(f"s3proxy: upstream {host!r} is not a loopback address")


def write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


async def serve(a) -> None:
    host, _, port = a.upstream.rpartition(":")
    access_log = open(a.access_log, "a") if a.access_log else None
    faults = Faults(a.faults) if a.faults else None
    proxy = Proxy((loopback(host), int(port)), a.delay_ms / 1000, access_log, faults)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", a.port, limit=MAX_HEAD)
    bound = server.sockets[0].getsockname()[1]
    if a.port_file:
        write_atomically(a.port_file, f"{bound}\n")
    print(f"listening 127.0.0.1:{bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), timeout=a.max_seconds)
    except asyncio.TimeoutError:
        print(f"s3proxy: stopping after --max-seconds {a.max_seconds}", file=sys.stderr)
    finally:
        server.close()
        if a.stats_file:
            write_atomically(a.stats_file, json.dumps(proxy.stats.snapshot()))
        if access_log is not None:
            access_log.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True, help="HOST:PORT of the S3 server (loopback)")
    ap.add_argument("--delay-ms", type=float, default=20.0,
                    help="added before forwarding each request (default 20)")
    ap.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    ap.add_argument("--port-file", help="write the port listened on into this file")
    ap.add_argument("--stats-file", help="write the counters here when stopping")
    ap.add_argument("--access-log", help="append one line per forwarded request to this file")
    ap.add_argument("--max-seconds", type=float, default=3600.0,
                    help="stop by itself after this long (default 3600)")
    ap.add_argument("--faults", default="",
                    help="fail some requests: 503=P,500=P,reset=P,cut=P,cut-list=K,"
                         "503-list=K,deny=TEXT,seed=N (see the module documentation)")
    a = ap.parse_args()
    if a.delay_ms < 0:
        raise SystemExit("s3proxy: --delay-ms must be >= 0")
    asyncio.run(serve(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
