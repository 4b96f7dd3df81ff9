"""The xarray backend ``engine="vzarr"``: ``xr.open_dataset("tas.json", engine="vzarr")`` opens
a reference file or an Icechunk repository built by vzarr (or a single source, built in
memory), as :func:`vzarr.open_dataset` does, with its keyword arguments:

    import xarray as xr
    ds = xr.open_dataset("tas.json", engine="vzarr", allow_prefixes="/data/archive/")
    ds = xr.open_dataset("s3://bucket/repos/tas", engine="vzarr", trust_references=True)

The dataset is the one xarray's netCDF4 backend shows of the source (attributes with their
numpy types, the source's names, netCDF4's ``encoding``; see :mod:`vzarr.netcdf_view`);
``group=`` names a group by its path in the source.

Registered by the package under the entry point group ``xarray.backends``.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from xarray.backends import BackendEntrypoint

__all__ = ["VzarrBackendEntrypoint"]


class VzarrBackendEntrypoint(BackendEntrypoint):
    """Opens vzarr's references (kerchunk JSON with Zarr v3 keys) and Icechunk repositories,
    checking what they point at against the allowed prefixes (see vzarr.open_dataset)."""

    description = "vzarr references (kerchunk JSON with Zarr v3 keys) and Icechunk repositories"
    url = "https://example.invalid/vzarr"
    open_dataset_parameters = (
        "filename_or_obj", "drop_variables", "mask_and_scale", "decode_times",
        "concat_characters", "decode_coords", "use_cftime", "decode_timedelta", "group",
        "auto_complex",
        "allow_prefixes", "trust_references", "ignore_stale", "branch", "remote_protocol",
        "remote_options",
    )

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        allow_prefixes: Any = None,
        trust_references: bool = False,
        ignore_stale: bool = False,
        branch: str = "main",
        remote_protocol: str | None = None,
        remote_options: dict[str, Any] | None = None,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool = True,
        use_cftime: bool | None = None,
        decode_timedelta: bool | None = None,
        group: str | None = None,
        auto_complex: bool | None = None,
    ):
        from . import open_dataset

        # auto_complex: netCDF4's option to read (real, imaginary) compounds as complex
        # numbers; vzarr always reads them so (docs/python.md), whatever is asked.
        del auto_complex

        xarray_options = {
            "drop_variables": drop_variables,
            "mask_and_scale": mask_and_scale,
            "decode_times": decode_times,
            "concat_characters": concat_characters,
            "decode_coords": decode_coords,
            "use_cftime": use_cftime,
            "decode_timedelta": decode_timedelta,
            "group": group,
        }
        return open_dataset(
            filename_or_obj if isinstance(filename_or_obj, dict) else os.fspath(filename_or_obj),
            allow_prefixes=allow_prefixes,
            trust_references=trust_references,
            ignore_stale=ignore_stale,
            branch=branch,
            remote_protocol=remote_protocol,
            remote_options=remote_options,
            xarray_options={k: v for k, v in xarray_options.items() if v is not None},
        )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        # Only when asked for by name: a JSON file or a directory may be many things.
        return False
