"""zarr-python's fused codec pipeline with the chunk bytes of a read fetched in bulk from
:class:`vzarr.store.VzarrStore`.

``vzarr.open_dataset`` opens the arrays of a reference file with this pipeline. zarr-python's
``FusedCodecPipeline`` reads a selection chunk by chunk: a ``get_sync`` call into the store,
then decoding and scattering, on a pool of one thread a core. On VzarrStore this pipeline
instead fetches the selection's chunks in blocks, each block with one call into Rust
(concurrent, nearby ranges of a source coalesced, the GIL released), the next block fetched on
a helper thread while the current one is decoded, and decodes in the calling thread: what is
left after the fetch holds the GIL, so a pool of threads only contends for it (set
``codec_pipeline.max_workers`` to use one anyway). Values, missing chunks (the fill value) and
errors are those of the fused pipeline; other stores, and codecs that read parts of a chunk
(sharding), go through the fused pipeline unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from zarr.core.codec_pipeline import FusedCodecPipeline
from zarr.core.config import config
from zarr.registry import register_pipeline
from zarr.storage._common import StorePath

from .store import VzarrStore, _buffer

__all__ = ["VzarrCodecPipeline"]

#: Decoded bytes of the chunks fetched in one call into Rust (a bound on the block's stored
#: bytes, which compressed chunks keep well below), and at most this many chunks a block.
BLOCK_BYTES = 64 << 20
BLOCK_CHUNKS = 4096
#: Chunks of the first block; each next block doubles, up to the bounds above, so decoding
#: starts early and the fetches after the first overlap it.
FIRST_BLOCK = 128


class _Fetched:
    """A chunk's bytes fetched beforehand, served as the fused pipeline asks a byte getter."""

    __slots__ = ("value",)

    def __init__(self, value: bytes | None) -> None:
        self.value = value

    def get_sync(self, *, prototype: Any = None, byte_range: Any = None) -> Any:
        if byte_range is not None:  # the whole-chunk path never asks for a range
            raise ValueError("a fetched chunk is served whole")
        return _buffer(prototype, self.value)


def _blocks(batch: list[tuple], chunk_bytes: int) -> Iterator[list[tuple]]:
    """`batch` cut into blocks of FIRST_BLOCK chunks, then twice as many as the block before,
    up to BLOCK_BYTES decoded bytes (and BLOCK_CHUNKS chunks) a block."""
    most = max(1, min(BLOCK_CHUNKS, BLOCK_BYTES // max(1, chunk_bytes)))
    n = min(FIRST_BLOCK, most)
    i = 0
    while i < len(batch):
        yield batch[i:i + n]
        i += n
        n = min(2 * n, most)


def _chunk_bytes(spec: Any) -> int:
    """Decoded bytes of a chunk of `spec` (0 when its dtype has no fixed size)."""
    try:
        item = spec.dtype.to_native_dtype().itemsize
    except (AttributeError, TypeError):
        item = 0
    return math.prod(spec.shape) * item


class VzarrCodecPipeline(FusedCodecPipeline):
    """``FusedCodecPipeline`` fetching a read's chunks from a VzarrStore in blocks, one call
    into Rust each, and decoding them in the calling thread."""

    def read_sync(
        self,
        batch_info: Iterable[tuple],
        out: Any,
        drop_axes: tuple[int, ...] = (),
        max_workers: int = 1,
    ) -> tuple:
        """As ``FusedCodecPipeline.read_sync``; whole chunks of a VzarrStore fetched in
        blocks first."""
        batch = list(batch_info)
        store = _vzarr_store(batch)
        partial = self.supports_partial_decode and hasattr(
            self.array_bytes_codec, "_decode_partial_sync")
        if store is None or self.sync_transform is None or partial:
            return super().read_sync(batch, out, drop_axes, max_workers)
        workers = config.get("codec_pipeline.max_workers", default=None)
        workers = max(1, int(workers)) if workers is not None else 1
        blocks = list(_blocks(batch, _chunk_bytes(batch[0][1])))

        def fetch(block: list[tuple]) -> list[bytes | None]:
            return store._inner.get_many([(bg.path, None) for bg, *_ in block])

        def decode(block: list[tuple], values: list[bytes | None]) -> tuple:
            fetched = [(_Fetched(v), *rest) for v, (_, *rest) in zip(values, block, strict=True)]
            return super(VzarrCodecPipeline, self).read_sync(fetched, out, drop_axes, workers)

        if len(blocks) == 1:  # nothing to overlap (e.g. a dask task's chunk): no helper thread
            return decode(blocks[0], fetch(blocks[0]))
        results: list = []
        with ThreadPoolExecutor(1, thread_name_prefix="vzarr-fetch") as pool:
            ahead: Future = pool.submit(fetch, blocks[0])
            for i, block in enumerate(blocks):
                values = ahead.result()
                if i + 1 < len(blocks):
                    ahead = pool.submit(fetch, blocks[i + 1])
                results.extend(decode(block, values))
        return tuple(results)


def _vzarr_store(batch: list[tuple]) -> VzarrStore | None:
    """The VzarrStore every chunk of `batch` is read from, or None."""
    if not batch:
        return None
    first = batch[0][0]
    store = first.store if isinstance(first, StorePath) else None
    if not isinstance(store, VzarrStore):
        return None
    if any(not isinstance(bg, StorePath) or bg.store is not store for bg, *_ in batch):
        return None
    return store


register_pipeline(VzarrCodecPipeline)
