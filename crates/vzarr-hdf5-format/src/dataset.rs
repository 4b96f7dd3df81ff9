//! The storage description of a dataset, gathered from its object header: dataspace,
//! datatype, layout, filter pipeline, fill value, external files (HDF5 File Format
//! Specification 3.0, section IV.A.2: messages 0x0001, 0x0003, 0x0004/0x0005, 0x0007,
//! 0x0008, 0x000B).

use crate::error::{Error, Result};
use crate::file::File;
use crate::messages::dataspace::{self, Dataspace, DataspaceKind};
use crate::messages::datatype::{self, Datatype};
use crate::messages::fill::{self, AllocationTime, FillStatus, FillValue};
use crate::messages::filters::{self, FilterPipeline};
use crate::messages::layout::{self, Layout, LayoutMessage};
use crate::messages::{decode_first, external_file_count, modification_time, msg};
use crate::object_header::ObjectHeader;

/// What the scanner needs to know about a dataset's storage.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Absolute file offset of the object header.
    pub address: u64,
    /// Shape.
    pub dataspace: Dataspace,
    /// Element type.
    pub datatype: Datatype,
    /// Storage layout.
    pub layout: LayoutMessage,
    /// Filter pipeline, when there is one.
    pub filters: Option<FilterPipeline>,
    /// Fill value.
    pub fill_value: FillValue,
    /// Number of external raw data files, when the data is stored in external files.
    pub external_files: Option<u16>,
    /// Modification time (seconds since the epoch), when recorded.
    pub modification_time: Option<u64>,
}

impl Dataset {
    /// Whether the dataset has at least one filter.
    pub fn is_filtered(&self) -> bool {
        self.filters.as_ref().is_some_and(|p| !p.filters.is_empty())
    }

    /// Bytes of one element in the file.
    pub fn element_size(&self, file: &File) -> u64 {
        self.datatype.storage_size(file.sizes())
    }

    /// Address and size of contiguous data; `None` when the layout is not contiguous or the
    /// data was never written. For layout versions 1 and 2 the size is computed from the
    /// dataspace and the element size, as the library does.
    pub fn contiguous_extent(&self, file: &File) -> Result<Option<(u64, u64)>> {
        let Layout::Contiguous { address, size } = &self.layout.layout else {
            return Ok(None);
        };
        let Some(address) = *address else {
            return Ok(None);
        };
        let size = match size {
            Some(s) => *s,
            None => self
                .dataspace
                .num_elements()
                .and_then(|n| n.checked_mul(self.element_size(file)))
                .ok_or_else(|| {
                    Error::invalid(
                        "data layout message",
                        self.address,
                        "dataset size overflows",
                    )
                })?,
        };
        Ok(Some((address, size)))
    }
}

impl File {
    /// Reads the storage description of the dataset whose object header is `oh`.
    pub fn dataset(&self, oh: &ObjectHeader) -> Result<Dataset> {
        self.dataset_inner(oh)
            .map_err(|e| e.context("dataset object header", oh.address))
    }

    fn dataset_inner(&self, oh: &ObjectHeader) -> Result<Dataset> {
        let dataspace = decode_first(self, oh, msg::DATASPACE, "dataspace message", |c, _| {
            dataspace::decode(c)
        })?
        .ok_or_else(|| Error::invalid("object header", oh.address, "no dataspace message"))?;
        let datatype = decode_first(self, oh, msg::DATATYPE, "datatype message", |c, _| {
            datatype::decode(c)
        })?
        .ok_or_else(|| Error::invalid("object header", oh.address, "no datatype message"))?;
        let layout = decode_first(self, oh, msg::LAYOUT, "data layout message", |c, d| {
            layout::decode(c, d)
        })?
        .ok_or_else(|| Error::invalid("object header", oh.address, "no data layout message"))?;
        let filters = decode_first(self, oh, msg::FILTERS, "filter pipeline message", |c, _| {
            filters::decode(c)
        })?;
        let fill_value = match decode_first(self, oh, msg::FILL, "fill value message", |c, _| {
            fill::decode_new(c)
        })? {
            Some(f) => f,
            None => match decode_first(
                self,
                oh,
                msg::FILL_OLD,
                "fill value (old) message",
                |c, _| fill::decode_old(c),
            )? {
                Some(f) => f,
                None => FillValue {
                    source: (0, 0),
                    allocation_time: Some(match layout.layout {
                        Layout::Compact { .. } => AllocationTime::Early,
                        Layout::Contiguous { .. } => AllocationTime::Late,
                        _ => AllocationTime::Incremental,
                    }),
                    fill_time: None,
                    status: FillStatus::Undefined,
                    value: None,
                },
            },
        };
        if let Layout::Chunked(ch) = &layout.layout {
            let rank = match dataspace.kind {
                DataspaceKind::Simple => dataspace.dims.len(),
                _ => 0,
            };
            if ch.chunk_dims.len() != rank {
                return Err(Error::invalid(
                    "data layout message",
                    oh.address,
                    format!(
                        "chunks of rank {} for a dataspace of rank {rank}",
                        ch.chunk_dims.len()
                    ),
                ));
            }
        }
        Ok(Dataset {
            address: oh.address,
            dataspace,
            datatype,
            layout,
            filters,
            fill_value,
            external_files: external_file_count(self, oh)?,
            modification_time: modification_time(oh),
        })
    }
}
