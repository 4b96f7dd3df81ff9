"""vzarr: virtual Zarr v3 datasets over HDF5, NetCDF4 and NetCDF3 archives.

Scans the native layout of each file (pure Rust: no libhdf5 or netCDF-C), combines many
files into one dataset (e.g. monthly files along time, uneven lengths as a rectilinear chunk
grid) and returns kerchunk v1 references with Zarr v3 keys: metadata plus byte ranges inside
the original files. Nothing is copied.

    >>> import vzarr
    >>> refs = vzarr.build("archive/", concat_dim="time")
    >>> ds = vzarr.open_dataset("archive/", concat_dim="time")   # lazy xarray.Dataset
    >>> ds = vzarr.open_dataset("tas.json", allow_prefixes="/data/archive/")  # built before
    >>> import xarray as xr; ds = xr.open_dataset("tas.icechunk", engine="vzarr")
"""

from __future__ import annotations

import datetime as _datetime
import glob as _glob
import json as _json
import os as _os
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Sequence

from . import _vzarr
from ._vzarr import (
    NotAllowedError,
    PlanError,
    ScanError,
    SourceError,
    StaleSourceError,
    VzarrError,
    WriteError,
)

__version__: str = _vzarr.__version__

__all__ = [
    "Report",
    "References",
    "build",
    "sync",
    "SyncReport",
    "expire",
    "scan",
    "upgrade",
    "open_dataset",
    "VzarrError",
    "SourceError",
    "NotAllowedError",
    "StaleSourceError",
    "ScanError",
    "PlanError",
    "WriteError",
]

PathLike = str | _os.PathLike[str]

# A local pattern holds one of these; URLs (scheme://) are passed through untouched.
_GLOB_CHARS = set("*?[")


@dataclass(frozen=True)
class Report:
    """What a build reports besides its references.

    failures: the sources left out with ``on_error="skip"``, as ``(source, reason)``.
    warnings: variables and attributes the scanners left out, as ``"source: path: reason"``.
    summary: files, scans, cache hits, arrays, chunks, bytes and seconds (as ``vzarr build
    --summary-json`` writes them).
    output: the file, object or repository written, when ``output=`` was given.
    commit: for an Icechunk output, the commit made: ``branch``, ``snapshot`` (its id),
    ``created`` (a new repository), ``virtual_refs``, ``native_chunks``, ``pieces``,
    ``commits`` (those the branch gained) and ``containers`` (the virtual chunk containers a
    reader authorises).
    """

    failures: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    commit: dict[str, Any] | None = None


class References(dict):
    """Kerchunk v1 references (a dict: ``{"version": 1, "vzarr": ..., "refs": {...}}``), with
    the build's :class:`Report` as ``.report``."""

    report: Report


def _inputs(inputs: PathLike | Iterable[PathLike]) -> list[str]:
    if isinstance(inputs, (str, _os.PathLike)):
        items = [inputs]
    else:
        items = list(inputs)
    out: list[str] = []
    for item in items:
        s = _os.fspath(item)
        if "://" not in s and _GLOB_CHARS & set(s):
            matches = sorted(_glob.glob(s, recursive=True))
            if not matches:
                raise SourceError(f"{s}: no file matches this pattern")
            out.extend(matches)
        else:
            out.append(s)
    return out


def _size(value: int | str | None) -> str | None:
    """A byte size as the CLI takes it (checked by the library: an integer or "4MiB")."""
    return None if value is None else str(value)


def build(
    inputs: PathLike | Iterable[PathLike],
    *,
    concat_dim: str | None = None,
    new_dim: str | None = None,
    new_dim_values: Sequence[Any] | None = None,
    allow_gaps: bool = False,
    time_units: str | None = None,
    order_by: str | None = None,
    output: PathLike | None = None,
    format: Literal["kerchunk", "icechunk"] = "kerchunk",
    branch: str = "main",
    piece_refs: int | None = None,
    commit_per_piece: bool = False,
    one_commit: bool = False,
    append: bool = False,
    catalog: PathLike | Sequence[PathLike] | None = None,
    include: str | Sequence[str] | None = None,
    exclude: str | Sequence[str] | None = None,
    jobs: int = 0,
    on_error: Literal["fail", "skip"] = "fail",
    cache_dir: PathLike | None = None,
    strict: bool = False,
    file_timeout: int = 600,
    split_contiguous: int | str | None = None,
    max_string_bytes: int | str | None = None,
    small_chunks: Literal["inline", "merge", "keep"] | None = None,
    chunk_target: int | str | None = None,
    inline_max: int | str | None = None,
    inline_total: int | str | None = None,
    object_references: bool = True,
    record_links: bool = False,
    data_url: str | None = None,
    progress: bool = False,
) -> References | Report:
    """Virtualise files: scan them, combine them and return (or write) the references.

    The options are those of ``vzarr build``, with the same names and defaults.

    inputs: a path, URL (s3://, gs://, az://, http(s)://), directory (walked recursively,
        name order), prefix ending in / (s3://bucket/dir/), local glob pattern ("data/*.nc"),
        or a list of these.
    concat_dim: concatenate the files along this existing dimension (e.g. "time"); files
        are put in coordinate order, uneven lengths give a rectilinear chunk grid, CF time is
        re-encoded into one units string, variables without the dimension must be identical
        and are kept once.
    new_dim: stack the files along a new leading dimension instead (e.g. "member").
    new_dim_values: the new dimension's coordinate values, one per file in input order
        (default: the file names).
    allow_gaps: accept gaps along the concatenation coordinate (overlaps stay errors).
    time_units: re-encode the CF time coordinate into these units (default: the first
        file's).
    order_by: with ``concat_dim``, order and check the files by this variable (1-D along
        the dimension, e.g. "time_centered" or "XTIME") instead of the dimension's
        coordinate variable; a CF time variable is re-encoded like a coordinate, the
        coordinate itself is kept as stored.
    output: write the references here instead of returning them: a local path or an s3://,
        gs:// or az:// URL (kerchunk JSON, written atomically), or with
        ``format="icechunk"`` an Icechunk repository (a local directory, or
        s3://, gs:// or az://bucket/prefix; one commit per build, none when the build fails).
    format: "kerchunk" (reference JSON) or "icechunk" (a repository; needs ``output``).
    branch: the Icechunk branch to commit to.
    piece_refs: with ``format="icechunk"``, the most chunk references Icechunk holds in memory
        before they are committed (default 1,048,576); a larger build is written in pieces of
        at most this many, one commit each, that the branch gains all together or not at all
        (smaller: less memory, more commits).
    commit_per_piece: with ``format="icechunk"``, one commit per piece: what a build of more
        than ``piece_refs`` chunks does anyway (kept for code that asks for it).
    one_commit: with ``format="icechunk"``, one commit whatever the size, the whole build held
        in Icechunk's memory until it commits (a few hundred bytes a reference: several GB at
        10 million); ``piece_refs`` is then ignored.
    append: extend the existing ``output`` with the new files among ``inputs``, which equals a
        full rebuild: only the new files and the output's last one are planned and joined to
        the output (or, where that cannot be sure, every recorded source is planned again,
        their scans from ``cache_dir`` when cached there; ``summary["append"]`` says which);
        a repository gets it as one new commit that writes only what changed.
    catalog: file(s) with one path or URL per line (# starts a comment).
    include / exclude: glob(s) keeping / leaving out files found in directories or prefixes.
    jobs: scans in flight at once, and threads that plan and write (0: every core; at least
        32 scans when the sources are on object storage).
    on_error: "fail" raises at the first bad source; "skip" leaves bad sources out and
        reports them in ``.report.failures``.
    cache_dir: reuse scans stored under this directory (keyed by URL, size and modification
        time or ETag) and store new ones there.
    strict: raise ScanError, writing nothing, when any variable or attribute has to be left
        out.
    file_timeout: a source whose scan takes longer than this many seconds fails (0: none).
    split_contiguous: split uncompressed contiguous variables larger than this (bytes, or
        text like "4MiB") into virtual chunks along the first axis; merged small chunks then
        stay within this size too, unless ``chunk_target`` says otherwise.
    max_string_bytes: most bytes of variable-length strings stored inline per array
        (default 64MiB); a larger string array is left out with a warning.
    small_chunks: what to do with small chunks: "inline" (the default: adjacent
        uncompressed chunks under 64 KiB are merged into larger virtual chunks, arrays whose references
        would still average under 1 KiB are read and kept inline, other chunks under 1 KiB
        are copied inline), "merge" (merge only; no data is copied) or "keep" (every chunk
        referenced as it is stored).
    chunk_target: merged chunks, and the chunks of arrays kept inline, hold up to this many
        bytes (default "4MiB").
    inline_max: an array is kept inline only if what the output stores of it (its chunks
        re-encoded) takes at most this many bytes (default "16MiB"); a larger one stays
        referenced, with a warning. It is decoded for that only if it decodes to at most 16
        times this.
    inline_total: at most this many bytes (as stored) are kept inline per build, the
        cheapest arrays first (default "256MiB").
    object_references: read HDF5 object references (datasets, compound members,
        attributes) as the paths of their targets, marked with the draft Links and Object
        References and ``ref`` conventions as VirtualiZarr writes them (the default); False
        leaves them out with a warning (``--no-object-references``).
    record_links: record soft links, external links and second hard links to an object in
        the attributes of the group that holds them (``links_references``), instead of
        reading a soft link's target again under its name and leaving the others out
        (``--record-links``).
    data_url: where the granules of DMR++ sidecars among the inputs are, when not beside them
        (nor at the sidecar's own ``dmrpp:href``): a URL or path, ``{name}`` standing for the
        sidecar's file name without ``.dmrpp`` (e.g. ``"s3://bucket/granules/{name}"``; one
        ending in / gets the name appended) (``--data-url``).
    progress: show a progress bar on stderr (nothing is printed otherwise).

    Returns a :class:`References` dict (with ``.report``), or with ``output=`` the
    :class:`Report`. Raises SourceError, ScanError, PlanError, WriteError (all VzarrError,
    with ``.file`` naming the source when known) or ValueError for bad options.
    """
    catalogs = [] if catalog is None else (
        [catalog] if isinstance(catalog, (str, _os.PathLike)) else list(catalog))
    as_list = lambda v: [] if v is None else ([v] if isinstance(v, str) else list(v))  # noqa: E731
    data, failures, warnings, summary, written = _vzarr.build(
        _inputs(inputs),
        catalog=[_os.fspath(c) for c in catalogs],
        include=as_list(include),
        exclude=as_list(exclude),
        concat_dim=concat_dim,
        new_dim=new_dim,
        new_dim_values=None if new_dim_values is None else [str(v) for v in new_dim_values],
        allow_gaps=allow_gaps,
        time_units=time_units,
        order_by=order_by,
        jobs=jobs,
        on_error=on_error,
        cache_dir=None if cache_dir is None else _os.fspath(cache_dir),
        strict=strict,
        file_timeout=file_timeout,
        split_contiguous=_size(split_contiguous),
        max_string_bytes=_size(max_string_bytes),
        small_chunks=small_chunks,
        chunk_target=_size(chunk_target),
        inline_max=_size(inline_max),
        inline_total=_size(inline_total),
        output=None if output is None else _os.fspath(output),
        format=format,
        branch=branch,
        piece_refs=piece_refs,
        commit_per_piece=commit_per_piece,
        one_commit=one_commit,
        append=append,
        progress=progress,
        object_references=object_references,
        record_links=record_links,
        data_url=None if data_url is None else str(data_url),
    )
    done = None if written is None else _json.loads(written)
    report = Report(
        failures=[tuple(f) for f in failures],
        warnings=list(warnings),
        summary=_json.loads(summary),
        output=None if done is None else done.pop("output"),
        commit=done or None,
    )
    if data is None:
        return report
    refs = References(_json.loads(data))
    refs.report = report
    return refs


@dataclass(frozen=True)
class SyncReport:
    """What :func:`sync` found and did.

    action: ``"nothing"`` (up to date: nothing written), ``"append"`` (only new files),
    ``"rebuild"`` (files changed or were removed: rebuilt from the current files in one write
    or one commit) or ``"refuse"`` (only with ``dry_run=True``: files are gone and removal is
    not allowed).
    added, removed, unchanged: the sources' URLs. replaced: ``{"url", "changes"}`` of each
    source re-scanned because its bytes changed.
    listed: whether the output records directories, prefixes or catalogs that were listed
    again (else only its recorded sources were checked).
    dry_run: nothing was written. build: the :class:`Report` of the build, when one ran.
    """

    output: str
    action: str
    added: list[str] = field(default_factory=list)
    replaced: list[dict[str, Any]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    listed: bool = True
    dry_run: bool = False
    build: Report | None = None


def sync(
    output: PathLike,
    *,
    allow_prefixes: PathLike | Sequence[PathLike] | None = None,
    trust_references: bool = False,
    allow_removal: bool = False,
    dry_run: bool = False,
    format: Literal["kerchunk", "icechunk"] | None = None,
    branch: str = "main",
    cache_dir: PathLike | None = None,
    jobs: int = 0,
    on_error: Literal["fail", "skip"] = "fail",
    strict: bool = False,
    file_timeout: int = 600,
    allow_gaps: bool = False,
    time_units: str | None = None,
    progress: bool = False,
) -> SyncReport:
    """Bring an output in line with its sources, as ``vzarr sync`` does: the directories,
    prefixes and catalogs it was built from (with its include/exclude patterns) are listed
    again and compared with the sources it records (size, modification time, ETag,
    fingerprint). New files are appended (as ``build(..., append=True)``); changed files are
    re-scanned and the output rebuilt from every current file, in one atomic write or one
    Icechunk commit; removed files raise :class:`WriteError` naming them unless
    ``allow_removal=True``; nothing changed, nothing is written.

    output: a reference file (a path or an ``s3://``, ``gs://``, ``az://`` URL) or an
        Icechunk repository (``format="icechunk"``, detected when not given).
    allow_prefixes: every location the output records, and every file found there, must be
        under one (plus ``VZARR_ALLOW_PREFIXES`` and the configuration file), or with
        ``trust_references=True`` under the locations the output records.
    cache_dir: the scan cache the output was built with: a sync then scans only the new and
        changed files (there is no default cache).
    dry_run: only find what changed; write nothing.
    The other options are :func:`build`'s.

    Returns a :class:`SyncReport`. Raises NotAllowedError for a location outside the allowed
    prefixes, WriteError for removed files, and the errors of :func:`build`.
    """
    plan, failures, warnings, summary, written = _vzarr.sync(
        _os.fspath(output),
        allow_prefixes=_prefixes(allow_prefixes),
        trust_references=trust_references,
        allow_removal=allow_removal,
        dry_run=dry_run,
        icechunk=None if format is None else format == "icechunk",
        branch=branch,
        cache_dir=None if cache_dir is None else _os.fspath(cache_dir),
        jobs=jobs,
        on_error=on_error,
        strict=strict,
        file_timeout=file_timeout,
        allow_gaps=allow_gaps,
        time_units=time_units,
        progress=progress,
    )
    p = _json.loads(plan)
    report = None
    if summary is not None:
        done = {} if written is None else _json.loads(written)
        report = Report(
            failures=[tuple(f) for f in failures],
            warnings=list(warnings),
            summary=_json.loads(summary),
            output=done.pop("output", None),
            commit=done or None,
        )
    return SyncReport(
        output=p["output"],
        action=p["action"],
        added=p["added"],
        replaced=p["replaced"],
        removed=p["removed"],
        unchanged=p["unchanged"],
        listed=p["listed"],
        dry_run=p["dry_run"],
        build=report,
    )


def expire(
    repo: PathLike,
    *,
    older_than: str | _datetime.datetime,
    collect_garbage: bool = True,
) -> dict:
    """Expire an Icechunk repository's snapshots written before ``older_than`` and collect
    its garbage, as ``vzarr expire`` does, keeping what vzarr records of the sources (which
    appends and :func:`sync` need): where the expiration would cut that record, the whole of
    it is committed first (an empty *provenance checkpoint* commit). Prefer it to
    icechunk-python's ``expire_snapshots`` alone, after which vzarr can no longer append to
    the repository (its values still read).

    older_than: a timezone-aware ``datetime``, an RFC 3339 time or an age (``"30d"``,
        ``"12h"``, ``"2w"``; ``"0s"`` keeps only the branches' and tags' tips).
    collect_garbage: delete what only the expired snapshots reached (Icechunk's garbage
        collection with the same cutoff).

    Returns a dict: ``checkpoints`` (branches given a checkpoint), ``lost`` (branches whose
    record was already lost, as ``"branch: why"``: rebuild them to append), ``snapshots_expired``, and
    ``collected`` (bytes, snapshots, manifests, transaction_logs, chunks deleted; None
    without garbage collection). Raises ValueError for a cutoff that is neither, WriteError
    for a repository that cannot be changed.
    """
    if isinstance(older_than, _datetime.datetime):
        if older_than.tzinfo is None:
            raise ValueError("older_than: a datetime with a time zone (datetime.timezone.utc)")
        older_than = older_than.isoformat()
    return _json.loads(
        _vzarr.expire(_os.fspath(repo), older_than=older_than, collect_garbage=collect_garbage)
    )


def upgrade(
    refs: PathLike,
    *,
    output: PathLike | None = None,
    format: Literal["kerchunk", "icechunk"] = "kerchunk",
    branch: str = "main",
    allow_prefixes: PathLike | Sequence[PathLike] | None = None,
    trust_references: bool = False,
    small_chunks: Literal["inline", "merge", "keep"] | None = None,
    chunk_target: int | str | None = None,
    inline_max: int | str | None = None,
    inline_total: int | str | None = None,
    rescan: bool = False,
    concat_dim: str | None = None,
    leave_out_defective: bool = False,
    sources: str | Sequence[str] | None = None,
) -> References | Report:
    """Upgrade existing references, as ``vzarr upgrade`` does: kerchunk's JSON (version 0 or
    1) or a directory of kerchunk's Parquet references, with Zarr v2 (or v3) metadata, to
    vzarr's Zarr v3 references, or with ``output=`` written there (``format="icechunk"``: an
    Icechunk repository). Every source must be under ``allow_prefixes`` (plus
    ``VZARR_ALLOW_PREFIXES`` and the configuration file), or anywhere with
    ``trust_references=True``; each is recorded with its size, modification time and ETag.
    Small chunks are merged and inlined as :func:`build` does (same options). Variables
    vzarr cannot express are left out, named in ``.report.warnings``.

    leave_out_defective: audit every reference against its source first (as ``vzarr
        verify`` does) and leave out the variables with a defect, named in the warnings.
    sources: with ``leave_out_defective``, the files the references were made from (as
        ``vzarr verify --source``): references that name no file (all inline) are audited
        against them.
    rescan: build from the sources the references point into instead (as :func:`build` of
        them would, with ``concat_dim`` for several), so no defect of the references carries
        over.

    Returns :class:`References` (with ``.report``), or with ``output=`` the :class:`Report`.
    """
    data, warnings, written = _vzarr.upgrade(
        _os.fspath(refs),
        allow_prefixes=_prefixes(allow_prefixes),
        trust_references=trust_references,
        small_chunks=small_chunks,
        chunk_target=_size(chunk_target),
        inline_max=_size(inline_max),
        inline_total=_size(inline_total),
        output=None if output is None else _os.fspath(output),
        format=format,
        branch=branch,
        rescan=rescan,
        concat_dim=concat_dim,
        leave_out_defective=leave_out_defective,
        sources=_prefixes(sources),
    )
    done = None if written is None else _json.loads(written)
    report = Report(
        failures=[],
        warnings=list(warnings),
        summary={},
        output=None if done is None else done.pop("output"),
        commit=done or None,
    )
    if data is None:
        return report
    out = References(_json.loads(data))
    out.report = report
    return out


def scan(url: PathLike, **options: Any) -> References:
    """The references of one file as it is (no combining): ``build(url, **options)`` with
    the scan options of :func:`build` (strict, split_contiguous, max_string_bytes,
    file_timeout, cache_dir)."""
    for k in ("concat_dim", "new_dim", "new_dim_values", "output", "catalog", "format",
              "branch", "piece_refs", "commit_per_piece", "one_commit", "append"):
        if k in options:
            raise TypeError(f"scan() takes no {k!r}; use vzarr.build")
    refs = build(url, **options)
    assert isinstance(refs, References)
    return refs


def _open_references(refs: dict, remote_protocol, remote_options, xarray_options,
                     source: str = "<references>"):
    """A lazy xarray.Dataset over kerchunk references, through fsspec's reference filesystem
    (rectilinear chunk grids read as :mod:`vzarr.netcdf_view` reads them)."""
    import fsspec
    import xarray as xr
    import zarr

    if remote_protocol is None:
        urls = [s.get("url", "") for s in refs.get("vzarr", {}).get("sources", [])]
        scheme = urls[0].split("://", 1)[0] if urls and "://" in urls[0] else "file"
        remote_protocol = {"s3a": "s3", "gcs": "gs", "az": "abfs"}.get(scheme, scheme)
    fs = fsspec.filesystem(
        "reference",
        fo=dict(refs),
        remote_protocol=remote_protocol,
        remote_options={**(remote_options or {}), "asynchronous": True},
        asynchronous=True,
    )
    store = zarr.storage.FsspecStore(fs, path="/", read_only=True)
    root = refs.get("refs", refs).get("zarr.json", "")
    consolidated = "consolidated_metadata" in (root if isinstance(root, (str, dict)) else "")
    return xr.open_dataset(store, **_view_options(consolidated, source, xarray_options))


def _view_options(consolidated: bool, source: str, xarray_options) -> dict[str, Any]:
    """``xarray.open_dataset``'s arguments that open a store of vzarr's output as the
    netCDF reader shows the source (:mod:`vzarr.netcdf_view`)."""
    from .netcdf_view import NetCDFViewBackend

    return {"engine": NetCDFViewBackend, "consolidated": consolidated, "source": source,
            "chunks": None, **(xarray_options or {})}


def _open_store(location: str, allow_prefixes, trust_references, xarray_options,
                branch: str = "main", ignore_stale: bool = False):
    """A lazy xarray.Dataset over the reference file or Icechunk repository at ``location``
    through :class:`vzarr.store.VzarrStore` (references parsed and checked in Rust, or looked
    up in the repository's manifests key by key; consolidated metadata used when the root
    document carries it; each array read through :mod:`vzarr.pipeline`)."""
    import xarray as xr

    from .store import VzarrStore

    store = VzarrStore(location, allow_prefixes=allow_prefixes, trust_references=trust_references,
                       ignore_stale=ignore_stale, branch=branch)
    root = store.document("zarr.json") or b""
    consolidated = b'"consolidated_metadata"' in root
    return xr.open_dataset(store, **_view_options(consolidated, location, xarray_options))


# Keyword arguments of :func:`open_dataset` that are ``xarray.open_dataset``'s (the rest are
# build options).
_XARRAY_OPTIONS = frozenset({
    "group", "chunks", "cache", "decode_cf", "mask_and_scale", "decode_times",
    "decode_timedelta", "use_cftime", "concat_characters", "decode_coords", "drop_variables",
    "create_default_indexes", "inline_array", "chunked_array_type", "from_array_kwargs",
    "backend_kwargs",
})


def _prefixes(allow_prefixes) -> list[str]:
    if allow_prefixes is None:
        return []
    if isinstance(allow_prefixes, (str, _os.PathLike)):
        return [_os.fspath(allow_prefixes)]
    return [_os.fspath(p) for p in allow_prefixes]


def open_dataset(
    inputs: PathLike | Iterable[PathLike] | References | dict,
    *,
    allow_prefixes: PathLike | Sequence[PathLike] | None = None,
    trust_references: bool = False,
    ignore_stale: bool = False,
    branch: str = "main",
    remote_protocol: str | None = None,
    remote_options: dict[str, Any] | None = None,
    xarray_options: dict[str, Any] | None = None,
    **options: Any,
):
    """A lazy ``xarray.Dataset`` over ``inputs``, which may be what vzarr built or what it
    builds from:

    - a reference file (a path or an s3://, gs://, az://, http(s):// URL of kerchunk JSON):
      opened as it is;
    - an Icechunk repository (a directory, or s3://, gs://, az://bucket/prefix): the tip of
      ``branch``, read by vzarr (no ``icechunk`` package needed; sources with the credentials
      of the environment, as for reference files), one snapshot's metadata when it opens and
      each chunk's reference when it is read;
    - references already built (a dict): opened as they are;
    - anything else: sources, built in memory first (nothing is written), ``options`` being
      those of :func:`build` (e.g. ``concat_dim="time"``).

    What references point at must be under the prefixes the caller allows, as for
    ``vzarr verify``: ``allow_prefixes`` (a local directory or URL prefix, or a list), the
    environment variable ``VZARR_ALLOW_PREFIXES`` (comma-separated) and the file
    ``$XDG_CONFIG_HOME/vzarr/allowed-prefixes``; the prefixes the references record only
    narrow these, unless ``trust_references=True`` allows them as well (for references you
    made). Every reference of a reference file is checked before any value is read; of a
    repository, the sources its commit records when it opens and every other source before
    any of its bytes is read. A refused one raises :class:`NotAllowedError` naming it.
    (References built here from sources are trusted.)

    A source that changed since the references were made (its recorded size, modification
    time or ETag differ; of a repository vzarr did not write, the ETag or modification time
    a reference's checksum gives) raises :class:`StaleSourceError` naming it before any of
    its bytes is used, as ``vzarr cat`` refuses it; ``ignore_stale=True`` reads it as it is
    now. References that record no state (kerchunk's own, or a dict) are read as they are.

    Values are read from the sources only when used: a reference file through
    :class:`vzarr.store.VzarrStore` (references parsed in Rust, chunks fetched concurrently by
    vzarr's reader; opened with its consolidated metadata), or through fsspec's reference
    filesystem when ``remote_protocol`` or ``remote_options`` are given and for references
    given as a dict (``remote_protocol`` defaults to the sources' scheme; ``remote_options``
    go to its filesystem, e.g. credentials). ``xarray_options``, and the keyword arguments
    that are ``xarray.open_dataset``'s (``group``, ``chunks``, ``decode_cf``,
    ``mask_and_scale``, ``drop_variables``, ...), go to ``xarray.open_dataset``; ``group`` is
    the group's path in the source (names Zarr reserves included).

    The dataset is the one xarray's netCDF4 backend shows of the source
    (:mod:`vzarr.netcdf_view`): attributes with their stored numpy types (so packed float32
    data unpacks to float32), the source's names, variable-length strings as ``str``
    objects, and ``encoding`` with ``source``, ``original_shape``, ``dtype``, the
    compression filters, ``chunksizes`` / ``contiguous`` and ``unlimited_dims``. zarr-python's
    ``array.rectilinear_chunks`` option is on while the documents are parsed (it reads
    rectilinear chunk grids), not left on; the process's codec pipeline is not changed (the
    arrays of a VzarrStore get vzarr's own). Needs xarray, zarr >= 3 and fsspec. The same is available as
    ``xarray.open_dataset(path, engine="vzarr")``."""
    xarray_options = {**{k: options.pop(k) for k in list(options) if k in _XARRAY_OPTIONS},
                      **(xarray_options or {})}
    # netCDF4's option to read (real, imaginary) compounds as complex numbers: vzarr always
    # reads them so.
    options.pop("auto_complex", None)
    if isinstance(inputs, dict):
        return _open_references(inputs, remote_protocol, remote_options, xarray_options)
    if isinstance(inputs, (str, _os.PathLike)) and not (
            "://" not in _os.fspath(inputs) and _GLOB_CHARS & set(_os.fspath(inputs))):
        location = _os.fspath(inputs)
        kind = _vzarr.detect(location)
        if kind != "sources" and options:
            raise TypeError(
                f"{location} is {'an Icechunk repository' if kind == 'icechunk' else 'a reference file'}: "
                f"the build options {sorted(options)} do not apply")
        if kind == "references":
            if remote_protocol is not None or remote_options:
                # Asked for fsspec's reference filesystem (its own protocols and options).
                text = _vzarr.checked_references(location, allow_prefixes=_prefixes(allow_prefixes),
                                                 trust_references=trust_references,
                                                 ignore_stale=ignore_stale)
                return _open_references(_json.loads(text), remote_protocol, remote_options,
                                        xarray_options, source=location)
            return _open_store(location, _prefixes(allow_prefixes), trust_references,
                               xarray_options, ignore_stale=ignore_stale)
        if kind == "icechunk":
            return _open_store(location, _prefixes(allow_prefixes), trust_references,
                               xarray_options, branch=branch, ignore_stale=ignore_stale)
    refs = build(inputs, **options)
    source = _os.fspath(inputs) if isinstance(inputs, (str, _os.PathLike)) else "<built>"
    return _open_references(refs, remote_protocol, remote_options, xarray_options,
                            source=source)
