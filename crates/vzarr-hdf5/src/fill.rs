//! A dataset's fill value: what the HDF5 library returns for chunks never written, which is
//! what Zarr's `fill_value` must be (the CF `_FillValue` attribute is kept apart, in
//! [`crate::attributes`]).

use vzarr_core::{DataType, Endian, FillValue};
use vzarr_hdf5_format::FillStatus;

/// The fill value of a dataset of data type `dt` in byte order `endian`, from its fill value
/// message: the writer's when one is defined, else zero (the library default, also what an
/// undefined fill value reads as).
pub(crate) fn dataset_fill(
    fill: &vzarr_hdf5_format::FillValue,
    dt: DataType,
    endian: Endian,
) -> Result<FillValue, String> {
    if fill.status != FillStatus::UserDefined {
        return Ok(FillValue::zero(dt));
    }
    let mut buf = fill
        .value
        .as_deref()
        .ok_or("fill value unreadable")?
        .to_vec();
    if endian == Endian::Big && dt.has_endianness() {
        dt.swap_element(&mut buf);
    }
    FillValue::from_le_bytes(dt, &buf).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn msg(status: FillStatus, value: Option<&[u8]>) -> vzarr_hdf5_format::FillValue {
        vzarr_hdf5_format::FillValue {
            source: (5, 3),
            allocation_time: None,
            fill_time: None,
            status,
            value: value.map(Bytes::copy_from_slice),
        }
    }

    #[test]
    fn user_defined_default_and_byte_order() {
        let f = dataset_fill(
            &msg(FillStatus::UserDefined, Some(&[0x01, 0x02])),
            DataType::Int16,
            Endian::Big,
        )
        .unwrap();
        assert_eq!(f.le_bytes(), &[0x02, 0x01]);
        let z = dataset_fill(
            &msg(FillStatus::Default, None),
            DataType::Float32,
            Endian::Little,
        );
        assert_eq!(z.unwrap(), FillValue::zero(DataType::Float32));
        let z = dataset_fill(
            &msg(FillStatus::Undefined, None),
            DataType::Int8,
            Endian::Little,
        );
        assert_eq!(z.unwrap(), FillValue::zero(DataType::Int8));
        // A value that does not fit the type is an error.
        assert!(
            dataset_fill(
                &msg(FillStatus::UserDefined, Some(&[1, 2, 3])),
                DataType::Int16,
                Endian::Little
            )
            .is_err()
        );
    }
}
