//! The `struct` data type for zarrs: packed fields (zarr-python 3.4's `struct`, numpy
//! structured types, HDF5 compounds whose members are packed), which zarrs 0.23 does not
//! know. Elements are read as their bytes, each field in native byte order (the `bytes`
//! codec's `endian` swaps field by field), so values compare as bytes.
//!
//! ### Compatible Implementations
//! zarr-python 3.4's `Struct` (numpy structured arrays; it reads the fill value as an object
//! of field fill values, or the legacy base64 of the little-endian element bytes).
//!
//! ### Specification
//! - <https://github.com/zarr-developers/zarr-extensions/tree/main/data-types/struct>
//!
//! ### Data type `name` (Zarr V3)
//! - `struct`

use std::borrow::Cow;

use zarrs::array::data_type::api as dt;
use zarrs::metadata::v3::MetadataV3;
use zarrs::metadata::{Configuration, DataTypeSize, Endianness, FillValueMetadata};
use zarrs::plugin::{PluginCreateError, ZarrVersion};

/// A `struct` data type: the fields as vzarr's model describes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructDataType {
    data_type: vzarr_core::DataType,
}

zarrs::plugin::impl_extension_aliases!(StructDataType, v3: "struct");

impl StructDataType {
    /// The data type of a [`vzarr_core::DataType::Struct`] (`None` for other types).
    pub fn new(data_type: vzarr_core::DataType) -> Option<Self> {
        matches!(data_type, vzarr_core::DataType::Struct(_)).then_some(StructDataType { data_type })
    }

    /// The fields.
    pub fn data_type(&self) -> &vzarr_core::DataType {
        &self.data_type
    }

    fn to_native(&self, bytes: &mut [u8], stored: Endianness) {
        let native = if cfg!(target_endian = "big") {
            Endianness::Big
        } else {
            Endianness::Little
        };
        if stored != native {
            self.data_type.swap_elements(bytes);
        }
    }
}

impl dt::DataTypeTraitsV3 for StructDataType {
    fn create(metadata: &MetadataV3) -> Result<dt::DataType, PluginCreateError> {
        let json = serde_json::to_value(metadata)
            .map_err(|e| PluginCreateError::Other(format!("struct: {e}")))?;
        let data_type = vzarr_core::DataType::from_zarr_json(&json)
            .map_err(|e| PluginCreateError::Other(format!("struct: {e}")))?;
        StructDataType::new(data_type)
            .map(dt::DataType::new)
            .ok_or_else(|| PluginCreateError::Other("struct: not a struct".into()))
    }
}

inventory::submit! {
    dt::DataTypePluginV3::new::<StructDataType>()
}

impl dt::DataTypeTraits for StructDataType {
    fn configuration(&self, _version: ZarrVersion) -> Configuration {
        let json = self.data_type.to_zarr_json();
        let conf = json
            .get("configuration")
            .and_then(serde_json::Value::as_object)
            .cloned()
            .unwrap_or_default();
        Configuration::from(conf)
    }

    fn size(&self) -> DataTypeSize {
        DataTypeSize::Fixed(self.data_type.size())
    }

    fn fill_value(
        &self,
        fill_value_metadata: &FillValueMetadata,
        _version: ZarrVersion,
    ) -> Result<dt::FillValue, dt::DataTypeFillValueMetadataError> {
        let json = serde_json::to_value(fill_value_metadata)
            .map_err(|_| dt::DataTypeFillValueMetadataError)?;
        let fill = vzarr_core::FillValue::from_zarr_json(self.data_type.clone(), &json)
            .map_err(|_| dt::DataTypeFillValueMetadataError)?;
        let mut bytes = fill.le_bytes().to_vec();
        self.to_native(&mut bytes, Endianness::Little);
        Ok(dt::FillValue::from(bytes))
    }

    fn metadata_fill_value(
        &self,
        fill_value: &dt::FillValue,
    ) -> Result<FillValueMetadata, dt::DataTypeFillValueError> {
        let mut bytes = fill_value.as_ne_bytes().to_vec();
        self.to_native(&mut bytes, Endianness::Little);
        let fill = vzarr_core::FillValue::from_le_bytes(self.data_type.clone(), &bytes)
            .map_err(|_| dt::DataTypeFillValueError)?;
        serde_json::from_value(fill.to_zarr_json(self.data_type.clone()))
            .map_err(|_| dt::DataTypeFillValueError)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl dt::codec_traits::bytes::BytesDataTypeTraits for StructDataType {
    fn encode<'a>(
        &self,
        bytes: Cow<'a, [u8]>,
        endianness: Option<Endianness>,
    ) -> Result<Cow<'a, [u8]>, dt::codec_traits::bytes::BytesCodecEndiannessMissingError> {
        self.decode(bytes, endianness)
    }

    fn decode<'a>(
        &self,
        bytes: Cow<'a, [u8]>,
        endianness: Option<Endianness>,
    ) -> Result<Cow<'a, [u8]>, dt::codec_traits::bytes::BytesCodecEndiannessMissingError> {
        if !self.data_type.has_endianness() {
            return Ok(bytes);
        }
        let stored = endianness.ok_or(dt::codec_traits::bytes::BytesCodecEndiannessMissingError)?;
        let mut owned = bytes.into_owned();
        self.to_native(&mut owned, stored);
        Ok(Cow::Owned(owned))
    }
}

inventory::submit! {
    dt::codec_traits::bytes::BytesDataTypePlugin {
        type_id: std::any::TypeId::of::<StructDataType>(),
        caster: |any: &dyn std::any::Any| -> Option<&dyn dt::codec_traits::bytes::BytesDataTypeTraits> {
            any.downcast_ref::<StructDataType>()
                .map(|t| t as &dyn dt::codec_traits::bytes::BytesDataTypeTraits)
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_metadata_fill_values_and_swaps_fields() {
        let m: MetadataV3 = serde_json::from_value(serde_json::json!(
            {"name": "struct", "configuration": {"fields": [
                {"name": "a", "data_type": "int16"}, {"name": "b", "data_type": "uint8"}
            ]}}
        ))
        .unwrap();
        let d = dt::DataType::from_metadata(&m).unwrap();
        assert_eq!(d.size(), DataTypeSize::Fixed(3));
        let fv = d
            .fill_value(
                &serde_json::from_value(serde_json::json!({"a": -2, "b": 7})).unwrap(),
                ZarrVersion::V3,
            )
            .unwrap();
        assert_eq!(
            fv.as_ne_bytes(),
            &[&(-2i16).to_ne_bytes()[..], &[7]].concat()[..]
        );
        let s = StructDataType::new(
            vzarr_core::DataType::from_zarr_json(&serde_json::to_value(&m).unwrap()).unwrap(),
        )
        .unwrap();
        use dt::codec_traits::bytes::BytesDataTypeTraits as _;
        let out = s
            .decode(
                Cow::Borrowed(&[0x01, 0x02, 0x03][..]),
                Some(Endianness::Big),
            )
            .unwrap();
        assert_eq!(&out[..], &[&0x0102i16.to_ne_bytes()[..], &[3]].concat()[..]);
    }
}
