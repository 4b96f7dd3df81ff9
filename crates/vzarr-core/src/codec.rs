//! Bytes-to-bytes codecs that follow the `bytes` codec in a virtual array's codec chain.

use serde_json::{Value, json};

use crate::{CoreError, DataType, Endian};

/// Shuffle mode of the blosc codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BloscShuffle {
    /// No shuffle.
    NoShuffle,
    /// Byte shuffle.
    Shuffle,
    /// Bit shuffle.
    BitShuffle,
}

impl BloscShuffle {
    fn as_str(self) -> &'static str {
        match self {
            BloscShuffle::NoShuffle => "noshuffle",
            BloscShuffle::Shuffle => "shuffle",
            BloscShuffle::BitShuffle => "bitshuffle",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "noshuffle" => BloscShuffle::NoShuffle,
            "shuffle" => BloscShuffle::Shuffle,
            "bitshuffle" => BloscShuffle::BitShuffle,
            _ => return None,
        })
    }
}

/// A bytes-to-bytes codec, in the order it is applied when encoding.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// zlib stream (RFC 1950): HDF5's deflate filter; `numcodecs.zlib`.
    Zlib {
        /// Compression level 0-9.
        level: u32,
    },
    /// Byte shuffle of elements of `element_size` bytes: HDF5's shuffle filter; `numcodecs.shuffle`.
    Shuffle {
        /// Element size in bytes.
        element_size: usize,
    },
    /// Fletcher-32 checksum appended as 4 bytes: HDF5's fletcher32 filter; `numcodecs.fletcher32`.
    Fletcher32,
    /// Zstandard frame: HDF5 filter 32015; Zarr `zstd`.
    Zstd {
        /// Compression level.
        level: i32,
    },
    /// Blosc 1 frame: HDF5 filter 32001; Zarr `blosc`.
    Blosc {
        /// Compressor name (`blosclz`, `lz4`, `lz4hc`, `snappy`, `zlib`, `zstd`).
        cname: String,
        /// Compression level 0-9.
        clevel: u32,
        /// Shuffle mode.
        shuffle: BloscShuffle,
        /// Element size used for shuffling.
        typesize: usize,
        /// Block size (0 = automatic).
        blocksize: usize,
    },
}

impl Codec {
    /// The codec's Zarr v3 metadata (`name` and `configuration`, always present).
    pub fn to_zarr_json(&self) -> Value {
        match self {
            Codec::Zlib { level } => {
                json!({"name": "numcodecs.zlib", "configuration": {"level": level}})
            }
            Codec::Shuffle { element_size } => {
                json!({"name": "numcodecs.shuffle", "configuration": {"elementsize": element_size}})
            }
            Codec::Fletcher32 => json!({"name": "numcodecs.fletcher32", "configuration": {}}),
            Codec::Zstd { level } => {
                json!({"name": "zstd", "configuration": {"level": level, "checksum": false}})
            }
            Codec::Blosc {
                cname,
                clevel,
                shuffle,
                typesize,
                blocksize,
            } => json!({
                "name": "blosc",
                "configuration": {
                    "typesize": typesize,
                    "cname": cname,
                    "clevel": clevel,
                    "shuffle": shuffle.as_str(),
                    "blocksize": blocksize
                }
            }),
        }
    }

    /// Parses a codec's Zarr v3 metadata.
    pub fn from_zarr_json(value: &Value) -> Result<Self, CoreError> {
        let bad = || CoreError::Metadata(format!("unsupported codec {value}"));
        let name = value.get("name").and_then(Value::as_str).ok_or_else(bad)?;
        let empty = json!({});
        let conf = value.get("configuration").unwrap_or(&empty);
        let uint = |k: &str| conf.get(k).and_then(Value::as_u64).ok_or_else(bad);
        Ok(match name {
            "numcodecs.zlib" => Codec::Zlib {
                level: u32::try_from(uint("level")?).map_err(|_| bad())?,
            },
            "numcodecs.shuffle" => Codec::Shuffle {
                element_size: usize::try_from(uint("elementsize")?).map_err(|_| bad())?,
            },
            "numcodecs.fletcher32" => Codec::Fletcher32,
            "zstd" => Codec::Zstd {
                level: conf
                    .get("level")
                    .and_then(Value::as_i64)
                    .and_then(|l| i32::try_from(l).ok())
                    .ok_or_else(bad)?,
            },
            "blosc" => Codec::Blosc {
                cname: conf
                    .get("cname")
                    .and_then(Value::as_str)
                    .ok_or_else(bad)?
                    .to_string(),
                clevel: u32::try_from(uint("clevel")?).map_err(|_| bad())?,
                shuffle: conf
                    .get("shuffle")
                    .and_then(Value::as_str)
                    .and_then(BloscShuffle::parse)
                    .ok_or_else(bad)?,
                typesize: usize::try_from(uint("typesize")?).map_err(|_| bad())?,
                blocksize: usize::try_from(uint("blocksize")?).map_err(|_| bad())?,
            },
            _ => return Err(bad()),
        })
    }

    /// Short human-readable form (`zlib(4)`, `shuffle(2)`, ...).
    pub fn label(&self) -> String {
        match self {
            Codec::Zlib { level } => format!("zlib({level})"),
            Codec::Shuffle { element_size } => format!("shuffle({element_size})"),
            Codec::Fletcher32 => "fletcher32".to_string(),
            Codec::Zstd { level } => format!("zstd({level})"),
            Codec::Blosc {
                cname,
                clevel,
                shuffle,
                ..
            } => {
                format!("blosc({cname},{clevel},{})", shuffle.as_str())
            }
        }
    }
}

/// The Zarr v3 `bytes` codec metadata for elements of `size` bytes in `endian` order.
pub fn bytes_codec_json(element_size: usize, endian: Endian, has_endianness: bool) -> Value {
    if has_endianness && element_size > 1 {
        json!({"name": "bytes", "configuration": {"endian": endian.as_str()}})
    } else {
        json!({"name": "bytes", "configuration": {}})
    }
}

/// The Zarr v3 `vlen-utf8` codec metadata: the array-to-bytes codec of
/// [`DataType::String`] arrays, in place of `bytes` (zarr-extensions `codecs/vlen-utf8`;
/// zarr-python 3.4 writes `{"name": "vlen-utf8", "configuration": {}}`).
pub fn vlen_utf8_codec_json() -> Value {
    json!({"name": "vlen-utf8", "configuration": {}})
}

/// Name of an HDF5 filter id (the registered filter ids of the HDF Group), for messages.
pub fn hdf5_filter_name(id: u32) -> &'static str {
    match id {
        1 => "deflate",
        2 => "shuffle",
        3 => "fletcher32",
        4 => "szip",
        5 => "N-bit",
        6 => "scale-offset",
        307 => "bzip2",
        32000 => "LZF",
        32001 => "blosc",
        32004 => "LZ4",
        32008 => "bitshuffle",
        32013 => "zfp",
        32015 => "zstd",
        32017 => "sz",
        32024 => "sz3",
        32026 => "blosc2",
        _ => "unknown",
    }
}

fn blosc_cname(code: u32) -> Option<&'static str> {
    Some(match code {
        0 => "blosclz",
        1 => "lz4",
        2 => "lz4hc",
        3 => "snappy",
        4 => "zlib",
        5 => "zstd",
        _ => return None,
    })
}

impl Codec {
    /// The codec of one HDF5 filter (`id` with its client data values `cd`) in the pipeline
    /// of a dataset of type `dt`, or why zarr-python 3.4 has none that decodes it. Client
    /// data values a filter leaves out take the defaults the filter's own code uses.
    pub fn from_hdf5_filter(id: u32, cd: &[u32], dt: DataType) -> Result<Codec, String> {
        Ok(match id {
            1 => Codec::Zlib {
                level: cd.first().copied().unwrap_or(6),
            },
            2 => Codec::Shuffle {
                element_size: cd.first().map_or(dt.size(), |&s| s as usize).max(1),
            },
            3 => Codec::Fletcher32,
            32001 => {
                // cd_values: filter revision, blosc version, typesize, buffer size, clevel,
                // shuffle, compressor.
                let typesize = cd.get(2).copied().unwrap_or(dt.size() as u32) as usize;
                let clevel = cd.get(4).copied().unwrap_or(5);
                let shuffle = match cd.get(5).copied().unwrap_or(1) {
                    0 => BloscShuffle::NoShuffle,
                    2 => BloscShuffle::BitShuffle,
                    _ => BloscShuffle::Shuffle,
                };
                let code = cd.get(6).copied().unwrap_or(0);
                let cname = blosc_cname(code)
                    .ok_or_else(|| format!("blosc filter with unknown compressor code {code}"))?;
                Codec::Blosc {
                    cname: cname.into(),
                    clevel,
                    shuffle,
                    typesize,
                    blocksize: 0,
                }
            }
            32015 => Codec::Zstd {
                level: cd.first().map_or(3, |&l| l as i32),
            },
            other => {
                return Err(format!(
                    "unsupported filter {} (HDF5 filter id {other}): zarr-python 3.4 has no codec \
                     that decodes it",
                    hdf5_filter_name(other)
                ));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip() {
        let codecs = [
            Codec::Zlib { level: 4 },
            Codec::Shuffle { element_size: 4 },
            Codec::Fletcher32,
            Codec::Zstd { level: 3 },
            Codec::Blosc {
                cname: "lz4".into(),
                clevel: 5,
                shuffle: BloscShuffle::Shuffle,
                typesize: 4,
                blocksize: 0,
            },
        ];
        for c in codecs {
            let j = c.to_zarr_json();
            assert!(j.get("configuration").is_some(), "{j}");
            assert_eq!(Codec::from_zarr_json(&j).unwrap(), c);
        }
    }

    #[test]
    fn exact_forms() {
        assert_eq!(
            Codec::Zlib { level: 4 }.to_zarr_json(),
            json!({"name": "numcodecs.zlib", "configuration": {"level": 4}})
        );
        assert_eq!(
            Codec::Fletcher32.to_zarr_json().to_string(),
            r#"{"name":"numcodecs.fletcher32","configuration":{}}"#
        );
        assert_eq!(
            bytes_codec_json(4, Endian::Big, true),
            json!({"name": "bytes", "configuration": {"endian": "big"}})
        );
        assert_eq!(
            bytes_codec_json(1, Endian::Big, true).to_string(),
            r#"{"name":"bytes","configuration":{}}"#
        );
    }
}
