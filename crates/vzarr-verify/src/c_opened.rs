//! A source opened for the C libraries: in this process (libhdf5, or netCDF-C for local
//! NetCDF3) or in the worker process ([`crate::worker`]); HDF5 on object storage is downloaded
//! to a temporary file first (the HDF5 library reads local files only).

use std::io::Write;
use std::sync::Arc;

use vzarr_source::{ByteSource, Format, Scheme, locate};

use crate::c_readers::{hdf5_read, nc_read, open_hdf5, open_netcdf};
use crate::source_values::SourceValues;

/// A source opened for a C library.
pub(crate) enum Opened {
    /// HDF5 or NetCDF4 through libhdf5 in this process.
    Hdf5 {
        file: hdf5::File,
        _tmp: Option<tempfile::TempPath>,
    },
    /// Read by the worker process (libhdf5 or netCDF-C out of process).
    InWorker {
        kind: crate::worker::Kind,
        path: std::path::PathBuf,
        _tmp: Option<tempfile::TempPath>,
    },
    /// Local NetCDF3 through netCDF-C in this process.
    Nc3Local { file: netcdf::File },
}

/// The version of the linked HDF5 library, as reports name it.
fn libhdf5() -> String {
    let (a, b, c) = hdf5::library_version();
    format!("libhdf5 {a}.{b}.{c}")
}

impl Opened {
    /// Opens `src` (at `url`, of `format`) for the C library that reads it: HDF5 from any
    /// store (downloaded to a temporary file when not local, its bytes counted in
    /// `downloaded`), NetCDF3 when local; `None` for NetCDF3 on object storage, which
    /// vzarr's own reader reads.
    pub(crate) fn open(
        url: &str,
        src: &Arc<dyn ByteSource>,
        format: Format,
        in_worker: bool,
        downloaded: &mut u64,
    ) -> Result<Option<Opened>, String> {
        use crate::worker::Kind;
        crate::h5filters::register();
        let loc = locate(url).map_err(|e| e.to_string())?;
        let kind = match format {
            Format::NetCdf3 { .. } => Kind::Netcdf,
            _ => Kind::Hdf5,
        };
        if loc.scheme == Scheme::File {
            let path = loc.local_path();
            if in_worker {
                return Ok(Some(Opened::InWorker {
                    kind,
                    path,
                    _tmp: None,
                }));
            }
            return Ok(Some(match kind {
                Kind::Netcdf => Opened::Nc3Local {
                    file: open_netcdf(&path)?,
                },
                Kind::Hdf5 => Opened::Hdf5 {
                    file: open_hdf5(&path)?,
                    _tmp: None,
                },
            }));
        }
        if kind == Kind::Netcdf {
            return Ok(None);
        }
        let tmp = download(src.as_ref(), downloaded)?;
        let path = tmp.to_path_buf();
        if in_worker {
            return Ok(Some(Opened::InWorker {
                kind,
                path,
                _tmp: Some(tmp),
            }));
        }
        let file = open_hdf5(&path).map_err(|e| format!("the downloaded copy: {e}"))?;
        Ok(Some(Opened::Hdf5 {
            file,
            _tmp: Some(tmp),
        }))
    }

    /// The library, as reports name it.
    pub(crate) fn describe(&self) -> String {
        match self {
            Opened::Hdf5 { .. } => format!("{} for HDF5/NetCDF4", libhdf5()),
            Opened::Nc3Local { .. } => "netCDF-C for NetCDF3".into(),
            Opened::InWorker { kind, .. } => match kind {
                crate::worker::Kind::Hdf5 => {
                    format!("{} for HDF5/NetCDF4 (in a worker process)", libhdf5())
                }
                crate::worker::Kind::Netcdf => "netCDF-C for NetCDF3 (in a worker process)".into(),
            },
        }
    }

    /// Reads the region `start`+`count` of variable `var`.
    pub(crate) fn read(
        &self,
        worker: Option<&mut crate::worker::Worker>,
        var: &str,
        start: &[u64],
        count: &[u64],
    ) -> Result<SourceValues, String> {
        match self {
            Opened::InWorker { kind, path, .. } => match worker {
                Some(w) => w.read(*kind, path, var, start, count),
                None => Err("no reader process".into()),
            },
            Opened::Hdf5 { file, .. } => hdf5_read(file, var, start, count),
            Opened::Nc3Local { file } => nc_read(file, var, start, count),
        }
    }
}

/// Copies a source into a temporary file, 16 MiB at a time, adding its size to `downloaded`.
fn download(src: &dyn ByteSource, downloaded: &mut u64) -> Result<tempfile::TempPath, String> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".vzarr-verify-")
        .tempfile()
        .map_err(|e| format!("cannot create a temporary file: {e}"))?;
    let size = src.size();
    let step = 16u64 << 20;
    let mut at = 0u64;
    while at < size {
        let end = (at + step).min(size);
        let bytes = src.read(at..end).map_err(|e| e.to_string())?;
        tmp.write_all(&bytes).map_err(|e| e.to_string())?;
        at = end;
    }
    tmp.flush().map_err(|e| e.to_string())?;
    *downloaded += size;
    Ok(tmp.into_temp_path())
}
