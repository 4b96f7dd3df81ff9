//! What a build does with small chunks: the policy, recorded in an output's provenance when
//! it is not the default (so that an append applies the same one).
//!
//! A reference costs a key in the output and a request (or at least a trip through a reader's
//! chunk machinery) when read; a chunk of a few bytes costs far more through its reference
//! than in its file. So, by default, chunks that lie back to back in a file, uncompressed, are
//! merged into larger virtual chunks, and arrays whose references would stay tiny are read and
//! kept inline in few chunks. The planner's `compact` module does the work.

use serde::{Deserialize, Serialize};

/// A reference shorter than this is small: an array whose references average less, once
/// merged, is kept inline; the small chunks of other arrays are copied inline one by one.
pub const SMALL_REFERENCE_BYTES: u64 = 1 << 10;

/// Chunks under this many bytes (their nominal shape, uncompressed) are merged with their
/// neighbours where they lie back to back; larger chunks are left as they are.
pub const MERGE_BELOW_BYTES: u64 = 64 << 10;

/// What to do with small chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SmallChunks {
    /// Reference every chunk as the scanners find it.
    Keep,
    /// Merge adjacent uncompressed chunks into larger virtual chunks; copy nothing.
    Merge,
    /// Merge, then keep inline what would still be referenced in small pieces.
    #[default]
    Inline,
}

impl std::str::FromStr for SmallChunks {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "keep" => Ok(SmallChunks::Keep),
            "merge" => Ok(SmallChunks::Merge),
            "inline" => Ok(SmallChunks::Inline),
            other => Err(format!("{other:?}: keep, merge or inline")),
        }
    }
}

impl SmallChunks {
    /// The policy's name, as [`std::str::FromStr`] reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            SmallChunks::Keep => "keep",
            SmallChunks::Merge => "merge",
            SmallChunks::Inline => "inline",
        }
    }
}

/// Merged and inline chunks hold up to this many bytes unless a user says otherwise.
pub const DEFAULT_TARGET_CHUNK_BYTES: u64 = 4 << 20;
/// Most bytes the output stores of one array kept inline (its chunks as written, re-encoded)
/// unless a user says otherwise.
pub const DEFAULT_INLINE_ARRAY_BYTES: u64 = 16 << 20;
/// Most bytes the output stores inline in all (what arrays kept inline and small chunks copied
/// take, as written) unless a user says otherwise.
pub const DEFAULT_INLINE_TOTAL_BYTES: u64 = 256 << 20;
/// An array is decoded for inlining only if it decodes to at most this many times the bytes
/// it may store ([`SmallChunkPolicy::inline_decoded_bytes`]).
pub const INLINE_DECODED_PER_STORED: u64 = 16;

/// How a build treats small chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SmallChunkPolicy {
    /// Keep, merge, or merge and inline.
    pub mode: SmallChunks,
    /// Merged chunks, and the chunks of arrays kept inline, hold up to this many bytes (a
    /// chunk larger by itself is left as it is).
    pub target_chunk_bytes: u64,
    /// An array is kept inline only when what the output stores of it (its chunks
    /// re-encoded, as written) takes at most this many bytes; it is decoded for that only if
    /// it decodes to at most [`SmallChunkPolicy::inline_decoded_bytes`].
    pub inline_array_bytes: u64,
    /// A build stores at most this many bytes inline in all (as written); arrays beyond stay
    /// referenced (the cheapest first is what fits).
    pub inline_total_bytes: u64,
}

impl Default for SmallChunkPolicy {
    fn default() -> Self {
        SmallChunkPolicy {
            mode: SmallChunks::default(),
            target_chunk_bytes: DEFAULT_TARGET_CHUNK_BYTES,
            inline_array_bytes: DEFAULT_INLINE_ARRAY_BYTES,
            inline_total_bytes: DEFAULT_INLINE_TOTAL_BYTES,
        }
    }
}

impl SmallChunkPolicy {
    /// The default policy with `mode`.
    pub fn with_mode(mut self, mode: SmallChunks) -> Self {
        self.mode = mode;
        self
    }

    /// The policy with merged and inline chunks of up to `bytes`.
    pub fn with_target_chunk_bytes(mut self, bytes: u64) -> Self {
        self.target_chunk_bytes = bytes;
        self
    }

    /// The policy with arrays kept inline up to `bytes` stored each.
    pub fn with_inline_array_bytes(mut self, bytes: u64) -> Self {
        self.inline_array_bytes = bytes;
        self
    }

    /// Most bytes an array is decoded to for inlining: [`INLINE_DECODED_PER_STORED`] times
    /// [`SmallChunkPolicy::inline_array_bytes`] (256 MiB by default). What the output stores
    /// is bounded by the per-array and total bounds; this bounds the work and the memory of
    /// inlining apart from it (an array of very compressible values decodes to many times
    /// what it stores; a chunk that claims to decode to far more, a zip bomb, is not decoded).
    pub fn inline_decoded_bytes(&self) -> u64 {
        self.inline_array_bytes
            .saturating_mul(INLINE_DECODED_PER_STORED)
    }

    /// The policy with at most `bytes` stored inline per build.
    pub fn with_inline_total_bytes(mut self, bytes: u64) -> Self {
        self.inline_total_bytes = bytes;
        self
    }

    /// Whether this is the default policy (which provenance does not record).
    pub fn is_default(&self) -> bool {
        *self == SmallChunkPolicy::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print() {
        for m in [SmallChunks::Keep, SmallChunks::Merge, SmallChunks::Inline] {
            assert_eq!(m.as_str().parse::<SmallChunks>().unwrap(), m);
        }
        assert!("all".parse::<SmallChunks>().unwrap_err().contains("keep"));
        let p = SmallChunkPolicy::default().with_mode(SmallChunks::Merge);
        assert!(!p.is_default());
        let text = serde_json::to_string(&p).unwrap();
        assert!(text.contains("\"mode\":\"merge\""), "{text}");
        assert_eq!(serde_json::from_str::<SmallChunkPolicy>(&text).unwrap(), p);
        assert_eq!(
            SmallChunkPolicy::default().inline_decoded_bytes(),
            256 << 20
        );
        let huge = p.with_inline_array_bytes(u64::MAX);
        assert_eq!(huge.inline_decoded_bytes(), u64::MAX);
    }
}
