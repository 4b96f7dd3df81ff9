//! Reading sources directly, not through the manifest, for verification.
//!
//! With [`SourceReaders::Native`] (the only readers of a build without the `c-oracle`
//! feature): HDF5 and NetCDF4 through vzarr's own HDF5 reader, which finds the dataset by its
//! path, walks the file's chunk index and decodes the chunks with vzarr's codecs
//! ([`vzarr_hdf5::ValueReader`]); NetCDF3 through vzarr's header parser and ranged reads of
//! the variable's data. No manifest is involved: a reference that points at other bytes than
//! the chunk's reads as other values.
//!
//! With [`SourceReaders::CLibraries`] (builds with the `c-oracle` feature): HDF5 and NetCDF4
//! through libhdf5, local NetCDF3 through netCDF-C ([`crate::c_readers`], in a worker process
//! when one is set), NetCDF3 on object storage as above; HDF5 files on object storage are
//! downloaded to a temporary file first (the HDF5 library reads local files only).

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use vzarr_core::DataType;
use vzarr_netcdf3::Header;
use vzarr_read::{swap_elements, unravel};
use vzarr_source::{ByteSource, Format, SourceStore, sniff};

use crate::SourceReaders;
use crate::source_values::SourceValues;

/// How vzarr's own HDF5 reader is named in reports.
/// How a direct read says the variable is not in the source at all (no link at its path), as
/// opposed to a source or an object that cannot be read.
pub(crate) const ABSENT: &str = "no such variable in the source";

pub(crate) const NATIVE_HDF5: &str =
    "vzarr's HDF5 reader (the file's own chunk index, vzarr's codecs) for HDF5/NetCDF4";
/// How vzarr's own NetCDF3 reader is named in reports.
pub(crate) const NATIVE_NC3: &str =
    "vzarr's NetCDF3 reader (its header parser, ranged reads) for NetCDF3";

enum Opened {
    /// HDF5 or NetCDF4 through vzarr's reader.
    Hdf5(Box<vzarr_hdf5::ValueReader>),
    /// NetCDF3 through vzarr's header parser and ranged reads.
    Nc3 {
        header: Box<Header>,
        src: Arc<dyn ByteSource>,
    },
    /// Through a C library.
    #[cfg(feature = "c-oracle")]
    C(crate::c_opened::Opened),
}

impl Opened {
    /// The reader, as reports name it.
    fn describe(&self) -> String {
        match self {
            Opened::Hdf5(_) => NATIVE_HDF5.to_string(),
            Opened::Nc3 { .. } => NATIVE_NC3.to_string(),
            #[cfg(feature = "c-oracle")]
            Opened::C(c) => c.describe(),
        }
    }
}

/// Open sources, a few at a time.
pub(crate) struct DirectReaders {
    sources: Arc<dyn SourceStore>,
    #[cfg(feature = "c-oracle")]
    readers: SourceReaders,
    #[cfg(feature = "c-oracle")]
    worker: Option<crate::worker::Worker>,
    open: VecDeque<(String, Opened)>,
    /// Bytes downloaded or read from sources directly.
    pub(crate) bytes: u64,
    /// The readers used so far, as reports name them, in the order of first use.
    pub(crate) used: Vec<String>,
}

const KEEP_OPEN: usize = 8;

/// Reads a region of a NetCDF3 variable with ranged reads: the largest trailing block of
/// whole axes is contiguous in the file; records are `record_size` apart.
fn nc3_read(
    header: &Header,
    src: &dyn ByteSource,
    var: &str,
    start: &[u64],
    count: &[u64],
) -> Result<SourceValues, String> {
    let v = header
        .variables
        .iter()
        .find(|v| v.name == var)
        .ok_or_else(|| format!("no variable {var:?} in the file"))?;
    let dtype = v.nc_type.data_type();
    let esize = v.nc_type.size();
    let shape = &v.shape;
    if shape.len() != count.len() {
        return Err(format!(
            "the variable has {} dimensions, the array {}",
            shape.len(),
            count.len()
        ));
    }
    for (k, ((&s, &c), &d)) in start.iter().zip(count).zip(shape).enumerate() {
        if s.checked_add(c).is_none_or(|e| e > d) {
            return Err(format!(
                "axis {k}: region is outside the variable's length {d}"
            ));
        }
    }
    let n: u64 = count.iter().product();
    if n == 0 {
        return Ok(SourceValues {
            dtype,
            bytes: Vec::new(),
        });
    }
    let nd = shape.len();
    // Axes of the in-slab layout: a record variable's slab is one record (axes 1..).
    let first = usize::from(v.is_record);
    // Trailing axes covered whole form one contiguous block with the first partial axis.
    let mut k = nd;
    while k > first && start[k - 1] == 0 && count[k - 1] == shape[k - 1] {
        k -= 1;
    }
    let block_axes = if k > first { k - 1 } else { first };
    let block_elems: u64 = count[block_axes..].iter().product::<u64>().max(1);
    let outer: Vec<u64> = count[..block_axes].to_vec();
    let nblocks: u64 = outer.iter().product();
    let mut reqs: Vec<Range<u64>> = Vec::with_capacity(nblocks as usize);
    for b in 0..nblocks {
        let idx = unravel(b, &outer);
        let mut pos: Vec<u64> = start.to_vec();
        for (p, i) in pos.iter_mut().zip(&idx) {
            *p += i;
        }
        let overflow = || "byte offset overflows".to_string();
        let (base, axes) = if v.is_record {
            let rec = pos[0]
                .checked_mul(header.record_size)
                .ok_or_else(overflow)?;
            (v.begin.checked_add(rec).ok_or_else(overflow)?, 1)
        } else {
            (v.begin, 0)
        };
        let mut lin: u64 = 0;
        for a in axes..nd {
            lin = lin
                .checked_mul(shape[a])
                .and_then(|l| l.checked_add(pos[a]))
                .ok_or_else(overflow)?;
        }
        let offset = lin
            .checked_mul(esize)
            .and_then(|o| o.checked_add(base))
            .ok_or_else(overflow)?;
        let length = block_elems.checked_mul(esize).ok_or_else(overflow)?;
        let end = offset.checked_add(length).ok_or_else(overflow)?;
        reqs.push(offset..end);
    }
    let got = src.read_ranges(&reqs).map_err(|e| e.to_string())?;
    let mut bytes = Vec::with_capacity((n * esize) as usize);
    for g in got {
        bytes.extend_from_slice(&g);
    }
    if !matches!(dtype, DataType::FixedBytes(_)) && cfg!(target_endian = "little") {
        swap_elements(&mut bytes, esize as usize);
    }
    Ok(SourceValues { dtype, bytes })
}

impl DirectReaders {
    /// Readers of the kind `readers` that open sources through `sources` (the reader's
    /// allowed prefixes and recorded records); the C libraries read in `worker` processes
    /// when one is given.
    pub(crate) fn new(
        sources: Arc<dyn SourceStore>,
        readers: SourceReaders,
        worker: Option<crate::WorkerCommand>,
    ) -> Self {
        #[cfg(not(feature = "c-oracle"))]
        let _ = (readers, worker);
        DirectReaders {
            sources,
            #[cfg(feature = "c-oracle")]
            readers,
            #[cfg(feature = "c-oracle")]
            worker: worker.map(crate::worker::Worker::new),
            open: VecDeque::new(),
            bytes: 0,
            used: Vec::new(),
        }
    }

    fn open_source(&mut self, url: &str) -> Result<Opened, String> {
        // Opened through the reader's policies: refused or stale sources are errors here.
        let src = self.sources.open(url).map_err(|e| e.to_string())?;
        let format = sniff(src.as_ref()).map_err(|e| e.to_string())?;
        #[cfg(feature = "c-oracle")]
        if self.readers == SourceReaders::CLibraries
            && let Some(c) = crate::c_opened::Opened::open(
                url,
                &src,
                format,
                self.worker.is_some(),
                &mut self.bytes,
            )?
        {
            return Ok(Opened::C(c));
        }
        match format {
            Format::NetCdf3 { .. } => {
                let header =
                    vzarr_netcdf3::parse_header(src.as_ref()).map_err(|e| e.to_string())?;
                Ok(Opened::Nc3 {
                    header: Box::new(header),
                    src,
                })
            }
            _ => {
                let reader = vzarr_hdf5::ValueReader::open(src).map_err(|e| e.report())?;
                Ok(Opened::Hdf5(Box::new(reader)))
            }
        }
    }

    fn get(&mut self, url: &str) -> Result<&mut Opened, String> {
        if let Some(i) = self.open.iter().position(|(u, _)| u == url) {
            let item = self.open.remove(i).expect("position is valid");
            self.open.push_back(item);
        } else {
            let o = self.open_source(url)?;
            let name = o.describe();
            if !self.used.contains(&name) {
                self.used.push(name);
            }
            if self.open.len() >= KEEP_OPEN {
                self.open.pop_front();
            }
            self.open.push_back((url.to_string(), o));
        }
        Ok(&mut self.open.back_mut().expect("just pushed").1)
    }

    /// Reads the region `start`+`count` of variable `var` of the source at `url`.
    pub(crate) fn read(
        &mut self,
        url: &str,
        var: &str,
        start: &[u64],
        count: &[u64],
    ) -> Result<SourceValues, String> {
        self.get(url)?;
        let opened = &mut self.open.back_mut().ok_or("no source open")?.1;
        let out = match opened {
            Opened::Hdf5(r) => r
                .read(var, start, count)
                .map(|v| SourceValues {
                    dtype: v.data_type,
                    bytes: v.bytes,
                })
                .map_err(|e| match &e {
                    // The path leads nowhere (no link), as opposed to a structure unreadable.
                    vzarr_hdf5::Hdf5Error::Structure {
                        what: "path",
                        source,
                        ..
                    } if matches!(
                        **source,
                        vzarr_hdf5_format::Error::Path { source: None, .. }
                    ) =>
                    {
                        format!("{ABSENT}: {var:?}")
                    }
                    _ => e.report(),
                }),
            Opened::Nc3 { header, src } => nc3_read(header, src.as_ref(), var, start, count),
            #[cfg(feature = "c-oracle")]
            Opened::C(c) => c.read(self.worker.as_mut(), var, start, count),
        }?;
        self.bytes += out.bytes.len() as u64;
        Ok(out)
    }
}
