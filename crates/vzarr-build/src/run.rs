//! One build from its sources to its end: the sequence the command line (`vzarr build`) and
//! the Python package (`vzarr.build`) share, so that appending, the thread pool and the order
//! of scanning, planning and writing are decided in one place.

use vzarr_scan::inputs::SourceRef;

use crate::tail::Tail;
use crate::{Appended, BuildError, BuildOptions, BuildOutcome, Output, build, with_jobs};

/// What a build run tells its caller as it goes (a progress bar, a log).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Progress<'a> {
    /// The sources to scan are known: this many (with those an append records first).
    Sources(usize),
    /// A source was scanned (`true`: without error).
    Scanned(&'a SourceRef, bool),
    /// Scanning and planning are over (or failed).
    Done,
}

/// Builds `sources` as `opts` says: with `append_to`, an append to that output
/// ([`crate::output::plan_append`]: its settings into `opts`), planned at its tail when that
/// gives what a plan of every file gives, else with the sources it records first
/// ([`crate::Appended`] says which); the scan, the plan and `finish` (which writes the
/// outcome, [`crate::output::write`], or renders it) run with the parallel parts on
/// `opts.jobs` threads ([`with_jobs`]); `progress` hears of the sources as they are scanned.
pub fn run<T: Send>(
    sources: Vec<SourceRef>,
    mut opts: BuildOptions,
    append_to: Option<&Output>,
    progress: &(dyn Fn(Progress<'_>) + Sync),
    finish: impl FnOnce(BuildOutcome) -> T + Send,
) -> Result<T, BuildError> {
    let (sources, appending) = match append_to {
        Some(output) => (
            Vec::new(),
            Some((
                output,
                crate::output::plan_append(output, sources, &mut opts)?,
            )),
        ),
        None => (sources, None),
    };
    let opts = &opts;
    with_jobs(opts.jobs, || {
        let (sources, full) = match appending {
            None => (sources, None),
            Some((output, a)) => {
                match crate::tail::append(output, &a.provenance, &a.new, opts, progress) {
                    Ok(Tail::Done(out)) => {
                        progress(Progress::Done);
                        return Ok(finish(*out));
                    }
                    Ok(Tail::Full(reason)) => {
                        let mut all = a.recorded;
                        all.extend(a.new);
                        (all, Some(reason))
                    }
                    Err(e) => {
                        progress(Progress::Done);
                        return Err(e);
                    }
                }
            }
        };
        progress(Progress::Sources(sources.len()));
        let out = build(&sources, opts, &|s, ok| progress(Progress::Scanned(s, ok)));
        progress(Progress::Done);
        let mut out = out?;
        out.appended = full.map(|reason| Appended::Full { reason });
        Ok(finish(out))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn progress_is_told_then_finish_gets_the_outcome() {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/nc3_classic.nc");
        let sources = vec![SourceRef::parse(fixture).unwrap()];
        let heard = Mutex::new(Vec::new());
        let arrays = run(
            sources,
            BuildOptions::default(),
            None,
            &|p| {
                heard.lock().unwrap().push(match p {
                    Progress::Sources(n) => format!("sources {n}"),
                    Progress::Scanned(_, ok) => format!("scanned {ok}"),
                    Progress::Done => "done".into(),
                })
            },
            |out| out.dataset.arrays.len(),
        )
        .unwrap();
        assert!(arrays > 0);
        assert_eq!(
            *heard.lock().unwrap(),
            ["sources 1", "scanned true", "done"]
        );
        // No source: the build's error, and `finish` never runs.
        let none = run(Vec::new(), BuildOptions::default(), None, &|_| {}, |_| {
            unreachable!("no outcome without sources")
        });
        assert!(matches!(none, Err(BuildError::NoInputs)));
    }
}
