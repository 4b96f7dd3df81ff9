"""Type stubs of the extension module (the public API is vzarr's __init__)."""

__version__: str

class VzarrError(Exception):
    file: str | None

class SourceError(VzarrError): ...
class ScanError(VzarrError, ValueError): ...
class PlanError(VzarrError): ...
class WriteError(VzarrError): ...

def build(
    inputs: list[str],
    *,
    catalog: list[str],
    include: list[str],
    exclude: list[str],
    concat_dim: str | None,
    new_dim: str | None,
    new_dim_values: list[str] | None,
    allow_gaps: bool,
    time_units: str | None,
    order_by: str | None,
    jobs: int,
    on_error: str,
    cache_dir: str | None,
    strict: bool,
    file_timeout: int,
    split_contiguous: str | None,
    max_string_bytes: str | None,
    small_chunks: str | None,
    chunk_target: str | None,
    inline_max: str | None,
    inline_total: str | None,
    output: str | None,
    format: str,
    branch: str,
    piece_refs: int | None,
    commit_per_piece: bool,
    one_commit: bool,
    append: bool,
    progress: bool,
    object_references: bool = True,
    record_links: bool = False,
    data_url: str | None = None,
) -> tuple[bytes | None, list[tuple[str, str]], list[str], str, str | None]: ...

def sync(
    output: str,
    *,
    allow_prefixes: list[str],
    trust_references: bool,
    allow_removal: bool,
    dry_run: bool,
    icechunk: bool | None,
    branch: str,
    cache_dir: str | None,
    jobs: int,
    on_error: str,
    strict: bool,
    file_timeout: int,
    allow_gaps: bool,
    time_units: str | None,
    progress: bool,
) -> tuple[str, list[tuple[str, str]], list[str], str | None, str | None]: ...

def expire(repo: str, *, older_than: str, collect_garbage: bool) -> str: ...

def upgrade(
    refs: str,
    *,
    allow_prefixes: list[str],
    trust_references: bool,
    small_chunks: str | None,
    chunk_target: str | None,
    inline_max: str | None,
    inline_total: str | None,
    output: str | None,
    format: str,
    branch: str,
    rescan: bool,
    concat_dim: str | None,
    leave_out_defective: bool,
    sources: list[str],
) -> tuple[bytes | None, list[str], str | None]: ...

class Store:
    """An obstore store recreated from its configuration, for the parser's reads."""
    def __init__(self, store: object) -> None: ...

def scan_manifests(
    url: str,
    *,
    strict: bool,
    file_timeout: int,
    split_contiguous: str | None,
    max_string_bytes: str | None,
    small_chunks: str | None = None,
    chunk_target: str | None = None,
    inline_max: str | None = None,
    inline_total: str | None = None,
    store: Store | None = None,
    path: str | None = None,
    links_and_references: bool = False,
    data_url: str | None = None,
) -> tuple[
    str,
    list[tuple[str, str, list[int], bytes, bytes, bytes, list[str], list[tuple[list[int], bytes]]]],
    list[str],
]: ...

class NotAllowedError(SourceError): ...
class StaleSourceError(SourceError): ...

def detect(location: str) -> str: ...
def checked_references(
    location: str, *, allow_prefixes: list[str], trust_references: bool,
    ignore_stale: bool = False,
) -> bytes: ...
def configured_prefixes() -> list[str]: ...
def decode_chunk(codec_json: str, data: bytes, limit: int) -> bytes: ...
def encode_chunk(codec_json: str, data: bytes) -> bytes: ...
def htj2k_image_bytes(data: bytes) -> int: ...

class ReferenceStore:
    """References parsed in Rust, for vzarr.store.VzarrStore."""
    def __init__(
        self, location: str, *, allow_prefixes: list[str], trust_references: bool,
        ignore_stale: bool = False, environment: bool = True,
    ) -> None: ...
    @property
    def location(self) -> str: ...
    @property
    def stamp(self) -> tuple[int, int | None, str | None]: ...
    @property
    def references(self) -> int: ...
    def get_many(self, requests: list[tuple[str, tuple[int, int, int] | None]]) -> list[bytes | None]: ...
    def document_keys(self) -> list[str]: ...
    def exists(self, key: str) -> bool: ...
    def list_prefix(self, prefix: str) -> list[str]: ...
    def list_dir(self, prefix: str) -> list[str]: ...

class RepositoryStore:
    """One snapshot of an Icechunk repository, read key by key, for vzarr.store.VzarrStore."""
    def __init__(
        self, location: str, *, branch: str, snapshot: str | None, allow_prefixes: list[str],
        trust_references: bool, ignore_stale: bool = False, environment: bool = True,
    ) -> None: ...
    @property
    def location(self) -> str: ...
    @property
    def snapshot(self) -> str: ...
    @property
    def stamp(self) -> str: ...
    def get_many(self, requests: list[tuple[str, tuple[int, int, int] | None]]) -> list[bytes | None]: ...
    def document_keys(self) -> list[str]: ...
    def exists(self, key: str) -> bool: ...
    def list_prefix(self, prefix: str) -> list[str]: ...
    def list_dir(self, prefix: str) -> list[str]: ...
