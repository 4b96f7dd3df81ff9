"""The object-storage setting of the comparison benchmark: a moto S3 server and the latency
proxy (s3proxy.py) in front of it, both on 127.0.0.1, started and stopped by bench.py.

    with S3Bench(work_dir, delay_ms=20) as s3:
        prefix = s3.upload("a_nc4_daily_t1", files)   # s3://vzarr-bench/a_nc4_daily_t1/
        s3.reset()                                   # zero the proxy's counters
        ... run a tool against s3.endpoint with s3.env() ...
        counts = s3.stats()                          # requests, bytes since the reset

The tools talk to the proxy (``endpoint``); the uploads and the output checks talk to moto
directly (``direct``), so they are neither delayed nor counted. Both servers are stopped
when the ``with`` block ends, also on errors, and at interpreter exit (atexit) should the
block be skipped; the proxy also stops by itself after ``max_seconds``.
"""

from __future__ import annotations

import atexit
import json
import os
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


class S3Bench:
    """moto.server and s3proxy.py on free loopback ports, one bucket."""

    def __init__(self, work: Path, delay_ms: float = 20.0, python: str = sys.executable,
                 max_seconds: float = 4 * 3600) -> None:
        self.work = Path(work)
        self.delay_ms = delay_ms
        self.python = python
        self.max_seconds = max_seconds
        self.moto: subprocess.Popen | None = None
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
        moto_port = free_port()
        with open(self.work / "moto.log", "wb") as log:
            self.moto = subprocess.Popen(
                [self.python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(moto_port)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_for_port(moto_port, self.moto, "moto.server")
        self.direct = f"http://127.0.0.1:{moto_port}"
        port_file = self.work / "s3proxy.port"
        port_file.unlink(missing_ok=True)
        (self.work / "s3proxy.access.log").unlink(missing_ok=True)
        with open(self.work / "s3proxy.log", "wb") as log:
            self.proxy = subprocess.Popen(
                [self.python, str(HERE / "s3proxy.py"), "--upstream", f"127.0.0.1:{moto_port}",
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
        self.client().create_bucket(Bucket=BUCKET)

    def close(self) -> None:
        stop(self.proxy)
        stop(self.moto)
        self.proxy = self.moto = None

    # --- data ---

    def client(self):
        """A boto3 S3 client talking to moto directly (not through the proxy)."""
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "s3", endpoint_url=self.direct, aws_access_key_id=KEY,
                aws_secret_access_key=SECRET, region_name=REGION,
                config=Config(max_pool_connections=8))
        return self._client

    def upload(self, name: str, files: list[str], jobs: int = 4) -> str:
        """Uploads files under s3://BUCKET/NAME/ (single PUTs, a few at a time); returns that
        prefix URL."""
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
