"""Zarr v3 codecs for third-party HDF5 filters whose stored bytes no other Python package's
Zarr codec decodes: registered with zarr-python through the ``zarr.codecs`` entry points of the
``vzarr`` package, so that installing vzarr is all zarr-python needs to read what
``vzarr build`` writes.

- ``vzarr.lzf`` (configuration ``{}``): h5py's LZF filter (HDF5 filter 32000), LZF without a
  header; the decoded size is the chunk's.
- ``vzarr.bitshuffle`` (configuration ``{"elementsize": n, "blocksize": n, "compression":
  "none" | "lz4" | "zstd"}``, plus ``"level"`` with zstd): the HDF5 bitshuffle filter (32008)
  with its own framing.
- ``vzarr.zfp`` (configuration ``{"type": "int32" | "int64" | "float32" | "float64", "shape":
  [...], "minbits": n, "maxbits": n, "maxprec": n, "minexp": n, "endian": "little" | "big"}``):
  H5Z-ZFP (HDF5 filter 32013), a bare zfp stream whose field and mode the filter keeps in its
  client data; decoding only (zfp's lossy modes would not re-encode to the values read).
- ``vzarr.lzo`` (configuration ``{}``): PyTables' LZO filter (HDF5 filter 305), an LZO1X
  stream without a header (imagecodecs' ``imagecodecs_lzo`` needs the decoded size, which
  zarr-python does not pass it).
- ``vzarr.jpegls`` (configuration ``{}``): EUMETSAT's FCIDECOMP filter (HDF5 filter 32018), a
  JPEG-LS stream per chunk, one scan a component; the stream describes itself.
- ``vzarr.blosc2`` (configuration ``{}``): the HDF5-Blosc2 filter (32026, PyTables and
  hdf5plugin), a Blosc2 contiguous frame per chunk (a B2ND array for chunks of rank 2 to 8,
  put back in C order); the frame describes itself; decoding only.

- ``vzarr.htj2k`` (configuration ``{"endian": "little" | "big"}``): hdf5plugin's HTJ2K filter
  (HDF5 filter 32033), a JPEG 2000 codestream (HT code-blocks) per chunk, one component or
  three interleaved per pixel; 16-bit samples in ``endian`` order; decoding only.

The first six decode with the Rust decoders of vzarr's own reader, bounded by the chunk's size.
``vzarr.htj2k`` decodes with imagecodecs' ``htj2k_decode`` (OpenJPH, the filter's own decoder,
so irreversible codestreams give the filter's values to the last unit), once the codestream's
SIZ marker segment says it fits the chunk. The
other filters vzarr maps use codecs zarr-python has (``numcodecs.bz2``, ``zstd``, ``blosc``)
or imagecodecs' (``imagecodecs_lz4h5``, ``imagecodecs_szip`` with ``header`` true, from the
``imagecodecs-zarr`` package vzarr depends on). See manifests/FORMAT.md.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from zarr.abc.codec import BytesBytesCodec
from zarr.core.common import parse_named_configuration

from vzarr._vzarr import decode_chunk, encode_chunk, htj2k_image_bytes

if TYPE_CHECKING:
    from typing import Self

    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer
    from zarr.core.common import JSON

__all__ = ["Bitshuffle", "Blosc2", "Htj2k", "JpegLs", "Lzf", "Lzo", "Zfp"]


def _decoded_size(chunk_spec: ArraySpec) -> int:
    """Bytes of the chunk before the bytes-to-bytes codecs: its elements at their size."""
    return math.prod(chunk_spec.shape) * chunk_spec.dtype.to_native_dtype().itemsize


class _Codec(BytesBytesCodec):
    """A bytes-to-bytes codec whose chunks decode in ``_decode_sync``, on a worker thread (the
    decoders release the GIL), to bytes of unknown encoded size."""

    is_fixed_size = False

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        raise NotImplementedError

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

    def compute_encoded_size(self, _input_byte_length: int, _chunk_spec: ArraySpec) -> int:
        raise NotImplementedError


class _RustCodec(_Codec):
    """A bytes-to-bytes codec decoded and encoded by vzarr's Rust codecs."""

    def _json(self) -> str:
        return json.dumps(self.to_dict())

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        out = decode_chunk(self._json(), chunk_bytes.to_bytes(), _decoded_size(chunk_spec))
        return chunk_spec.prototype.buffer.from_bytes(out)

    def _encode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        out = encode_chunk(self._json(), chunk_bytes.to_bytes())
        return chunk_spec.prototype.buffer.from_bytes(out)

    async def _encode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        return await asyncio.to_thread(self._encode_sync, chunk_bytes, chunk_spec)


class _Unconfigured(_RustCodec):
    """A codec whose configuration is empty: the stored bytes describe themselves."""

    codec_name: ClassVar[str]

    def __init__(self) -> None:
        pass

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        _, conf = parse_named_configuration(data, cls.codec_name, require_configuration=False)
        if conf:
            raise ValueError(f"{cls.codec_name} takes no configuration, got {conf}")
        return cls()

    def to_dict(self) -> dict[str, JSON]:
        return {"name": self.codec_name, "configuration": {}}


@dataclass(frozen=True)
class Lzf(_Unconfigured):
    """``vzarr.lzf``: LZF without a header, as h5py's LZF filter (HDF5 filter 32000) stores
    chunks."""

    codec_name = "vzarr.lzf"


@dataclass(frozen=True)
class Lzo(_Unconfigured):
    """``vzarr.lzo``: LZO1X without a header, as PyTables' LZO filter (HDF5 filter 305) stores
    chunks."""

    codec_name = "vzarr.lzo"


@dataclass(frozen=True)
class JpegLs(_Unconfigured):
    """``vzarr.jpegls``: a JPEG-LS stream per chunk, as EUMETSAT's FCIDECOMP filter (HDF5 filter
    32018) stores chunks."""

    codec_name = "vzarr.jpegls"


@dataclass(frozen=True)
class Blosc2(_Unconfigured):
    """``vzarr.blosc2``: a Blosc2 contiguous frame per chunk, as the HDF5-Blosc2 filter (HDF5
    filter 32026) stores chunks; decoding only."""

    codec_name = "vzarr.blosc2"


@dataclass(frozen=True)
class Bitshuffle(_RustCodec):
    """``vzarr.bitshuffle``: the HDF5 bitshuffle filter (32008) with its framing."""

    elementsize: int
    blocksize: int = 0
    compression: str = "none"
    level: int | None = None

    def __init__(
        self, *, elementsize: int, blocksize: int = 0, compression: str = "none", level: int | None = None
    ) -> None:
        if compression not in ("none", "lz4", "zstd"):
            raise ValueError(f"vzarr.bitshuffle: unknown compression {compression!r}")
        if int(elementsize) < 1 or int(blocksize) < 0 or int(blocksize) % 8:
            raise ValueError(f"vzarr.bitshuffle: element size {elementsize}, block size {blocksize}")
        object.__setattr__(self, "elementsize", int(elementsize))
        object.__setattr__(self, "blocksize", int(blocksize))
        object.__setattr__(self, "compression", compression)
        object.__setattr__(self, "level", None if compression != "zstd" else int(level or 3))

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        _, conf = parse_named_configuration(data, "vzarr.bitshuffle")
        return cls(**conf)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, JSON]:
        conf: dict[str, JSON] = {
            "elementsize": self.elementsize,
            "blocksize": self.blocksize,
            "compression": self.compression,
        }
        if self.level is not None:
            conf["level"] = self.level
        return {"name": "vzarr.bitshuffle", "configuration": conf}


_ZFP_TYPES = {"int32": 4, "int64": 8, "float32": 4, "float64": 8}


@dataclass(frozen=True)
class Zfp(_RustCodec):
    """``vzarr.zfp``: a bare zfp stream as H5Z-ZFP (HDF5 filter 32013) stores chunks, decoded
    as a field of ``shape`` (C order) and ``type`` with zfp's expert-mode parameters."""

    type: str
    shape: tuple[int, ...]
    minbits: int
    maxbits: int
    maxprec: int
    minexp: int
    endian: str = "little"

    def __init__(
        self,
        *,
        type: str,  # noqa: A002  (the configuration's key)
        shape: list[int] | tuple[int, ...],
        minbits: int,
        maxbits: int,
        maxprec: int,
        minexp: int,
        endian: str = "little",
    ) -> None:
        shape = tuple(int(d) for d in shape)
        if type not in _ZFP_TYPES or endian not in ("little", "big"):
            raise ValueError(f"vzarr.zfp: type {type!r}, endian {endian!r}")
        if not 1 <= len(shape) <= 4 or min(shape) < 1:
            raise ValueError(f"vzarr.zfp: shape {list(shape)}")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "minbits", int(minbits))
        object.__setattr__(self, "maxbits", int(maxbits))
        object.__setattr__(self, "maxprec", int(maxprec))
        object.__setattr__(self, "minexp", int(minexp))
        object.__setattr__(self, "endian", endian)

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        _, conf = parse_named_configuration(data, "vzarr.zfp")
        return cls(**conf)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, JSON]:
        return {
            "name": "vzarr.zfp",
            "configuration": {
                "type": self.type,
                "shape": list(self.shape),
                "minbits": self.minbits,
                "maxbits": self.maxbits,
                "maxprec": self.maxprec,
                "minexp": self.minexp,
                "endian": self.endian,
            },
        }


@dataclass(frozen=True)
class Htj2k(_Codec):
    """``vzarr.htj2k``: a JPEG 2000 codestream per chunk, as hdf5plugin's HTJ2K filter (HDF5
    filter 32033) stores chunks, decoded by OpenJPH (imagecodecs) to samples interleaved per
    pixel, 16-bit ones in ``endian`` order; decoding only."""

    endian: str = "little"

    def __init__(self, *, endian: str = "little") -> None:
        if endian not in ("little", "big"):
            raise ValueError(f"vzarr.htj2k: endian {endian!r}")
        object.__setattr__(self, "endian", endian)

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        _, conf = parse_named_configuration(data, "vzarr.htj2k")
        return cls(**conf)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, JSON]:
        return {"name": "vzarr.htj2k", "configuration": {"endian": self.endian}}

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        import imagecodecs

        data = chunk_bytes.to_bytes()
        size = _decoded_size(chunk_spec)
        # The SIZ marker segment checked as vzarr's reader checks it, so what the decoder
        # allocates is bounded by the chunk.
        declared = htj2k_image_bytes(data)
        if declared != size:
            raise ValueError(f"vzarr.htj2k: the codestream's image is {declared} bytes, the chunk {size}")
        # Components interleaved per pixel, as the filter lays them out (imagecodecs would
        # return some codestreams' components one plane each).
        image = imagecodecs.htj2k_decode(data, planar=False)
        order = "<" if self.endian == "little" else ">"
        out = image.astype(image.dtype.newbyteorder(order), copy=False).tobytes()
        if len(out) != size:
            raise ValueError(f"vzarr.htj2k: the chunk decodes to {len(out)} bytes, not {size}")
        return chunk_spec.prototype.buffer.from_bytes(out)

    async def _encode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        raise NotImplementedError("vzarr.htj2k decodes only: vzarr does not write JPEG 2000 codestreams")
