"""The object-storage setting of the benchmarks: an S3 server and the latency proxy
(s3proxy.py) in front of it, both on 127.0.0.1, started and stopped by the bench.

The server is s3s-fs (``s3s_fs=`` its binary, installed by benches/s3s-fs at a pinned
version): a concurrent S3 server over a local directory, a bucket per folder, so "uploading"
is linking the files into that folder. moto (``s3s_fs=None``) answers about one request at a
time (5-6 ms each here) and set most of the remote figures before s3s-fs was used; it stays
for the tests that need its API.

    with S3Bench(work_dir, delay_ms=20, s3s_fs=binary) as s3:
        prefix = s3.upload("a_nc4_daily_t1", files)   # s3://vzarr-bench/a_nc4_daily_t1/
        s3.reset()                                   # zero the proxy's counters
        ... run a tool against s3.endpoint with s3.env() ...
        counts = s3.stats()                          # requests, bytes since the reset

The tools talk to the proxy (``endpoint``); the uploads and the output checks talk to the
server directly (``direct``), so they are neither delayed nor counted. Both servers are stopped
when the ``with`` block ends, also on errors, and at interpreter exit (atexit) should the
block be skipped; the proxy also stops by itself after ``max_seconds``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUCKET = "vzarr-bench"
KEY = SECRET = "test"
REGION = "us-east-1"


class S3Error(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 60) -> None:
    """Waits until something accepts connections on 127.0.0.1:port, or fails if proc exits
    or the timeout passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise S3Error(f"{what} exited with code {proc.returncode} before listening")
            if time.monotonic() > deadline:
                raise S3Error(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")
            time.sleep(0.1)


def stop(proc: subprocess.Popen | None, timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL if the process has not exited within timeout."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


LOOPBACK_ROUTE = ["local", "127.0.0.1", "dev", "lo", "proto", "kernel", "scope", "host",
                  "src", "127.0.0.1", "table", "local"]


def loopback_quickack(on: bool) -> bool:
    """Turns delayed ACKs off (on=True) or back on for 127.0.0.1 (the route's ``quickack``
    attribute; root and iproute2 needed). Returns whether the route was changed.

    s3s-fs 0.14.1 does not set TCP_NODELAY: on a connection in use, the body of each response
    waits for the ACK of its head, which Linux delays by 40 ms. Every client keeping its
    connections (vzarr's object_store, s3fs, obstore, the proxy's upstream) then waits 40 ms
    a response: one scan thread of vzarr reads 300 small objects in 13.2 s instead of 0.49 s.
    No S3 service does that, so the benches turn it off while they run."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    argv = ["ip", "route", "change", *LOOPBACK_ROUTE] + (["quickack", "1"] if on else [])
    return subprocess.run(argv, capture_output=True).returncode == 0


class S3Bench:
    """An S3 server (s3s-fs, or moto.server) and s3proxy.py on free loopback ports, one
    bucket."""

    def __init__(self, work: Path, delay_ms: float = 20.0, python: str = sys.executable,
                 max_seconds: float = 4 * 3600, s3s_fs: str | None = None) -> None:
        self.work = Path(work)
        self.delay_ms = delay_ms
        self.python = python
        self.max_seconds = max_seconds
        self.s3s_fs = s3s_fs
        self.server_name = "s3s-fs" if s3s_fs else "moto"
        # s3s-fs: the directory served, a folder per bucket.
        self.root = self.work / "s3root"
        self.server: subprocess.Popen | None = None
        # Whether delayed ACKs are off on 127.0.0.1 while the server runs (loopback_quickack).
        self.quickack = False
        self.proxy: subprocess.Popen | None = None
        self.direct = self.endpoint = ""
        self._client = None

    # --- lifecycle ---

    def __enter__(self) -> "S3Bench":
        atexit.register(self.close)
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        server_port = free_port()
        if self.s3s_fs:
            (self.root / BUCKET).mkdir(parents=True, exist_ok=True)
            self.quickack = loopback_quickack(True)
            argv = [self.s3s_fs, "--host", "127.0.0.1", "--port", str(server_port),
                    "--access-key", KEY, "--secret-key", SECRET, str(self.root)]
        else:
            argv = [self.python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(server_port)]
        # s3s-fs logs every request at its default level: warnings only.
        env = {**os.environ, "RUST_LOG": "warn"}
        with open(self.work / f"{self.server_name}.log", "wb") as log:
            self.server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env)
        wait_for_port(server_port, self.server, self.server_name)
        self.direct = f"http://127.0.0.1:{server_port}"
        port_file = self.work / "s3proxy.port"
        port_file.unlink(missing_ok=True)
        (self.work / "s3proxy.access.log").unlink(missing_ok=True)
        with open(self.work / "s3proxy.log", "wb") as log:
            self.proxy = subprocess.Popen(
                [self.python, str(HERE / "s3proxy.py"), "--upstream", f"127.0.0.1:{server_port}",
                 "--delay-ms", str(self.delay_ms), "--port-file", str(port_file),
                 "--stats-file", str(self.work / "s3proxy.stats.json"),
                 "--access-log", str(self.work / "s3proxy.access.log"),
                 "--max-seconds", str(self.max_seconds)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if self.proxy.poll() is not None or time.monotonic() > deadline:
                raise S3Error(f"s3proxy.py did not start (see {self.work / 's3proxy.log'})")
            time.sleep(0.05)
        proxy_port = int(port_file.read_text())
        wait_for_port(proxy_port, self.proxy, "s3proxy.py")
        self.endpoint = f"http://127.0.0.1:{proxy_port}"
        if not self.s3s_fs:
            self.client().create_bucket(Bucket=BUCKET)

    def close(self) -> None:
        stop(self.proxy)
        stop(self.server)
        if self.quickack:
            loopback_quickack(False)
            self.quickack = False
        self.proxy = self.server = None

    # --- data ---

    def client(self):
        """A boto3 S3 client talking to the server directly (not through the proxy)."""
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "s3", endpoint_url=self.direct, aws_access_key_id=KEY,
                aws_secret_access_key=SECRET, region_name=REGION,
                config=Config(max_pool_connections=8))
        return self._client

    def upload(self, name: str, files: list[str], jobs: int = 4) -> str:
        """Uploads files under s3://BUCKET/NAME/ (s3s-fs: hard links, or copies, in its folder;
        moto: single PUTs, a few at a time); returns that prefix URL."""
        if self.s3s_fs:
            return self.link(name, files)
        from boto3.s3.transfer import TransferConfig

        single = TransferConfig(multipart_threshold=8 * 2**30, use_threads=False)
        client = self.client()

        def put(path: str) -> None:
            client.upload_file(path, BUCKET, f"{name}/{os.path.basename(path)}",
                               Config=single)

        with ThreadPoolExecutor(max_workers=jobs) as ex:
            list(ex.map(put, files))
        listed = client.list_objects_v2(Bucket=BUCKET, Prefix=f"{name}/", MaxKeys=1000)
        if listed.get("KeyCount", 0) != len(files):
            raise S3Error(f"uploaded {len(files)} files under {name}/, the bucket lists "
                          f"{listed.get('KeyCount', 0)}")
        return f"s3://{BUCKET}/{name}/"

    def link(self, name: str, files: list[str]) -> str:
        """s3s-fs: puts files under s3://BUCKET/NAME/ by linking them into the served folder
        (a copy where a link cannot be made); checks that the server lists them all."""
        folder = self.root / BUCKET / name
        folder.mkdir(parents=True, exist_ok=True)
        for path in files:
            dest = folder / os.path.basename(path)
            if dest.exists() and os.path.samefile(dest, path):
                continue
            dest.unlink(missing_ok=True)
            try:
                os.link(path, dest)
            except OSError:
                shutil.copyfile(path, dest)
        listed = self.count(name)
        if listed != len(files):
            raise S3Error(f"linked {len(files)} files under {name}/, the server lists {listed}")
        return f"s3://{BUCKET}/{name}/"

    def count(self, name: str) -> int:
        """Objects the server lists under NAME/ (all pages)."""
        pages = self.client().get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=f"{name}/")
        return sum(p.get("KeyCount", 0) for p in pages)

    # --- counters ---

    def _stats(self, reset: bool) -> dict:
        url = f"{self.endpoint}/__stats" + ("?reset=1" if reset else "")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no env proxies
        with opener.open(url, timeout=30) as r:
            return json.loads(r.read())

    def reset(self) -> None:
        """Sets the proxy's counters to zero."""
        self._stats(reset=True)

    def stats(self) -> dict:
        """The proxy's counters since the last reset."""
        return self._stats(reset=False)

    def env(self) -> dict:
        """The environment of a tool process: object_store's (and boto's) standard variables
        pointing at the proxy."""
        no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
        return {**os.environ, "AWS_ENDPOINT_URL": self.endpoint, "AWS_ALLOW_HTTP": "true",
                "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET,
                "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
                "NO_PROXY": no_proxy, "no_proxy": no_proxy}
