//! A dataset's fill value: what the HDF5 library returns for chunks never written (HDF5 File
//! Format Specification 3.0, IV.A.2.f, "The Fill Value Message"), which is what Zarr's
//! `fill_value` must be (the CF `_FillValue` attribute is kept apart, in [`crate::attrs`]).

use vzarr_core::{DataType, Endian, FillValue};

/// The fill value of a dataset of data type `dt` in byte order `endian`: the writer's stored
/// bytes (`user`) when one is defined, else zero (the library default, also what an
/// undefined fill value reads as).
pub fn dataset_fill(
    user: Option<Vec<u8>>,
    dt: DataType,
    endian: Endian,
) -> Result<FillValue, String> {
    let Some(mut buf) = user else {
        return Ok(FillValue::zero(dt));
    };
    if endian == Endian::Big && dt.has_endianness() {
        dt.swap_element(&mut buf);
    }
    FillValue::from_le_bytes(dt, &buf).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_defined_default_and_byte_order() {
        let f = dataset_fill(Some(vec![0x01, 0x02]), DataType::Int16, Endian::Big).unwrap();
        assert_eq!(f.le_bytes(), &[0x02, 0x01]);
        let z = dataset_fill(None, DataType::Float32, Endian::Little);
        assert_eq!(z.unwrap(), FillValue::zero(DataType::Float32));
        // A value that does not fit the type is an error.
        assert!(dataset_fill(Some(vec![1, 2, 3]), DataType::Int16, Endian::Little).is_err());
    }
}
