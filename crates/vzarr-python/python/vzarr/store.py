"""A read-only zarr-python store over a reference file or an Icechunk repository, backed by
vzarr's Rust reader.

    >>> import xarray as xr, zarr
    >>> from vzarr.store import VzarrStore
    >>> store = VzarrStore("tas.json", allow_prefixes="/data/archive/")
    >>> ds = xr.open_zarr(store, consolidated=True, zarr_format=3, chunks=None)

The references are parsed once, in Rust (about 20 bytes a reference; no Python object per
reference), and every URL they name is checked against the allowed prefixes before anything
is read (``NotAllowedError`` otherwise), as ``vzarr verify`` checks them. Keys resolve in Rust;
chunk bytes come from local files or object stores (s3://, gs://, az://, http(s)://) through
object_store, with the GIL released. The ``get`` calls zarr-python makes in one turn of its
event loop (its codec pipeline asks for many chunks at once) are served by one call into Rust
on a worker thread, which fetches them concurrently, nearby ranges of one source coalesced.

An Icechunk repository (a directory, or s3://, gs://, az://bucket/prefix) is read one key at
a time: opening reads one snapshot's documents and commit, not its manifests, and each
chunk's reference is looked up when it is asked for. The same prefix rules hold: the sources
the commit records are checked when the store opens, and every source a reference names
before any of its bytes is read, whatever virtual chunk containers the repository declares
(``NotAllowedError`` from the read otherwise).

A directory of kerchunk's Parquet references is read as fsspec's ``LazyReferenceMapper``
reads it: opening reads its ``.zmetadata``; a variable's record files are read (and the URLs
they hold checked) when a chunk of it is first asked for, then kept. A record file that
cannot be read, is corrupt or holds a refused URL fails the reads of its variable only, naming
the file. Listing every chunk key and ``references`` read every record file.

Every source the references (or the repository's commit) record is checked against its
recorded size, modification time and ETag before any of its bytes is used, as ``vzarr cat``
checks it, and an Icechunk reference's checksum (ETag or modification time) before its range
is read: a source rewritten since raises :class:`vzarr.StaleSourceError` naming it
(``ignore_stale=True`` reads it as it is now). References that record no state (kerchunk's
own) are read as they are.

The store pickles by location and its policy as resolved when it was made: the location and
local allowed prefixes made absolute, the prefixes of ``VZARR_ALLOW_PREFIXES`` and the
configuration file read then (a dask worker that unpickles it reads what the caller allowed,
whatever its own directory and environment), ``trust_references`` and ``ignore_stale``. It
gives dask a token from these and the reference file's size and modification time, so
``chunks={}`` does not hash a million references.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from zarr.abc.store import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
)
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype

from . import _vzarr

__all__ = ["VzarrStore"]

_Range = tuple[int, int, int] | None


def _range(byte_range: ByteRequest | None) -> _Range:
    """A zarr-python byte request in the form the Rust side takes."""
    if byte_range is None:
        return None
    if isinstance(byte_range, RangeByteRequest):
        return (0, byte_range.start, byte_range.end)
    if isinstance(byte_range, OffsetByteRequest):
        return (1, byte_range.offset, 0)
    if isinstance(byte_range, SuffixByteRequest):
        return (2, byte_range.suffix, 0)
    raise TypeError(f"unexpected byte range {byte_range!r}")


def _buffer(prototype: BufferPrototype | None, value: bytes | None) -> Buffer | None:
    """``value`` as a buffer of ``prototype`` (zarr-python's default when none), ``None`` for a
    missing key."""
    if value is None:
        return None
    return (prototype or default_buffer_prototype()).buffer.from_bytes(value)


def _prefix_list(allow_prefixes: str | os.PathLike[str] | Sequence[Any] | None) -> list[str]:
    if allow_prefixes is None:
        return []
    if isinstance(allow_prefixes, (str, os.PathLike)):
        return [os.fspath(allow_prefixes)]
    return [os.fspath(p) for p in allow_prefixes]


def _absolute(location: str) -> str:
    """A local path made absolute (against the current directory, now); URLs as they are."""
    if "://" in location:
        return location
    absolute = os.path.abspath(location)
    # A directory prefix keeps its trailing separator (it names what is below it).
    return absolute + os.sep if location.endswith(("/", os.sep)) else absolute


class VzarrStore(Store):
    """A read-only ``zarr.abc.store.Store`` over the kerchunk references at ``location`` (a path
    or an s3://, gs://, az://, http(s):// URL), or over one snapshot of the Icechunk repository
    there, read through vzarr's Rust reader.

    allow_prefixes: where the references may point (a local directory or URL prefix, or a
        list), besides ``VZARR_ALLOW_PREFIXES`` and ``$XDG_CONFIG_HOME/vzarr/allowed-prefixes``;
        the prefixes the references record only narrow these unless ``trust_references``.
    trust_references: also allow the prefixes the references record (references you made).
    ignore_stale: read sources that changed since the references were made, as they are now
        (refused with ``StaleSourceError`` by default).
    branch: of a repository, the branch whose tip is read (``"main"``).
    snapshot: of a repository, the snapshot read (an id; the branch's tip when ``None``).
    """

    supports_writes: bool = False
    supports_deletes: bool = False
    supports_partial_writes: bool = False
    supports_listing: bool = True

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        allow_prefixes: str | os.PathLike[str] | Sequence[Any] | None = None,
        trust_references: bool = False,
        ignore_stale: bool = False,
        branch: str = "main",
        snapshot: str | None = None,
        read_only: bool = True,
        _inner: Any = None,
        _resolved: bool = False,
    ) -> None:
        if not read_only:
            raise ValueError("VzarrStore is read-only")
        super().__init__(read_only=True)
        self._location = _absolute(os.fspath(location))
        if _resolved:
            # Unpickled: the policy as resolved where the store was made.
            self._allow = _prefix_list(allow_prefixes)
        else:
            self._allow = [_absolute(p) for p in _prefix_list(allow_prefixes)]
            self._allow += [p for p in _vzarr.configured_prefixes() if p not in self._allow]
        self._trust = bool(trust_references)
        self._ignore_stale = bool(ignore_stale)
        self._branch = branch
        if _inner is None:
            policy = {"allow_prefixes": self._allow, "trust_references": self._trust,
                      "ignore_stale": self._ignore_stale, "environment": False}
            if _vzarr.detect(self._location) == "icechunk":
                _inner = _vzarr.RepositoryStore(self._location, branch=branch,
                                                snapshot=snapshot, **policy)
            else:
                _inner = _vzarr.ReferenceStore(self._location, **policy)
        self._inner = _inner
        self._pending: dict[asyncio.AbstractEventLoop, list[tuple[list, asyncio.Future]]] = {}

    # --- identity, pickling, dask ------------------------------------------------------------

    @property
    def location(self) -> str:
        """Where the references were opened from."""
        return self._location

    @property
    def references(self) -> int | None:
        """How many chunks the references store (by reference or inline); ``None`` for a
        repository (counting would read every manifest)."""
        return getattr(self._inner, "references", None)

    @property
    def snapshot(self) -> str | None:
        """The snapshot read, for a repository (``None`` for a reference file)."""
        return getattr(self._inner, "snapshot", None)

    @property
    def allow_prefixes(self) -> list[str]:
        """Where the references may point: the prefixes given (local ones made absolute) and
        those of the environment and configuration file when the store was made."""
        return list(self._allow)

    def _key(self) -> tuple:
        return (self._location, tuple(self._allow), self._trust, self._ignore_stale,
                self._inner.stamp)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VzarrStore) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"VzarrStore({self._location!r})"

    def __getstate__(self) -> dict[str, Any]:
        # A repository reopens the same snapshot, whatever its branch's tip is then.
        return {"location": self._location, "allow_prefixes": self._allow,
                "trust_references": self._trust, "ignore_stale": self._ignore_stale,
                "branch": self._branch, "snapshot": self.snapshot}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["location"], allow_prefixes=state["allow_prefixes"],
                      trust_references=state["trust_references"],
                      ignore_stale=state["ignore_stale"],
                      branch=state.get("branch", "main"), snapshot=state.get("snapshot"),
                      _resolved=True)

    def __dask_tokenize__(self) -> tuple:
        """A cheap token: location, options and the reference file's size, modification
        time and ETag when opened, or the repository's snapshot (dask tokenizes the store when
        xarray chunks)."""
        return ("vzarr.VzarrStore", *self._key())

    def with_read_only(self, read_only: bool = False) -> VzarrStore:
        """The same store (read-only is all it can be)."""
        if not read_only:
            raise ValueError("VzarrStore is read-only")
        return VzarrStore(self._location, allow_prefixes=self._allow,
                          trust_references=self._trust, ignore_stale=self._ignore_stale,
                          branch=self._branch, _inner=self._inner, _resolved=True)

    # --- reading -----------------------------------------------------------------------------

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """Serves every request of the loop's turn with one call into Rust, off the loop."""
        pending = self._pending.pop(loop, [])
        if not pending:
            return
        requests = [r for items, _ in pending for r in items]

        async def run() -> None:
            try:
                values = await asyncio.to_thread(self._inner.get_many, requests)
            except Exception:
                if len(pending) == 1:
                    raise
                # One bad request does not fail the others: each on its own.
                for items, fut in pending:
                    try:
                        got = await asyncio.to_thread(self._inner.get_many, items)
                    except Exception as e:  # noqa: BLE001 (handed to the caller)
                        if not fut.done():
                            fut.set_exception(e)
                    else:
                        if not fut.done():
                            fut.set_result(got)
                return
            i = 0
            for items, fut in pending:
                if not fut.done():
                    fut.set_result(values[i:i + len(items)])
                i += len(items)

        def done(task: asyncio.Task) -> None:
            if task.cancelled():
                for _, fut in pending:
                    if not fut.done():
                        fut.cancel()
                return
            e = task.exception()
            if e is not None:
                for _, fut in pending:
                    if not fut.done():
                        fut.set_exception(e)

        loop.create_task(run()).add_done_callback(done)

    async def _get_many(self, items: list[tuple[str, _Range]]) -> list[bytes | None]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()
        pending = self._pending.get(loop)
        if pending is None:
            pending = self._pending[loop] = []
            loop.call_soon(self._flush, loop)
        pending.append((items, fut))
        return await fut

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        """The value at ``key`` (or its ``byte_range``), ``None`` when there is none."""
        (value,) = await self._get_many([(key, _range(byte_range))])
        return _buffer(prototype, value)

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        """The values of ``key_ranges``, in order, ``None`` for missing keys."""
        values = await self._get_many([(k, _range(r)) for k, r in key_ranges])
        return [_buffer(prototype, v) for v in values]

    def get_sync(
        self,
        key: str,
        *,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        """``get`` without the event loop (zarr-python's fused codec pipeline calls it)."""
        (value,) = self._inner.get_many([(key, _range(byte_range))])
        return _buffer(prototype, value)

    def set_sync(self, key: str, value: Buffer) -> None:
        """Refused: the store is read-only."""
        self._check_writable()

    def delete_sync(self, key: str) -> None:
        """Refused: the store is read-only."""
        self._check_writable()

    async def exists(self, key: str) -> bool:
        """Whether ``key`` holds a metadata document or a stored chunk (looked up off the
        event loop: it may read a repository's manifest or a Parquet record file)."""
        return await asyncio.to_thread(self._inner.exists, key)

    async def set(self, key: str, value: Buffer) -> None:
        """Refused: the store is read-only."""
        self._check_writable()

    async def delete(self, key: str) -> None:
        """Refused: the store is read-only."""
        self._check_writable()

    async def list(self) -> AsyncIterator[str]:
        """Every key: documents, then chunk keys (one per stored chunk)."""
        for k in await asyncio.to_thread(self._inner.list_prefix, ""):
            yield k

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """Every key that starts with ``prefix``."""
        for k in await asyncio.to_thread(self._inner.list_prefix, prefix):
            yield k

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """The names directly below the directory ``prefix`` (listed off the event loop)."""
        for k in await asyncio.to_thread(self._inner.list_dir, prefix):
            yield k

    # --- what opening needs ------------------------------------------------------------------

    def document_keys(self) -> list[str]:
        """The keys of the metadata documents."""
        return self._inner.document_keys()

    def document(self, key: str) -> bytes | None:
        """The metadata document at ``key``, as stored."""
        (value,) = self._inner.get_many([(key, None)])
        return value
