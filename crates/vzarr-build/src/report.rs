//! Sources left out of a build, and the report file that lists them.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::BuildError;

/// A source that could not be used, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// Source path or URL.
    pub source: String,
    /// Why.
    pub reason: String,
}

/// Writes a failure report: one line per source, `source<TAB>reason`.
pub fn write_report(path: &Path, failures: &[Failure]) -> Result<(), BuildError> {
    let mut text = String::new();
    for f in failures {
        text.push_str(&format!(
            "{}\t{}\n",
            f.source,
            f.reason.replace(['\n', '\t'], " ")
        ));
    }
    std::fs::write(path, text).map_err(|e| BuildError::io(path, e))
}
