//! Chunks in other files: a `dmrpp:chunk` (or `dmrpp:block`) with an `href` of its own.
//!
//! Hyrax's `get_dmrpp -M` and `gen_dmrpp_side_car` put values it computed (HDF-EOS grids'
//! coordinates, flattened variable-length data) in an HDF5 file beside the granule,
//! `<granule>_mvs.h5`, and point those variables' chunks at it; other sidecars spread a
//! variable's chunks over several files. bes reads the `href` as it reads `dmrpp:href`: a URL,
//! or a path from its data root (`data/dmrpp/grid_1_2d.h5_mvs.h5` for the granule
//! `data/dmrpp/grid_1_2d.h5`), `DMZ::process_chunk`.
//!
//! vzarr reads such a file only from the granule's own directory (or below it), the one place
//! the user authorised by naming the sidecar and its granule: an absolute URL there is taken as
//! it is; a path is taken as the file of its name in the granule's directory when the path's
//! directories are those of the document's own `dmrpp:href` (the granule's path from the same
//! root), are the last ones of the granule's directory (`data/dmrpp/` of `…/data/dmrpp/`), or
//! are none. Any other `href` (another host or directory, `..`, a name vzarr would have to
//! escape) leaves the variable out, with the reason.

/// Where the chunks of one document may be read from.
pub(crate) struct Place<'a> {
    /// The granule's URL: chunks without an `href` are there.
    pub(crate) data_url: &'a str,
    /// The granule's directory: its URL up to and including the last `/`.
    dir: &'a str,
    /// The directories of the document's `dmrpp:href` when it is a path (from Hyrax's data
    /// root, as chunks' `href`s are).
    href_dirs: Option<Vec<&'a str>>,
}

impl<'a> Place<'a> {
    /// The place of the granule at `data_url`, of a document whose `dmrpp:href` is `href`.
    pub(crate) fn new(data_url: &'a str, href: Option<&'a str>) -> Self {
        let dir = data_url.rfind('/').map_or("", |i| &data_url[..=i]);
        let href_dirs = href.map(str::trim).filter(|h| !h.contains("://")).map(|h| {
            let mut parts: Vec<&str> = h.trim_start_matches('/').split('/').collect();
            parts.pop();
            parts
        });
        Place {
            data_url,
            dir,
            href_dirs,
        }
    }

    /// The URL of the file the chunk whose `href` attribute is `href` is in (the granule's
    /// when it has none), or why it is not read.
    pub(crate) fn chunk_url(&self, href: Option<&str>) -> Result<String, String> {
        let Some(h) = href.map(str::trim).filter(|h| !h.is_empty()) else {
            return Ok(self.data_url.to_string());
        };
        if h.contains(crate::DATA_URL_PLACEHOLDER) {
            return Ok(self.data_url.to_string());
        }
        let refused =
            |why: &str| format!("a chunk in another file (href {h:?}): {why}: not read from DMR++");
        if h.contains("://") {
            let rest = h
                .strip_prefix(self.dir)
                .filter(|_| !self.dir.is_empty())
                .ok_or_else(|| refused("not in the granule's directory"))?;
            plain_path(rest).map_err(refused)?;
            return Ok(h.to_string());
        }
        let parts: Vec<&str> = h.trim_start_matches('/').split('/').collect();
        let (name, dirs) = parts.split_last().expect("split yields one part");
        plain_path(&parts.join("/")).map_err(refused)?;
        // The granule's directories, from its URL's path.
        let path = self.dir.split_once("://").map_or(self.dir, |(_, rest)| {
            rest.split_once('/').map_or("", |(_, p)| p)
        });
        let granule_dirs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let as_granule = self.href_dirs.as_deref() == Some(dirs);
        if self.dir.is_empty() || !(as_granule || granule_dirs.ends_with(dirs)) {
            return Err(refused(
                "its directories are not the granule's (it is read only beside the granule)",
            ));
        }
        Ok(format!("{}{name}", self.dir))
    }
}

/// Whether `p` is a relative path vzarr takes as it is: no `.` or `..` part, no empty part, no
/// character a URL would need escaped.
fn plain_path(p: &str) -> Result<(), &'static str> {
    if p.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
        return Err("a path with an empty, `.` or `..` part");
    }
    if p.chars()
        .any(|c| c.is_control() || c.is_whitespace() || matches!(c, '%' | '?' | '#' | '\\'))
    {
        return Err("a name with characters vzarr does not take in a path");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_href_is_read_only_beside_the_granule() {
        let p = Place::new("file:///srv/bes/data/dmrpp/grid_1_2d.h5", None);
        let ok = |h: &str| p.chunk_url(Some(h));
        let beside = "file:///srv/bes/data/dmrpp/grid_1_2d.h5_mvs.h5";
        // Hyrax's paths from its data root, a bare name, a server path.
        assert_eq!(ok("data/dmrpp/grid_1_2d.h5_mvs.h5").unwrap(), beside);
        assert_eq!(ok("dmrpp/grid_1_2d.h5_mvs.h5").unwrap(), beside);
        assert_eq!(ok("grid_1_2d.h5_mvs.h5").unwrap(), beside);
        assert_eq!(
            ok("/srv/bes/data/dmrpp/grid_1_2d.h5_mvs.h5").unwrap(),
            beside
        );
        assert_eq!(ok(beside).unwrap(), beside);
        assert_eq!(p.chunk_url(None).unwrap(), p.data_url);
        assert_eq!(ok("OPeNDAP_DMRpp_DATA_ACCESS_URL").unwrap(), p.data_url);
        // Anywhere else is refused, with the reason.
        for h in [
            "other/grid_1_2d.h5_mvs.h5",
            "data/other/x.h5",
            "../dmrpp/x.h5",
            "data/dmrpp/../../x.h5",
            "/etc/passwd",
            "file:///etc/passwd",
            "https://elsewhere.example/x.h5",
            "file:///srv/bes/data/dmrpp/../x.h5",
            "data/dmrpp/x%2e.h5",
            "data//dmrpp/x.h5",
        ] {
            let e = ok(h).unwrap_err();
            assert!(e.contains("not read from DMR++"), "{h}: {e}");
        }
        // pydap's MOD13Q1 sidecar names its `_mvs.h5` files from the server's root.
        let s3 = Place::new("s3://bucket/sidecar/MOD13Q1/g.hdf", None);
        assert_eq!(
            s3.chunk_url(Some("/sidecar/MOD13Q1/1.hdf_mvs.h5")).unwrap(),
            "s3://bucket/sidecar/MOD13Q1/1.hdf_mvs.h5"
        );
        assert!(s3.chunk_url(Some("/MOD13Q1/x/1.hdf_mvs.h5")).is_err());
        assert!(
            s3.chunk_url(Some("s3://other/sidecar/MOD13Q1/1.hdf_mvs.h5"))
                .is_err()
        );
        // A granule found away from Hyrax's tree (beside its sidecar, or by a template): the
        // href's directories are those of the document's own `dmrpp:href`.
        let moved = Place::new(
            "file:///tmp/x/grid_1_2d.h5",
            Some("data/dmrpp/grid_1_2d.h5"),
        );
        assert_eq!(
            moved
                .chunk_url(Some("data/dmrpp/grid_1_2d.h5_mvs.h5"))
                .unwrap(),
            "file:///tmp/x/grid_1_2d.h5_mvs.h5"
        );
        assert!(moved.chunk_url(Some("data/grid_1_2d.h5_mvs.h5")).is_err());
    }
}
