//! Typed errors of the DMR++ scanner; every message starts with the sidecar's URL. A variable
//! the scanner cannot map is not an error: it is listed as skipped, with the reason.

use vzarr_core::CoreError;

/// Why a DMR++ document gave no virtual dataset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DmrppError {
    /// The document is larger than the scanner reads.
    #[error("{url}: DMR++ document of {size} bytes, over the {max} bytes read")]
    TooLarge {
        /// Sidecar URL.
        url: String,
        /// Its size.
        size: u64,
        /// The limit ([`crate::MAX_SIDECAR_BYTES`]).
        max: u64,
    },
    /// The document is not well-formed XML, or is past the bounds of the tree read.
    #[error("{url}: {reason}")]
    Xml {
        /// Sidecar URL.
        url: String,
        /// What is wrong, and near which byte.
        reason: String,
    },
    /// Neither the document nor the sidecar's name says where the granule is.
    #[error(
        "{url}: the granule's URL is not known: the sidecar's name does not end in .dmrpp and \
         its dmrpp:href is not an absolute URL beside it"
    )]
    NoDataUrl {
        /// Sidecar URL.
        url: String,
    },
    /// The root element is not a DAP4 `Dataset`.
    #[error("{url}: not a DMR++ document: its root element is <{root}>, not <Dataset>")]
    NotDmrpp {
        /// Sidecar URL.
        url: String,
        /// The root element's local name.
        root: String,
    },
    /// The dataset built does not hold together (a bug or an absurd document).
    #[error("{url}: {object}: {source}")]
    Core {
        /// Sidecar URL.
        url: String,
        /// The group or variable.
        object: String,
        /// What the model refused.
        #[source]
        source: CoreError,
    },
}
