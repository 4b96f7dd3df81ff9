"""Google Cloud Storage (fake-gcs-server): NetCDF4 sources listed and scanned through a
`gs://` prefix into an Icechunk repository, read back with icechunk-python + xarray
(authorising the `gs://` container the repository lists, credentials from the environment)
and compared with xarray over netCDF4-python on the local copies; a missing object names its
URL."""

import icechunk
import xarray as xr
import zarr

from test_concat import MONTHS_2023, assert_matches_concat, expected_concat, write_archive
from test_icechunk import run_vzarr_env

zarr.config.set({"array.rectilinear_chunks": True})


def test_sources_on_gcs(tmp_path, fake_gcs, monkeypatch):
    upload, env = fake_gcs
    paths = write_archive(tmp_path, MONTHS_2023[:4], chunk_t=10, zlib=True)
    for p in paths:
        upload(p, "gcs-test", f"archive/{p.name}")
    repo_path = tmp_path / "repo"
    p = run_vzarr_env(env, "build", "gs://gcs-test/archive/", "--concat-dim", "time",
                      "--format", "icechunk", "-o", repo_path)
    assert "gs://gcs-test/archive/" in p.stdout
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT", env["GOOGLE_SERVICE_ACCOUNT"])
    storage = icechunk.local_filesystem_storage(str(repo_path))
    conts = sorted(icechunk.Repository.open(storage).config.virtual_chunk_containers)
    assert conts == ["gs://gcs-test/archive/"]
    creds = icechunk.containers_credentials({conts[0]: icechunk.gcs_from_env_credentials()})
    repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=creds)
    virt = xr.open_zarr(repo.readonly_session(branch="main").store, consolidated=False,
                        zarr_format=3)
    assert_matches_concat(virt, expected_concat(paths))
    v = run_vzarr_env(env, "verify", repo_path, "--trust-references", check=False)
    assert v.returncode == 0, v.stdout + v.stderr
    e = run_vzarr_env(env, "inspect", "gs://gcs-test/archive/nope.nc", check=False)
    assert e.returncode != 0 and "gs://gcs-test/archive/nope.nc" in e.stderr, e.stderr
