//! The `null_terminated_bytes` data type for zarrs: fixed-length byte strings (numpy `S<n>`,
//! HDF5 null-terminated and null-padded fixed strings, netCDF `char` arrays), which zarrs 0.23
//! does not know.
//!
//! Written the way zarrs' own data types are (compare `RawBitsDataType`): a
//! [`DataTypeTraits`](zarrs::array::DataTypeTraits) implementation, a V3 plugin matching the
//! name, and `bytes` codec support (single-byte components: no byte swapping). Fill values are
//! base64 strings (as zarr-python writes them), shorter values padded with NUL bytes, or arrays
//! of byte values. Decoded elements are the stored bytes, NUL padding included.
//!
//! ### Compatible Implementations
//! zarr-python 3.4's `NullTerminatedBytes` (numpy `S<n>`, read back as `bytes` values).
//!
//! ### Specification
//! - <https://github.com/zarr-developers/zarr-extensions/tree/main/data-types/null_terminated_bytes>
//!
//! ### Data type `name` (Zarr V3)
//! - `null_terminated_bytes`
//!
//! ### Data type `configuration` Example
//! ```rust
//! # let json = r#"
//! {"name": "null_terminated_bytes", "configuration": {"length_bytes": 8}}
//! # "#;
//! # let v: serde_json::Value = serde_json::from_str(json).unwrap();
//! # let dt = vzarr_core::DataType::from_zarr_json(&v).unwrap();
//! # assert_eq!(dt, vzarr_core::DataType::FixedBytes(8));
//! ```

use std::borrow::Cow;

use base64::Engine as _;
use zarrs::array::data_type::api as dt;
use zarrs::metadata::v3::MetadataV3;
use zarrs::metadata::{Configuration, DataTypeSize, Endianness, FillValueMetadata};
use zarrs::plugin::{PluginCreateError, ZarrVersion};

/// The `null_terminated_bytes` data type of a given length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NullTerminatedBytesDataType {
    length_bytes: usize,
}

zarrs::plugin::impl_extension_aliases!(NullTerminatedBytesDataType, v3: "null_terminated_bytes");

impl NullTerminatedBytesDataType {
    /// A data type of `length_bytes` bytes per element.
    pub const fn new(length_bytes: usize) -> Self {
        NullTerminatedBytesDataType { length_bytes }
    }

    /// Bytes per element.
    pub const fn length_bytes(&self) -> usize {
        self.length_bytes
    }
}

impl dt::DataTypeTraitsV3 for NullTerminatedBytesDataType {
    fn create(metadata: &MetadataV3) -> Result<dt::DataType, PluginCreateError> {
        let bad = |why: &str| PluginCreateError::Other(format!("null_terminated_bytes: {why}"));
        let conf = metadata
            .configuration()
            .ok_or_else(|| bad("no configuration"))?;
        let n = conf
            .get("length_bytes")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| bad("configuration has no length_bytes"))?;
        if n == 0 || n > 1 << 20 {
            return Err(bad("length_bytes must be in 1..=1048576"));
        }
        if conf.len() != 1 {
            return Err(bad("unknown configuration fields"));
        }
        Ok(dt::DataType::new(NullTerminatedBytesDataType::new(
            n as usize,
        )))
    }
}

inventory::submit! {
    dt::DataTypePluginV3::new::<NullTerminatedBytesDataType>()
}

impl dt::DataTypeTraits for NullTerminatedBytesDataType {
    fn configuration(&self, _version: ZarrVersion) -> Configuration {
        let mut m = serde_json::Map::new();
        m.insert("length_bytes".into(), self.length_bytes.into());
        Configuration::from(m)
    }

    fn size(&self) -> DataTypeSize {
        DataTypeSize::Fixed(self.length_bytes)
    }

    fn fill_value(
        &self,
        fill_value_metadata: &FillValueMetadata,
        _version: ZarrVersion,
    ) -> Result<dt::FillValue, dt::DataTypeFillValueMetadataError> {
        let mut bytes = if let Some(s) = fill_value_metadata.as_str() {
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| dt::DataTypeFillValueMetadataError)?
        } else if let Some(items) = fill_value_metadata.as_array() {
            items
                .iter()
                .map(|v| {
                    v.as_u64()
                        .and_then(|u| u8::try_from(u).ok())
                        .ok_or(dt::DataTypeFillValueMetadataError)
                })
                .collect::<Result<Vec<u8>, _>>()?
        } else {
            return Err(dt::DataTypeFillValueMetadataError);
        };
        if bytes.len() > self.length_bytes {
            return Err(dt::DataTypeFillValueMetadataError);
        }
        bytes.resize(self.length_bytes, 0);
        Ok(dt::FillValue::from(bytes))
    }

    fn metadata_fill_value(
        &self,
        fill_value: &dt::FillValue,
    ) -> Result<FillValueMetadata, dt::DataTypeFillValueError> {
        Ok(FillValueMetadata::from(
            base64::engine::general_purpose::STANDARD.encode(fill_value.as_ne_bytes()),
        ))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl dt::codec_traits::bytes::BytesDataTypeTraits for NullTerminatedBytesDataType {
    fn encode<'a>(
        &self,
        bytes: Cow<'a, [u8]>,
        _endianness: Option<Endianness>,
    ) -> Result<Cow<'a, [u8]>, dt::codec_traits::bytes::BytesCodecEndiannessMissingError> {
        Ok(bytes)
    }

    fn decode<'a>(
        &self,
        bytes: Cow<'a, [u8]>,
        _endianness: Option<Endianness>,
    ) -> Result<Cow<'a, [u8]>, dt::codec_traits::bytes::BytesCodecEndiannessMissingError> {
        Ok(bytes)
    }
}

inventory::submit! {
    dt::codec_traits::bytes::BytesDataTypePlugin {
        type_id: std::any::TypeId::of::<NullTerminatedBytesDataType>(),
        caster: |any: &dyn std::any::Any| -> Option<&dyn dt::codec_traits::bytes::BytesDataTypeTraits> {
            any.downcast_ref::<NullTerminatedBytesDataType>()
                .map(|t| t as &dyn dt::codec_traits::bytes::BytesDataTypeTraits)
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_metadata_and_fill_values() {
        let m: MetadataV3 = serde_json::from_value(serde_json::json!(
            {"name": "null_terminated_bytes", "configuration": {"length_bytes": 4}}
        ))
        .unwrap();
        let d = dt::DataType::from_metadata(&m).unwrap();
        assert_eq!(d.size(), DataTypeSize::Fixed(4));
        let fv = d
            .fill_value(&FillValueMetadata::from("YWI="), ZarrVersion::V3)
            .unwrap();
        assert_eq!(fv.as_ne_bytes(), b"ab\0\0");
        assert!(
            d.fill_value(&FillValueMetadata::from("YWJjZGU="), ZarrVersion::V3)
                .is_err(),
            "longer than length_bytes"
        );
        let bad: MetadataV3 = serde_json::from_value(serde_json::json!(
            {"name": "null_terminated_bytes", "configuration": {"length_bytes": 0}}
        ))
        .unwrap();
        assert!(dt::DataType::from_metadata(&bad).is_err());
    }
}
