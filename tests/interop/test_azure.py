"""Azure Blob Storage (Azurite): NetCDF4 sources scanned through an `az://` prefix, the
dataset written as an Icechunk repository on Azure too, read back with icechunk-python +
xarray (authorising the `az://` container the repository lists, credentials from the
environment) and compared with xarray over netCDF4-python on the local copies; an append as
a second commit; `vzarr verify` and `inspect` on the repository; a missing blob names its
URL."""

import icechunk
import pytest
import xarray as xr
import zarr

from test_concat import MONTHS_2023, assert_matches_concat, expected_concat, write_archive
from test_icechunk import run_vzarr_env

zarr.config.set({"array.rectilinear_chunks": True})


def test_sources_and_repository_on_azure(tmp_path, azurite, monkeypatch):
    client, env = azurite
    container = client.create_container("vzarr-test")
    paths = write_archive(tmp_path, MONTHS_2023[:6], chunk_t=10, zlib=True)
    for p in paths[:4]:
        with open(p, "rb") as f:
            container.upload_blob(f"archive/{p.name}", f)
    repo_url = "az://vzarr-test/repos/tas"
    p = run_vzarr_env(env, "build", "az://vzarr-test/archive/", "--concat-dim", "time",
                      "--format", "icechunk", "-o", repo_url)
    assert "az://vzarr-test/archive/" in p.stdout
    for p in paths[4:]:
        with open(p, "rb") as f:
            container.upload_blob(f"archive/{p.name}", f)
    p = run_vzarr_env(env, "build", "az://vzarr-test/archive/", "--append", "--format",
                      "icechunk", "-o", repo_url)
    # icechunk-python finds Azurite through the same environment.
    for k in ("AZURE_STORAGE_USE_EMULATOR", "AZURITE_BLOB_STORAGE_URL",
              "AZURE_STORAGE_ACCOUNT_NAME"):
        monkeypatch.setenv(k, env[k])
    storage = icechunk.azure_storage(account=env["AZURE_STORAGE_ACCOUNT_NAME"],
                                     container="vzarr-test", prefix="repos/tas", from_env=True)
    conts = sorted(icechunk.Repository.open(storage).config.virtual_chunk_containers)
    assert conts == ["az://vzarr-test/archive/"]
    creds = icechunk.containers_credentials({conts[0]: icechunk.azure_from_env_credentials()})
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)
    history = list(repo.ancestry(branch="main"))
    assert len(history) == 3 and "append of 6 source(s)" in history[0].message
    virt = xr.open_zarr(repo.readonly_session(branch="main").store, consolidated=False,
                        zarr_format=3)
    assert_matches_concat(virt, expected_concat(paths))
    v = run_vzarr_env(env, "verify", repo_url, "--trust-references", check=False)
    assert v.returncode == 0, v.stdout + v.stderr
    i = run_vzarr_env(env, "inspect", repo_url)
    assert "tas" in i.stdout
    # A blob that is not there: the error names it.
    e = run_vzarr_env(env, "build", "az://vzarr-test/archive/nope.nc", "-o",
                      tmp_path / "x.json", check=False)
    assert e.returncode != 0 and "az://vzarr-test/archive/nope.nc" in e.stderr, e.stderr


def test_azure_repository_needs_an_account(tmp_path, azurite):
    """Without a storage account in the environment, an az:// repository is refused by name
    before anything is written."""
    _, env = azurite
    env = {k: v for k, v in env.items()
           if k not in ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT")}
    paths = write_archive(tmp_path, MONTHS_2023[:1], chunk_t=31)
    p = run_vzarr_env(env, "build", paths[0], "--format", "icechunk", "-o",
                      "az://vzarr-test/repos/none", check=False)
    assert p.returncode != 0
    assert "AZURE_STORAGE_ACCOUNT_NAME" in p.stderr and "az://vzarr-test/repos/none" in p.stderr
