//! Prints the structure of an HDF5 file as this crate reads it: every object by path, each
//! dataset's shape, type class, layout and chunk count, and every attribute's name.
//!
//! `cargo run -p vzarr-hdf5-format --example h5walk -- FILE [--chunks]`

use std::sync::Arc;

use vzarr_hdf5_format::{File, FileStorage, ObjectKind};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: h5walk FILE [--chunks]")?;
    let show_chunks = args.any(|a| a == "--chunks");
    let file = File::open(Arc::new(FileStorage::open(&path)?))?;
    println!("superblock: {:?}", file.superblock());
    let paths = file.object_paths()?;
    let mut objects: Vec<(&String, &u64)> = paths.by_address.iter().map(|(a, p)| (p, a)).collect();
    objects.sort();
    for (p, &addr) in objects {
        let oh = match file.object_header(addr) {
            Ok(oh) => oh,
            Err(e) => {
                println!("{p}: {e}");
                continue;
            }
        };
        let kind = file.object_kind(&oh);
        println!("{p} @{addr} {kind:?} (header v{})", oh.version);
        match file.attributes(&oh) {
            Ok(attrs) => {
                for a in attrs {
                    println!(
                        "  @{} {:?} {:?} {} bytes",
                        a.name,
                        a.dataspace.dims,
                        a.datatype.class_name(),
                        a.value.len()
                    );
                }
            }
            Err(e) => println!("  attributes: {e}"),
        }
        if kind == ObjectKind::Group {
            for l in file.links(&oh)? {
                println!("  -> {} {:?}", l.name, l.target);
            }
        }
        if kind == ObjectKind::Dataset {
            let ds = match file.dataset(&oh) {
                Ok(ds) => ds,
                Err(e) => {
                    println!("  dataset: {e}");
                    continue;
                }
            };
            println!(
                "  shape {:?} max {:?} type {} size {} layout v{} {:?}",
                ds.dataspace.dims,
                ds.dataspace.max_dims,
                ds.datatype.class_name(),
                ds.datatype.size,
                ds.layout.version,
                ds.layout.layout
            );
            println!("  filters {:?} fill {:?}", ds.filters, ds.fill_value);
            let mut n = 0u64;
            let r = file.visit_chunks::<vzarr_hdf5_format::Error>(&ds, |c| {
                if show_chunks {
                    println!(
                        "    chunk {:?} @{} {} mask {}",
                        c.scaled, c.address, c.size, c.filter_mask
                    );
                }
                n += 1;
                Ok(())
            });
            match r {
                Ok(()) => println!("  {n} chunks"),
                Err(e) => println!("  chunks: {e}"),
            }
        }
    }
    for (p, e) in &paths.errors {
        println!("error at {p}: {e}");
    }
    Ok(())
}
