//! A dataset's fill value from its fill value message, decided by the shared mapping
//! (`vzarr_hdf5_map::fill`): what the HDF5 library returns for chunks never written.

use vzarr_core::{DataType, Endian, FillValue};
use vzarr_hdf5_format::FillStatus;

/// The fill value of a dataset of data type `dt` in byte order `endian`, from its fill value
/// message: the writer's when one is defined, else zero.
pub(crate) fn dataset_fill(
    fill: &vzarr_hdf5_format::FillValue,
    dt: DataType,
    endian: Endian,
) -> Result<FillValue, String> {
    let user = match fill.status {
        FillStatus::UserDefined => Some(
            fill.value
                .as_deref()
                .ok_or("fill value unreadable")?
                .to_vec(),
        ),
        _ => None,
    };
    vzarr_hdf5_map::fill::dataset_fill(user, dt, endian)
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
