//! Where a repository lives (a local directory, or a prefix on S3, GCS or Azure), its
//! storage, and the virtual chunk containers of a dataset's sources.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use icechunk::config::{HttpConfig, S3Options};
use icechunk::storage::{
    AzureCredentials, GcsCredentials, S3Credentials, new_azure_blob_storage, new_gcs_storage,
};
use icechunk::virtual_chunks::VirtualChunkContainer;
use icechunk::{ObjectStoreConfig, Storage};

use crate::IcechunkError;

/// Where an Icechunk repository lives.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RepoLocation {
    /// A local directory (absolute).
    Local(PathBuf),
    /// A prefix in an S3 bucket (also S3-compatible servers, from `AWS_ENDPOINT_URL`).
    S3 {
        /// The bucket.
        bucket: String,
        /// The prefix inside it (no leading or trailing `/`).
        prefix: String,
    },
    /// A prefix in a Google Cloud Storage bucket (`gs://bucket/prefix`).
    Gcs {
        /// The bucket.
        bucket: String,
        /// The prefix inside it (no leading or trailing `/`).
        prefix: String,
    },
    /// A prefix in an Azure Blob Storage container (`az://container/prefix`) of the storage
    /// account `AZURE_STORAGE_ACCOUNT_NAME` names.
    Azure {
        /// The container.
        container: String,
        /// The prefix inside it (no leading or trailing `/`).
        prefix: String,
    },
}

impl RepoLocation {
    /// Parses a local path, `file://` URL, `s3://bucket/prefix`, `gs://bucket/prefix` or
    /// `az://container/prefix`.
    pub fn parse(location: &str) -> Result<Self, IcechunkError> {
        let bad = |reason: &str| IcechunkError::BadLocation {
            location: location.to_string(),
            reason: reason.to_string(),
        };
        if let Some((scheme, rest)) = location.split_once("://")
            && scheme != "file"
        {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if !matches!(scheme, "s3" | "gs" | "az") {
                return Err(bad(&format!(
                    "{scheme}:// repositories are not supported (local paths, s3://, gs:// and \
                     az:// are)"
                )));
            }
            if bucket.is_empty() {
                return Err(bad("no bucket or container"));
            }
            let prefix = prefix.trim_matches('/');
            if prefix.is_empty() {
                return Err(bad(&format!(
                    "give a prefix inside the bucket ({scheme}://bucket/prefix): Icechunk does \
                     not create repositories at a bucket's root"
                )));
            }
            if prefix
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == "..")
            {
                return Err(bad("empty, `.` or `..` segments in the prefix"));
            }
            let (bucket, prefix) = (bucket.to_string(), prefix.to_string());
            return Ok(match scheme {
                "s3" => RepoLocation::S3 { bucket, prefix },
                "gs" => RepoLocation::Gcs { bucket, prefix },
                _ => RepoLocation::Azure {
                    container: bucket,
                    prefix,
                },
            });
        }
        let path = location.strip_prefix("file://").unwrap_or(location);
        if path.is_empty() {
            return Err(bad("empty path"));
        }
        Ok(RepoLocation::Local(vzarr_source::absolute(Path::new(
            path,
        ))?))
    }

    /// The location as a string for messages (`/abs/dir`, `s3://bucket/prefix`,
    /// `gs://bucket/prefix` or `az://container/prefix`).
    pub fn display(&self) -> String {
        match self {
            RepoLocation::Local(p) => p.display().to_string(),
            RepoLocation::S3 { bucket, prefix } => format!("s3://{bucket}/{prefix}"),
            RepoLocation::Gcs { bucket, prefix } => format!("gs://{bucket}/{prefix}"),
            RepoLocation::Azure { container, prefix } => format!("az://{container}/{prefix}"),
        }
    }

    /// What is at a local location (`None` for object storage).
    pub(crate) fn local_state(&self) -> Result<Option<LocalState>, IcechunkError> {
        let RepoLocation::Local(p) = self else {
            return Ok(None);
        };
        match std::fs::read_dir(p) {
            Ok(mut entries) => Ok(Some(if entries.next().is_none() {
                LocalState::EmptyDir
            } else {
                LocalState::NonEmptyDir
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(LocalState::Absent)),
            // Not a directory, or not readable.
            Err(e) => Err(IcechunkError::Io {
                location: self.display(),
                source: e,
            }),
        }
    }

    /// The repository's storage, with the credentials of the standard environment of its
    /// cloud, as `object_store` reads them (S3: `AWS_*`; GCS: `GOOGLE_*`; Azure: `AZURE_*`,
    /// the account from `AZURE_STORAGE_ACCOUNT_NAME`, Azurite with
    /// `AZURE_STORAGE_USE_EMULATOR`).
    pub(crate) async fn storage(&self) -> Result<Arc<dyn Storage + Send + Sync>, IcechunkError> {
        let at = self.display();
        match self {
            RepoLocation::Local(p) => icechunk::new_local_filesystem_storage(p)
                .await
                .map_err(|e| IcechunkError::icechunk(&at, "opening the local storage", e)),
            RepoLocation::S3 { bucket, prefix } => {
                let storage = icechunk::ObjectStorage::new_s3(
                    bucket.clone(),
                    Some(prefix.clone()),
                    Some(S3Credentials::FromEnv),
                    None,
                    Vec::new(),
                    Vec::new(),
                )
                .await
                .map_err(|e| IcechunkError::icechunk(&at, "opening the S3 storage", e))?;
                Ok(Arc::new(storage))
            }
            RepoLocation::Gcs { bucket, prefix } => new_gcs_storage(
                bucket.clone(),
                Some(prefix.clone()),
                Some(GcsCredentials::FromEnv),
                None,
                Vec::new(),
                Vec::new(),
            )
            .map_err(|e| IcechunkError::icechunk(&at, "opening the GCS storage", e)),
            RepoLocation::Azure { container, prefix } => {
                let account = azure_account().ok_or_else(|| IcechunkError::BadLocation {
                    location: at.clone(),
                    reason: NO_AZURE_ACCOUNT.into(),
                })?;
                new_azure_blob_storage(
                    account,
                    container.clone(),
                    Some(prefix.clone()),
                    Some(AzureCredentials::FromEnv),
                    None,
                )
                .await
                .map_err(|e| IcechunkError::icechunk(&at, "opening the Azure storage", e))
            }
        }
    }
}

/// Why an Azure repository or container cannot be set up.
const NO_AZURE_ACCOUNT: &str =
    "Azure needs the storage account (AZURE_STORAGE_ACCOUNT_NAME in the environment)";

/// The Azure storage account of the environment, as `object_store` reads it.
fn azure_account() -> Option<String> {
    env(&["AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"])
}

/// What is at a local location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LocalState {
    Absent,
    EmptyDir,
    NonEmptyDir,
}

fn env(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok())
        .filter(|v| !v.is_empty())
}

fn env_true(name: &str) -> bool {
    env(&[name]).is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// The S3 settings of the environment (`AWS_REGION`/`AWS_DEFAULT_REGION`,
/// `AWS_ENDPOINT_URL`/`AWS_ENDPOINT`, `AWS_ALLOW_HTTP`, `AWS_SKIP_SIGNATURE`), as
/// `object_store` reads them for our sources; no credentials (a reader brings its own).
pub fn s3_options_from_env() -> S3Options {
    let endpoint = env(&["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]);
    let mut o = S3Options::default();
    o.region = env(&["AWS_REGION", "AWS_DEFAULT_REGION"]);
    // A custom endpoint (MinIO, Ceph, moto) is addressed by path, as object_store does unless
    // told to use virtual hosts.
    o.force_path_style = endpoint.is_some() && !env_true("AWS_VIRTUAL_HOSTED_STYLE_REQUEST");
    o.endpoint_url = endpoint;
    o.anonymous = env_true("AWS_SKIP_SIGNATURE");
    o.allow_http = env_true("AWS_ALLOW_HTTP");
    o
}

/// The virtual chunk container of a source URL prefix: the local file system (`file:///dir/`),
/// S3 with the environment's endpoint and region (`s3://bucket/dir/`; an S3-compatible store
/// when an endpoint is set), HTTP(S) (`https://host/dir/`; plain HTTP allowed for `http://`),
/// Google Cloud Storage (`gs://bucket/dir/`) or Azure Blob Storage (`az://container/dir/`, in
/// the storage account `AZURE_STORAGE_ACCOUNT_NAME` names, as for the sources). No
/// credentials: a reader brings its own when it authorises the container.
pub fn container_for(prefix: &str) -> Result<VirtualChunkContainer, IcechunkError> {
    container_in(prefix, azure_account())
}

/// [`container_for`] with the Azure storage account given.
fn container_in(
    prefix: &str,
    azure_account: Option<String>,
) -> Result<VirtualChunkContainer, IcechunkError> {
    let bad = |reason: String| IcechunkError::Container {
        url: prefix.to_string(),
        reason,
    };
    let store = if prefix.starts_with("file:///") {
        ObjectStoreConfig::LocalFileSystem(PathBuf::new())
    } else if prefix.starts_with("s3://") {
        let opts = s3_options_from_env();
        if opts.endpoint_url.is_some() {
            ObjectStoreConfig::S3Compatible(opts)
        } else {
            ObjectStoreConfig::S3(opts)
        }
    } else if prefix.starts_with("http://") || prefix.starts_with("https://") {
        let mut http = HttpConfig::default();
        if prefix.starts_with("http://") {
            http.opts.insert("allow_http".into(), "true".into());
        }
        ObjectStoreConfig::Http(http)
    } else if prefix.starts_with("gs://") {
        ObjectStoreConfig::Gcs(HashMap::new())
    } else if prefix.starts_with("az://") {
        let account = azure_account.ok_or_else(|| bad(NO_AZURE_ACCOUNT.into()))?;
        ObjectStoreConfig::Azure(HashMap::from([("account".to_string(), account)]))
    } else {
        return Err(bad(
            "only file://, s3://, gs://, az:// and http(s):// sources can be referenced from \
             Icechunk repositories"
                .into(),
        ));
    };
    // The prefix as vzarr writes URLs, not percent-encoded: Icechunk 2.3 matches a chunk's
    // location, percent-decoded, against the prefixes when it reads.
    VirtualChunkContainer::new(prefix.to_string(), store).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_containers_name_their_account() {
        let c = container_in("az://data/archive/", Some("acct".into())).unwrap();
        assert_eq!(c.url_prefix(), "az://data/archive/");
        assert!(
            matches!(&c.store, ObjectStoreConfig::Azure(m) if m.get("account").map(String::as_str) == Some("acct")),
            "{:?}",
            c.store
        );
        let e = container_in("az://data/archive/", None).unwrap_err();
        assert!(e.to_string().contains("AZURE_STORAGE_ACCOUNT_NAME"), "{e}");
        assert!(container_in("ftp://h/x/", None).is_err());
    }
}
