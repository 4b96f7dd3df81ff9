//! Expiring a repository's old snapshots and collecting its garbage without losing vzarr's
//! provenance.
//!
//! Icechunk's expiration (`icechunk::ops::expiration::expire`; design document 007,
//! <https://github.com/earth-mover/icechunk/blob/main/design-docs/007-basic-expiration.md>)
//! drops the commits older than a time from every branch's history, making the oldest commit
//! kept a child of the repository's first; its garbage collection
//! (`icechunk::ops::gc::garbage_collect`) then deletes what no branch or tag reaches. vzarr's
//! appends record their provenance as a change to their parent commit's ([`crate::delta`]):
//! a history cut below such a commit loses what the change applies to, and the repository
//! could no longer be appended to, synced or checked for stale sources. [`expire`] therefore
//! first gives every branch whose tip records a change a *checkpoint*: an empty commit that
//! records the whole provenance, which no expiration removes (a branch's tip is never
//! expired), then expires and collects.

use std::num::{NonZeroU16, NonZeroUsize};

use icechunk::format::snapshot::SnapshotProperties;
use icechunk::ops::expiration::ExpiredRefAction;
use icechunk::repository::VersionInfo;
use serde_json::json;

use crate::guard::{Target, caught};
use crate::read::open_repo;
use crate::write::ice;
use crate::{IcechunkError, PROPERTY_KEY, RepoLocation, VERSION_KEY};

/// A point in time, as Icechunk's expiration and garbage collection take it.
pub type Time = chrono::DateTime<chrono::Utc>;

/// The message of a checkpoint commit.
pub const CHECKPOINT_MESSAGE: &str =
    "vzarr: provenance checkpoint (the whole provenance, before expiring older snapshots)";

/// What [`expire`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Expired {
    /// The branches given a checkpoint commit.
    pub checkpoints: Vec<String>,
    /// Branches whose record of the sources was lost before (`branch: why`): nothing could
    /// be kept of it (rebuild them to append to them or sync them).
    pub lost: Vec<String>,
    /// Snapshots dropped from the history.
    pub snapshots_expired: u64,
    /// Objects garbage collection deleted (`None` when it was not run).
    pub collected: Option<Collected>,
}

/// What garbage collection deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Collected {
    /// Bytes deleted.
    pub bytes: u64,
    /// Snapshots deleted.
    pub snapshots: u64,
    /// Manifests deleted.
    pub manifests: u64,
    /// Transaction logs deleted.
    pub transaction_logs: u64,
    /// Native chunks deleted.
    pub chunks: u64,
}

/// Expires the snapshots of the repository at `location` older than `older_than`, after a
/// checkpoint on every branch whose tip records its provenance as a change to commits the
/// expiration drops (see the module documentation), then, with `collect_garbage`, deletes the objects no branch or tag reaches
/// that were written before `older_than`. Branches and tags are kept.
///
/// Blocks on vzarr's I/O runtime: call it from outside an async context.
pub fn expire(
    location: &RepoLocation,
    older_than: Time,
    collect_garbage: bool,
) -> Result<Expired, IcechunkError> {
    let at = location.display();
    vzarr_source::runtime()?.block_on(caught(&at, "expiring snapshots", async {
        let repo = open_repo(location, Target::RepoFile).await?;
        let mut done = Expired::default();
        for branch in repo
            .list_branches()
            .await
            .map_err(ice(&at, "listing branches"))?
        {
            let tip = VersionInfo::BranchTipRef(branch.clone());
            // A record already lost (a history cut by an expiration without a checkpoint)
            // cannot be kept: the branch is named, and the expiration goes on.
            let (Some(_), Some(prov), chain) =
                (match crate::delta::provenance_at(&repo, &at, &tip).await {
                    Err(e @ IcechunkError::Content { .. }) => {
                        done.lost.push(format!("{branch}: {e}"));
                        continue;
                    }
                    other => other?,
                })
            else {
                continue;
            };
            // The chain's oldest commit records the whole provenance: while it is younger
            // than the cutoff, nothing of the chain is expired.
            if chain.changes == 0 || chain.base_written.is_some_and(|t| t >= older_than) {
                continue;
            }
            let mut props = SnapshotProperties::new();
            props.insert(
                PROPERTY_KEY.into(),
                serde_json::to_value(&prov)
                    .map_err(|e| IcechunkError::icechunk(&at, "recording the provenance", e))?,
            );
            props.insert(VERSION_KEY.into(), json!(env!("CARGO_PKG_VERSION")));
            let mut session = repo
                .writable_session(&branch)
                .await
                .map_err(ice(&at, "starting a checkpoint commit"))?;
            session
                .commit(CHECKPOINT_MESSAGE)
                .allow_empty(true)
                .properties(props)
                .execute()
                .await
                .map_err(ice(&at, "committing a checkpoint"))?;
            done.checkpoints.push(branch);
        }
        let retries = repo.config().repo_update_retries();
        let updates = repo.config().num_updates_per_repo_info_file();
        let expired = icechunk::ops::expiration::expire(
            repo.asset_manager().clone(),
            older_than,
            ExpiredRefAction::Ignore,
            ExpiredRefAction::Ignore,
            Some(retries),
            updates,
        )
        .await
        .map_err(ice(&at, "expiring snapshots"))?;
        done.snapshots_expired = expired.released_snapshots.len() as u64;
        if collect_garbage {
            let n = |v: u16| NonZeroU16::new(v).expect("not zero");
            let bytes = |v: usize| NonZeroUsize::new(v).expect("not zero");
            let config = icechunk::ops::gc::GCConfig::clean_all(
                older_than,
                older_than,
                None,
                n(50),
                bytes(1 << 28),
                bytes(1 << 30),
                n(16),
                n(64),
                n(8),
                None,
                false,
            );
            let s = icechunk::ops::gc::garbage_collect(
                repo.asset_manager().clone(),
                &config,
                Some(retries),
                updates,
            )
            .await
            .map_err(ice(&at, "collecting garbage"))?;
            done.collected = Some(Collected {
                bytes: s.bytes_deleted,
                snapshots: s.snapshots_deleted,
                manifests: s.manifests_deleted,
                transaction_logs: s.transaction_logs_deleted,
                chunks: s.chunks_deleted,
            });
        }
        Ok(done)
    }))
}

/// The time `text` names, for [`expire`]: an RFC 3339 time (`2026-01-01T00:00:00Z`) or an
/// age before `now`, a whole number with a unit: `s`, `m`, `h`, `d` or `w` (`30d`; `0s`: every
/// snapshot but the branches' and tags' tips). `Err` says why not.
pub fn parse_cutoff(text: &str, now: Time) -> Result<Time, String> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&chrono::Utc));
    }
    let bad = || {
        format!(
            "{text:?} is neither an RFC 3339 time (2026-01-01T00:00:00Z) nor an age such as 30d, 12h, 90m or 0s"
        )
    };
    let unit = text.chars().last().ok_or_else(bad)?;
    let n: i64 = text[..text.len() - unit.len_utf8()]
        .parse()
        .map_err(|_| bad())?;
    let seconds = match unit {
        's' => Some(n),
        'm' => n.checked_mul(60),
        'h' => n.checked_mul(3600),
        'd' => n.checked_mul(86_400),
        'w' => n.checked_mul(7 * 86_400),
        _ => None,
    }
    .filter(|s| *s >= 0)
    .ok_or_else(bad)?;
    chrono::Duration::try_seconds(seconds)
        .and_then(|d| now.checked_sub_signed(d))
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutoffs_are_times_or_ages() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let t = |s: &str| parse_cutoff(s, now).map(|t| t.to_rfc3339());
        assert_eq!(
            t("2026-01-01T00:00:00Z").unwrap(),
            "2026-01-01T00:00:00+00:00"
        );
        assert_eq!(t("30d").unwrap(), "2026-11-02T12:00:00+00:00");
        assert_eq!(t("2w").unwrap(), "2026-11-18T12:00:00+00:00");
        assert_eq!(t("90m").unwrap(), "2026-12-02T10:30:00+00:00");
        assert_eq!(t("0s").unwrap(), "2026-12-02T12:00:00+00:00");
        for bad in [
            "",
            "d",
            "30",
            "-1d",
            "3y",
            "1e3s",
            "99999999999999999w",
            "tomorrow",
        ] {
            let e = t(bad).unwrap_err();
            assert!(e.contains("RFC 3339"), "{bad}: {e}");
        }
    }
}
