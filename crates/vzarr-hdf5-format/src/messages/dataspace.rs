//! Dataspace message, versions 1 and 2 (HDF5 File Format Specification 3.0, section IV.A.2.b
//! "Dataspace Message").

use crate::decode::Cursor;
use crate::error::Result;

/// Largest rank the library allows (`H5S_MAX_RANK`).
pub const MAX_RANK: usize = 32;

/// The maximum dimension value that means "unlimited".
pub const UNLIMITED: u64 = u64::MAX;

/// Kind of dataspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataspaceKind {
    /// One element, rank 0.
    Scalar,
    /// An array of `dims`.
    Simple,
    /// No elements at all.
    Null,
}

/// The shape of a dataset or attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dataspace {
    /// Message version (1 or 2).
    pub version: u8,
    /// Scalar, simple or null.
    pub kind: DataspaceKind,
    /// Current dimensions (empty for scalar and null).
    pub dims: Vec<u64>,
    /// Maximum dimensions when stored ([`UNLIMITED`] for unlimited axes); `None` means equal to
    /// `dims`.
    pub max_dims: Option<Vec<u64>>,
}

impl Dataspace {
    /// Number of elements (0 for null, 1 for scalar); `None` on overflow.
    pub fn num_elements(&self) -> Option<u64> {
        match self.kind {
            DataspaceKind::Null => Some(0),
            DataspaceKind::Scalar => Some(1),
            DataspaceKind::Simple => self.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)),
        }
    }

    /// Maximum dimensions: the stored ones, or the current ones when none are stored.
    pub fn max_dims_or_dims(&self) -> &[u64] {
        self.max_dims.as_deref().unwrap_or(&self.dims)
    }
}

pub(crate) fn decode(c: &mut Cursor) -> Result<Dataspace> {
    let version = c.u8()?;
    if !(1..=2).contains(&version) {
        return Err(c.invalid(format!("dataspace message version {version}")));
    }
    let rank = usize::from(c.u8()?);
    if rank > MAX_RANK {
        return Err(c.invalid(format!("dataspace rank {rank} exceeds {MAX_RANK}")));
    }
    let flags = c.u8()?;
    let kind = if version == 2 {
        let kind = match c.u8()? {
            0 => DataspaceKind::Scalar,
            1 => DataspaceKind::Simple,
            2 => DataspaceKind::Null,
            t => return Err(c.invalid(format!("dataspace type {t}"))),
        };
        if kind != DataspaceKind::Simple && rank > 0 {
            return Err(c.invalid("scalar or null dataspace with a rank"));
        }
        kind
    } else {
        c.skip(5)?;
        if rank > 0 {
            DataspaceKind::Simple
        } else {
            DataspaceKind::Scalar
        }
    };
    let length_bytes = usize::from(c.sizes.length);
    let all_ones = if length_bytes >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * length_bytes)) - 1
    };
    let mut dims = Vec::with_capacity(rank);
    for _ in 0..rank {
        dims.push(c.length()?);
    }
    let max_dims = if flags & 0x01 != 0 && rank > 0 {
        let mut max = Vec::with_capacity(rank);
        for (i, &d) in dims.iter().enumerate() {
            let mut m = c.length()?;
            if m == all_ones {
                m = UNLIMITED;
            }
            if d > m {
                return Err(c.invalid(format!("dimension {i} of size {d} exceeds its maximum {m}")));
            }
            max.push(m);
        }
        Some(max)
    } else {
        None
    };
    Ok(Dataspace {
        version,
        kind,
        dims,
        max_dims,
    })
}
