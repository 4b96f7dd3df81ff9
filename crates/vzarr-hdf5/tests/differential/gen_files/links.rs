//! Links of every kind in old-style (symbol table) and new-style groups: soft, dangling soft,
//! external, hard links giving one dataset or group two paths (no cycle: the libhdf5 scanner
//! follows a cycle without end).

use std::path::{Path, PathBuf};

use ndarray::Array1;

use super::tag;
use crate::generated::{Ver, create};

pub(crate) fn links(dir: &Path, ver: Ver) -> PathBuf {
    let p = dir.join(format!("links_{}.h5", tag(ver)));
    let f = create(&p, ver, |c| {
        c.sym_k(2, 2);
    });
    let ds = |g: &hdf5::Group, name: &str, n: usize| {
        g.new_dataset_builder()
            .obj_track_times(false)
            .with_data(&Array1::from_elem(n, 1.5f32))
            .create(name)
            .unwrap();
    };
    let a = f.create_group("a").unwrap();
    for i in 0..40 {
        ds(&a, &format!("v{i:02}"), 3 + i % 4);
    }
    let b = a.create_group("b").unwrap();
    ds(&b, "deep", 5);
    a.link_soft("/a/b/deep", "soft_to_dataset").unwrap();
    a.link_soft("../nowhere", "dangling").unwrap();
    a.link_external("other.h5", "/x", "external").unwrap();
    f.link_hard("/a/b/deep", "deep_again").unwrap();
    f.link_hard("/a/b", "b_again").unwrap();
    f.link_soft("/a", "soft_to_group").unwrap();
    f.close().unwrap();
    p
}
