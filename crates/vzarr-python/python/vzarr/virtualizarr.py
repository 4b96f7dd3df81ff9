"""A VirtualiZarr parser backed by vzarr's scanners (VirtualiZarr >= 2.8's parser protocol).

    from obstore.store import LocalStore
    from obspec_utils.registry import ObjectStoreRegistry
    from virtualizarr import open_virtual_dataset
    import vzarr.virtualizarr

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vds = open_virtual_dataset("file:///data/tas_202301.nc", registry=registry,
                               parser=vzarr.virtualizarr.Parser())

One parser for HDF5, NetCDF4 and NetCDF3: the format is sniffed from the file, as vzarr's
scanners do (``HDFParser`` and ``NetCDF3Parser`` are the same class). Chunk manifests cross
from Rust as flat buffers turned into numpy arrays, never one Python object per chunk; chunks
vzarr keeps inline (variable-length strings, compact datasets, small chunks) become
VirtualiZarr's inlined chunks.

Small chunks are treated as ``vzarr.build`` treats them (``small_chunks="inline"``): adjacent
uncompressed chunks merged into larger virtual chunks (only where the grid stays regular, as
VirtualiZarr's manifests must be), arrays whose references would stay tiny kept inline. The
merged and inline chunk shapes follow each file's length, and VirtualiZarr concatenates only
arrays of equal chunk shapes: to combine files of different lengths with
``open_virtual_mfdataset``, pass ``small_chunks="keep"`` (or let ``vzarr.build`` combine them,
which handles any lengths).

The file is read through the store the ``registry`` resolves its URL to, when that is one of
obstore's (S3Store, GCSStore, AzureStore, HTTPStore, LocalStore: recreated in vzarr from its
configuration, once per store, so its endpoint, credentials, prefix and client options hold);
through vzarr's own byte layer with the standard credential chain of each cloud when the
registry gives another kind of store; local files directly. A URL the registry does not
resolve raises its ValueError, as VirtualiZarr's parsers do. The ``registry`` is handed to the
returned ManifestStore, which reads chunk data through it.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from . import _vzarr

__all__ = ["Parser", "HDFParser", "NetCDF3Parser"]

# Most metadata objects a parser keeps for reuse (they are small; the bound only keeps a
# parser over a catalog of ever-different files from growing without end).
_METADATA_CACHE = 4096


def _group_tree(groups: dict[str, dict], arrays: dict[str, Any]):
    from virtualizarr.manifests import ManifestGroup

    def build(prefix: str) -> ManifestGroup:
        depth = 0 if prefix == "" else prefix.count("/") + 1
        mine = {p.rsplit("/", 1)[-1]: a for p, a in arrays.items()
                if (p.rsplit("/", 1)[0] if "/" in p else "") == prefix}
        subgroups = {p.rsplit("/", 1)[-1]: build(p) for p in groups
                     if p != "" and p.count("/") == depth
                     and (p.rsplit("/", 1)[0] if "/" in p else "") == prefix}
        return ManifestGroup(arrays=mine, groups=subgroups, attributes=groups.get(prefix, {}))

    return build("")


class Parser:
    """Parses an HDF5, NetCDF4 or NetCDF3 file into a VirtualiZarr ``ManifestStore``.

    Options are those of ``vzarr.build`` that apply to one file: ``strict`` (raise instead of
    leaving out variables the scanner cannot reference), ``file_timeout`` (seconds),
    ``split_contiguous`` and ``max_string_bytes`` (bytes, or text like "4MiB"),
    ``small_chunks`` ("inline", "merge" or "keep"), ``chunk_target``, ``inline_max`` and
    ``inline_total``. Variables left out, and arrays left referenced in small pieces, are
    listed in ``self.warnings`` after a call.
    """

    def __init__(self, *, strict: bool = False, file_timeout: int = 600,
                 split_contiguous: int | str | None = None,
                 max_string_bytes: int | str | None = None,
                 small_chunks: str | None = None,
                 chunk_target: int | str | None = None,
                 inline_max: int | str | None = None,
                 inline_total: int | str | None = None) -> None:
        self.strict = strict
        self.file_timeout = file_timeout
        self.split_contiguous = split_contiguous
        self.max_string_bytes = max_string_bytes
        self.small_chunks = small_chunks
        self.chunk_target = chunk_target
        self.inline_max = inline_max
        self.inline_total = inline_total
        self.warnings: list[str] = []
        # obstore stores recreated in vzarr, by the id of the user's store (kept alive here so
        # the id stays theirs).
        self._stores: dict[int, tuple[Any, Any]] = {}
        # Zarr metadata objects by their JSON text: the files of an archive mostly share
        # their arrays' metadata, and zarr-python's parsing of it costs more than the scan.
        # The objects are immutable, so sharing them between ManifestArrays is safe.
        self._metadata: dict[str, Any] = {}

    def _through(self, url: str, registry: Any) -> dict[str, Any]:
        """The store and path a remote ``url`` is read through ({} for vzarr's own clients)."""
        scheme = url.split("://", 1)[0] if "://" in url else "file"
        if scheme == "file":
            return {}
        store, path = registry.resolve(url)
        if not type(store).__module__.startswith("obstore"):
            return {}
        got = self._stores.get(id(store))
        if got is None or got[0] is not store:
            got = (store, _vzarr.Store(store))
            self._stores[id(store)] = got
        return {"store": got[1], "path": str(path)}

    def __call__(self, url: str, registry: Any):
        from virtualizarr.manifests import ChunkManifest, ManifestArray, ManifestStore
        from virtualizarr.manifests.manifest import INLINED_CHUNK_PATH, MISSING_CHUNK_PATH
        from zarr.core.metadata.v3 import ArrayV3Metadata

        groups_json, arrays, warnings = _vzarr.scan_manifests(
            url,
            strict=self.strict,
            file_timeout=self.file_timeout,
            split_contiguous=None if self.split_contiguous is None else str(self.split_contiguous),
            max_string_bytes=None if self.max_string_bytes is None else str(self.max_string_bytes),
            small_chunks=self.small_chunks,
            chunk_target=None if self.chunk_target is None else str(self.chunk_target),
            inline_max=None if self.inline_max is None else str(self.inline_max),
            inline_total=None if self.inline_total is None else str(self.inline_total),
            **self._through(url, registry),
        )
        self.warnings = list(warnings)
        marrs = {}
        for path, meta, grid, ids, offsets, lengths, sources, inline in arrays:
            shape = tuple(grid)
            ids = np.frombuffer(ids, dtype="<u4").reshape(shape)
            # Source ids index this table: the sources, then inline, then missing.
            table = np.array([*sources, INLINED_CHUNK_PATH, MISSING_CHUNK_PATH],
                             dtype=np.dtypes.StringDType())
            index = np.where(ids == 0xFFFFFFFF, len(sources) + 1,
                             np.where(ids == 0xFFFFFFFE, len(sources), ids)).astype(np.intp)
            manifest = ChunkManifest.from_arrays(
                paths=table[index.reshape(-1)].reshape(shape),
                offsets=np.frombuffer(offsets, dtype="<u8").astype(np.uint64).reshape(shape),
                lengths=np.frombuffer(lengths, dtype="<u8").astype(np.uint64).reshape(shape),
                validate_paths=False,
                inlined={tuple(i): bytes(b) for i, b in inline},
            )
            metadata = self._metadata.get(meta)
            if metadata is None:
                metadata = ArrayV3Metadata.from_dict(json.loads(meta))
                if len(self._metadata) >= _METADATA_CACHE:
                    self._metadata.clear()
                self._metadata[meta] = metadata
            marrs[path] = ManifestArray(metadata=metadata, chunkmanifest=manifest)
        group = _group_tree(json.loads(groups_json), marrs)
        return ManifestStore(group=group, registry=registry)


HDFParser = Parser
NetCDF3Parser = Parser
