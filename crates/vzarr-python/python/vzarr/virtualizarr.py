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

The constructors take VirtualiZarr 2.8's parser arguments, positionally and by keyword:
``HDFParser(group, drop_variables, reader_factory, links_and_references)`` and
``NetCDF3Parser(group, skip_variables)``; ``Parser`` takes the HDF parser's order and also
``skip_variables=``. vzarr's own options are keyword-only.

Small chunks are kept as stored by default (``small_chunks="keep"``), unlike ``vzarr.build``
(whose default is "inline"): VirtualiZarr concatenates only arrays of equal chunk shapes and
slices inlined chunks only whole, while merged and inlined chunk shapes follow each file's
length. With the default, every file set ``open_virtual_mfdataset`` combines with
VirtualiZarr's parsers combines with this one, and indexing within chunks works as with
theirs. ``small_chunks="inline"`` or ``"merge"`` give fewer, larger references for one file
(or files of equal lengths); ``vzarr.build`` combines files of any length either way.

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


def _group_tree(groups: dict[str, dict], arrays: dict[str, Any], root: str = "",
                dropped: set[str] = frozenset()):
    """The ManifestGroup of the group ``root`` ("" for the file's root) and those under it,
    without the members of ``root`` named in ``dropped``."""
    from virtualizarr.manifests import ManifestGroup

    def build(prefix: str) -> ManifestGroup:
        depth = 0 if prefix == "" else prefix.count("/") + 1
        mine = {p.rsplit("/", 1)[-1]: a for p, a in arrays.items()
                if (p.rsplit("/", 1)[0] if "/" in p else "") == prefix}
        subgroups = {p.rsplit("/", 1)[-1]: build(p) for p in groups
                     if p != "" and p.count("/") == depth
                     and (p.rsplit("/", 1)[0] if "/" in p else "") == prefix}
        if prefix == root:
            mine = {k: v for k, v in mine.items() if k not in dropped}
            subgroups = {k: v for k, v in subgroups.items() if k not in dropped}
        return ManifestGroup(arrays=mine, groups=subgroups, attributes=groups.get(prefix, {}))

    return build(root)


def _names(given: Any) -> set[str]:
    """A set of variable names from None, one name, or an iterable of names."""
    if given is None:
        return set()
    if isinstance(given, str):
        return {given}
    return set(given)


class Parser:
    """Parses an HDF5, NetCDF4 or NetCDF3 file, or a DMR++ sidecar, into a VirtualiZarr
    ``ManifestStore``.

    The arguments VirtualiZarr 2.8's ``HDFParser`` takes, in its order, mean the same here:

    group: the group whose variables are read (None, "" or "/": the root). Its subgroups come
        along as subgroups of the store, as with VirtualiZarr, and ``open_virtual_dataset``
        reads only the group's own variables. A path that is not a group raises ValueError;
        a NetCDF3 file has only the root group, so any other path raises ValueError.
    drop_variables: names of the group's variables (or subgroups) left out.
    reader_factory: accepted for VirtualiZarr's signature and not called: vzarr reads the
        file's bytes itself, through the registry's obstore store (see the module's notes).
    links_and_references: as VirtualiZarr's. False (the default): a dataset (or compound
        member) of object references raises NotImplementedError, attributes holding them
        are left out (listed in ``self.warnings``), a soft link to a dataset reads as a
        second copy of it, external links and second hard links are left out. True: object
        references are read as the paths of their targets relative to the node holding them
        ("" for a null one; datasets inline as strings marked
        ``"links_references": {"references": true}``, compound members as string fields,
        attributes as ``{"ref": {"node": path}}``), and soft links, external links and
        second hard links are recorded in their group's ``links_references`` attribute
        instead of followed (the draft Links and Object References convention and the
        ``ref`` convention, registered in ``zarr_conventions``). Region references raise
        NotImplementedError either way. ``vzarr.build`` reads object references by default
        and records links with ``record_links=True``.

    skip_variables (keyword): names left out, as NetCDF3Parser's ``skip_variables``; for
    HDF5 files the same as ``drop_variables``.

    vzarr's own options, keyword-only, are those of ``vzarr.build`` that apply to one file:
    ``strict`` (raise instead of leaving out variables the scanner cannot reference),
    ``file_timeout`` (seconds), ``split_contiguous`` and ``max_string_bytes`` (bytes, or text
    like "4MiB"), ``small_chunks`` ("keep", the default here; "inline" or "merge"),
    ``chunk_target``, ``inline_max`` and ``inline_total``; and ``data_url``, where the granule
    of a DMR++ sidecar is when not beside it (``{name}``: the sidecar's file name without
    ``.dmrpp``). A DMR++ sidecar is recognised by its content: ``open_virtual_dataset`` and
    ``open_virtual_mfdataset`` take sidecars' URLs as they take files'. Variables left out, and arrays
    left referenced in small pieces, are listed in ``self.warnings`` after a call. A file
    that cannot be parsed raises ``vzarr.ScanError``, which is also a ``ValueError``.
    """

    def __init__(self, group: str | None = None, drop_variables: Any = None,
                 reader_factory: Any = None, links_and_references: bool = False, *,
                 skip_variables: Any = None,
                 strict: bool = False, file_timeout: int = 600,
                 split_contiguous: int | str | None = None,
                 max_string_bytes: int | str | None = None,
                 small_chunks: str | None = "keep",
                 chunk_target: int | str | None = None,
                 inline_max: int | str | None = None,
                 inline_total: int | str | None = None,
                 data_url: str | None = None) -> None:
        self.group = group
        self.drop_variables = drop_variables
        self.skip_variables = skip_variables
        self.reader_factory = reader_factory
        self.links_and_references = links_and_references
        self.strict = strict
        self.file_timeout = file_timeout
        self.split_contiguous = split_contiguous
        self.max_string_bytes = max_string_bytes
        self.small_chunks = small_chunks
        self.chunk_target = chunk_target
        self.inline_max = inline_max
        self.inline_total = inline_total
        self.data_url = data_url
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
            links_and_references=bool(self.links_and_references),
            data_url=self.data_url,
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
        # A group's netCDF view (vzarr:netcdf) is written beside its attributes, never among
        # them (the arrays' views are in their metadata's extension field).
        groups = {p: {k: v for k, v in (a or {}).items() if k != "vzarr:netcdf"}
                  for p, a in json.loads(groups_json).items()}
        root = _group_path(self.group)
        if root and root not in groups:
            raise ValueError(_not_a_group(url, registry, self.group))
        dropped = _names(self.drop_variables) | _names(self.skip_variables)
        _drop_links(groups.get(root), dropped)
        group = _group_tree(groups, marrs, root, dropped)
        return ManifestStore(group=group, registry=registry)


def _drop_links(attributes: dict | None, dropped: set[str]) -> None:
    """Takes the links named in ``dropped`` out of a group's recorded links (as VirtualiZarr's
    ``drop_variables`` applies to links)."""
    links = (attributes or {}).get("links_references", {})
    if not dropped or not isinstance(links, dict) or not isinstance(links.get("links"), dict):
        return
    links["links"] = {k: v for k, v in links["links"].items() if k not in dropped}
    if not links["links"]:
        del attributes["links_references"]


def _group_path(group: str | None) -> str:
    """A group argument as a path of the scan's groups ("" for the root)."""
    return "" if group is None else "/".join(p for p in str(group).split("/") if p)


def _not_a_group(url: str, registry: Any, group: str | None) -> str:
    """Why ``group`` cannot be opened in the file at ``url`` (which has no such group)."""
    try:
        import obstore

        store, path = registry.resolve(url)
        magic = bytes(obstore.get_range(store, path, start=0, length=4))
    except Exception:  # noqa: BLE001 - only the message depends on it
        magic = b""
    if magic[:3] == b"CDF":
        return (f"{url}: a netCDF3 file has only a root group, so group={group!r} "
                "cannot be opened")
    return f"{url}: {group!r} is not an HDF Group in the file"


class HDFParser(Parser):
    """VirtualiZarr 2.8's ``HDFParser`` signature over vzarr's scanners (see :class:`Parser`:
    any supported format is read, NetCDF3 included)."""


class NetCDF3Parser(Parser):
    """VirtualiZarr 2.8's ``NetCDF3Parser`` signature, ``(group, skip_variables)``, over
    vzarr's scanners (see :class:`Parser`: any supported format is read, HDF5 included).
    ``drop_variables``, ``reader_factory`` and ``links_and_references`` are keyword-only
    here."""

    def __init__(self, group: str | None = None, skip_variables: Any = None, *,
                 drop_variables: Any = None, reader_factory: Any = None,
                 links_and_references: bool = False, **options: Any) -> None:
        super().__init__(group, drop_variables, reader_factory, links_and_references,
                         skip_variables=skip_variables, **options)
