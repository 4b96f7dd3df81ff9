//! What a verification is asked to do and what it reports.

use std::fmt;
use std::sync::Arc;

use vzarr_core::summary::human_bytes;

use crate::SourceReaders;

/// Progress of a verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyProgress {
    /// Chunks checked so far.
    pub done: u64,
    /// Chunks to check.
    pub total: u64,
}

/// What to verify.
#[derive(Clone)]
pub struct VerifyOptions {
    /// Check a random sample of this many chunks instead of all.
    pub sample: Option<u64>,
    /// Seed of the sample (the same seed picks the same chunks).
    pub seed: u64,
    /// Only these arrays (all when empty).
    pub arrays: Vec<String>,
    /// Failed chunks described in detail (all are counted).
    pub max_reported: usize,
    /// Called after every chunk.
    pub progress: Option<Arc<dyn Fn(VerifyProgress) + Send + Sync>>,
    /// Which readers read the sources directly (default: the C libraries in builds with the
    /// `c-oracle` feature, else vzarr's own readers).
    pub readers: SourceReaders,
    /// With [`SourceReaders::CLibraries`]: read sources through libhdf5 and netCDF-C in this
    /// worker process instead of in this process (a crash or hang of those libraries is then
    /// one failed chunk). Unused by vzarr's own readers.
    pub worker: Option<crate::WorkerCommand>,
    /// The files references that record no provenance (kerchunk's) were made from: an array
    /// whose chunks name no file (all inline, or none stored) is compared with the one given
    /// when the references name none; the audit scans each, and names one no reference points
    /// into while the references point into others (a file a combine dropped). Each is a URL
    /// or a local path, a relative one taken from the current directory.
    pub sources: Vec<String>,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            sample: None,
            seed: 0,
            arrays: Vec::new(),
            max_reported: 10,
            progress: None,
            readers: SourceReaders::default(),
            worker: None,
            sources: Vec::new(),
        }
    }
}

impl VerifyOptions {
    /// Whether the array at `path` is to be checked ([`VerifyOptions::arrays`]).
    pub(crate) fn covers(&self, path: &str) -> bool {
        self.arrays.is_empty() || self.arrays.iter().any(|a| a == path)
    }
}

impl fmt::Debug for VerifyOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifyOptions")
            .field("sample", &self.sample)
            .field("seed", &self.seed)
            .field("arrays", &self.arrays)
            .field("max_reported", &self.max_reported)
            .field("readers", &self.readers)
            .finish_non_exhaustive()
    }
}

/// A chunk whose values through the manifest differ from the source (or could not be read).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Mismatch {
    /// Array path.
    pub array: String,
    /// Chunk index.
    pub chunk: Vec<u64>,
    /// The source compared with.
    pub source: String,
    /// Number of differing values (0 when a side could not be read).
    pub differing: u64,
    /// Index in the array of the first differing value.
    pub first_index: Option<Vec<u64>>,
    /// What differs, in words.
    pub reason: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} chunk {:?} (source {}): {}",
            self.array, self.chunk, self.source, self.reason
        )
    }
}

/// Something that was not compared, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// Array path.
    pub array: String,
    /// Chunk index, when only some chunks are skipped.
    pub chunk: Option<Vec<u64>>,
    /// Why.
    pub reason: String,
}

/// The outcome of a verification.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct VerifyReport {
    /// Chunks in the verified arrays.
    pub chunks_total: u64,
    /// Chunks checked.
    pub chunks_checked: u64,
    /// Values compared.
    pub values_compared: u64,
    /// Bytes fetched through the manifest.
    pub bytes_read: u64,
    /// Bytes read from the sources directly.
    pub source_bytes_read: u64,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Chunks that differ or could not be read.
    pub failed_chunks: u64,
    /// The first failed chunks, in detail.
    pub mismatches: Vec<Mismatch>,
    /// What was not compared.
    pub skipped: Vec<Skipped>,
    /// The readers the sources were read with, in words, in the order of first use.
    pub readers: Vec<String>,
}

impl VerifyReport {
    /// Whether every compared value matched.
    pub fn ok(&self) -> bool {
        self.failed_chunks == 0
    }

    /// One line naming the readers the values were compared with (`compared with ...`).
    pub fn readers_line(&self) -> String {
        if self.readers.is_empty() {
            "compared with no source (nothing to read)".into()
        } else {
            format!("compared with {}", self.readers.join("; "))
        }
    }

    /// One summary line: chunks checked, values compared, bytes read, seconds, outcome.
    pub fn summary(&self) -> String {
        let sampled = if self.chunks_checked < self.chunks_total {
            format!(" (sample of {})", self.chunks_total)
        } else {
            String::new()
        };
        let outcome = if self.ok() {
            "all values match".to_string()
        } else {
            format!("{} chunk(s) differ", self.failed_chunks)
        };
        format!(
            "verified {} chunks{sampled}, {} values compared, {} read through the manifest, {} read from sources directly, {:.2} s: {outcome}",
            self.chunks_checked,
            self.values_compared,
            human_bytes(self.bytes_read),
            human_bytes(self.source_bytes_read),
            self.seconds
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_line() {
        let r = VerifyReport {
            chunks_total: 10,
            chunks_checked: 4,
            values_compared: 400,
            bytes_read: 2048,
            source_bytes_read: 1600,
            seconds: 0.5,
            failed_chunks: 1,
            ..Default::default()
        };
        assert_eq!(
            r.summary(),
            "verified 4 chunks (sample of 10), 400 values compared, 2.0 KiB read through the manifest, 1.6 KiB read from sources directly, 0.50 s: 1 chunk(s) differ"
        );
        assert!(!r.ok());
        assert_eq!(
            r.readers_line(),
            "compared with no source (nothing to read)"
        );
        let r = VerifyReport {
            readers: vec!["a for X".into(), "b for Y".into()],
            ..Default::default()
        };
        assert_eq!(r.readers_line(), "compared with a for X; b for Y");
    }
}
