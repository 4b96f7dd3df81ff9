//! Planning speed: 10,000 monthly files with 10 variables each (9 data variables of 31 daily
//! chunks plus the CF time coordinate), combined along time. Prints the figure; run with
//! `cargo bench -p vzarr-plan`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use vzarr_plan::{Concat, PlanOptions, plan};

fn main() {
    for (files, chunk_t) in [(10_000usize, 1u64), (10_000, 31)] {
        let inputs = common::archive(files, chunk_t, 9, &[]);
        let chunks: usize = inputs
            .iter()
            .flat_map(|d| d.arrays.values())
            .map(|a| a.manifest.len())
            .sum();
        let opts = PlanOptions::new(Concat::Existing("time".into()));
        let reader = common::MemReader::default();
        let t = Instant::now();
        let (ds, report) = plan(inputs, &opts, &reader).expect("plan");
        let secs = t.elapsed().as_secs_f64();
        let out_chunks: usize = ds.arrays.values().map(|a| a.manifest.len()).sum();
        println!(
            "plan: {files} files x 10 variables, time chunk {chunk_t}: {secs:.3} s \
             ({:.0} files/s, {chunks} input chunks, {out_chunks} output chunks, {} rectilinear arrays)",
            files as f64 / secs,
            report.rectilinear.len()
        );
    }
}
