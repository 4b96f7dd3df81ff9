//! Command-line flags (clap) and their validation into the library's options, in one place.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use vzarr_build::shard::Shard;
use vzarr_build::{BuildOptions, DEFAULT_FILE_TIMEOUT_SECS, Format, OnError, Output, Settings};
use vzarr_core::{SmallChunkPolicy, SmallChunks};
use vzarr_scan::inputs::{Filters, SourceRef};

#[derive(Parser)]
#[command(
    name = "vzarr",
    version,
    about = "Virtual Zarr v3 datasets over HDF5 and NetCDF files"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(clap::Args, Clone)]
pub(crate) struct ScanArgs {
    /// Split uncompressed contiguous variables larger than SIZE into virtual chunks along the
    /// first axis (e.g. 4MiB, 512KiB, 1000000); merged small chunks then stay within SIZE
    /// too, unless --chunk-target says otherwise.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) split_contiguous: Option<u64>,
    /// The HDF5/NetCDF4 scanner: native (pure Rust, local files and object storage) or
    /// libhdf5 (the former scanner, kept as an oracle; local files only; only in builds with
    /// the cargo feature c-oracle).
    #[arg(long, value_name = "SCANNER", default_value = "native")]
    pub(crate) hdf5_scanner: Hdf5ScannerArg,
    /// Most bytes of variable-length strings stored inline per array (UTF-8 text plus 4 bytes
    /// per element; default 64MiB); a larger string array is left out with a warning.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) max_string_bytes: Option<u64>,
    /// Record soft links, external links and second hard links to an object in the
    /// attributes of the group that holds them (`links_references`, the draft Links and
    /// Object References convention VirtualiZarr writes) instead of reading a soft link's
    /// target again under the link's name and leaving the others out.
    #[arg(long)]
    pub(crate) record_links: bool,
    /// Leave HDF5 object references out (datasets, compound members and attributes), which
    /// are otherwise read as the paths of their targets (the Links and Object References and
    /// `ref` conventions).
    #[arg(long)]
    pub(crate) no_object_references: bool,
    /// Where the granules of DMR++ sidecars are, when not beside them (nor at the sidecar's
    /// own dmrpp:href): a URL or path, {name} standing for the sidecar's file name without
    /// .dmrpp (e.g. 's3://bucket/granules/{name}'; one ending in / gets the name appended).
    #[arg(long, value_name = "TEMPLATE")]
    pub(crate) data_url: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Hdf5ScannerArg {
    /// The pure-Rust scanner.
    Native,
    /// The libhdf5 scanner.
    Libhdf5,
}

/// Which readers `vzarr verify` compares the manifest's values with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReadersArg {
    /// vzarr's own readers: HDF5's chunk index walked and decoded with vzarr's codecs,
    /// NetCDF3 through its header (no C library).
    Native,
    /// libhdf5 and netCDF-C (builds with the cargo feature c-oracle).
    C,
}

/// What `vzarr build` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    /// kerchunk version 1 reference JSON with Zarr v3 keys (one file).
    Kerchunk,
    /// An Icechunk repository (spec version 2; a local directory, or s3://, gs:// or
    /// az://bucket/prefix), one commit per build (per piece past --piece-refs chunks).
    Icechunk,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Kerchunk => Format::Kerchunk,
            FormatArg::Icechunk => Format::Icechunk,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnErrorArg {
    /// Stop at the first bad source; write nothing.
    Fail,
    /// Leave bad sources out, list them in the report, build the rest (exit status 2).
    Skip,
}

/// Where the sources are and how to scan them.
#[derive(clap::Args, Clone)]
pub(crate) struct SourceArgs {
    /// Files, directories (walked recursively), object-store URLs, or prefixes ending in /
    /// (s3://bucket/dir/).
    pub(crate) inputs: Vec<String>,
    /// A catalog: a file with one path or URL per line (# starts a comment; repeatable).
    #[arg(long, value_name = "FILE")]
    pub(crate) catalog: Vec<PathBuf>,
    /// Keep only files found in directories or prefixes that match GLOB (e.g. '*.nc';
    /// a pattern with / matches the path below the directory; repeatable).
    #[arg(long, value_name = "GLOB")]
    pub(crate) include: Vec<String>,
    /// Leave out files found in directories or prefixes that match GLOB (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub(crate) exclude: Vec<String>,
    /// Scans in flight at once (default: every core; at least 128 when sources are on object
    /// storage); also the threads that plan and write (default: every core).
    #[arg(short, long, value_name = "N", default_value_t = 0)]
    pub(crate) jobs: usize,
    /// What to do with a source that cannot be scanned.
    #[arg(long, value_enum, default_value = "fail")]
    pub(crate) on_error: OnErrorArg,
    /// Reuse scans stored under DIR, keyed by URL, size and modification time; store new
    /// ones there.
    #[arg(long, value_name = "DIR")]
    pub(crate) cache_dir: Option<PathBuf>,
    /// Fail, writing nothing, when any variable or attribute has to be left out.
    #[arg(long)]
    pub(crate) strict: bool,
    /// A source whose scan takes longer than SECONDS fails (0: no limit).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_FILE_TIMEOUT)]
    pub(crate) file_timeout: u64,
    #[command(flatten)]
    pub(crate) scan: ScanArgs,
}

/// How to combine several sources.
#[derive(clap::Args, Clone)]
pub(crate) struct CombineArgs {
    /// Concatenate the files along this existing dimension (e.g. time).
    #[arg(long, value_name = "DIM", conflicts_with = "new_dim")]
    pub(crate) concat_dim: Option<String>,
    /// Stack the files along a new leading dimension (e.g. member).
    #[arg(long, value_name = "NAME")]
    pub(crate) new_dim: Option<String>,
    /// Coordinate values of the new dimension, one per file in input order (default: the
    /// file names).
    #[arg(
        long,
        value_name = "V1,V2,...",
        value_delimiter = ',',
        requires = "new_dim"
    )]
    pub(crate) new_dim_values: Option<Vec<String>>,
    /// Accept gaps along the concatenation coordinate (overlaps stay errors).
    #[arg(long)]
    pub(crate) allow_gaps: bool,
    /// Re-encode the CF time coordinate into these units (default: the first file's).
    #[arg(long, value_name = "UNITS")]
    pub(crate) time_units: Option<String>,
    /// Order and check the files by this variable (1-D along --concat-dim, e.g. time_centered
    /// or XTIME) instead of the dimension's coordinate variable; a CF time variable is
    /// re-encoded like a coordinate, the coordinate itself is kept as stored.
    #[arg(long, value_name = "VAR", requires = "concat_dim")]
    pub(crate) order_by: Option<String>,
}

impl CombineArgs {
    /// `base` with how to combine several sources, as these flags say.
    pub(crate) fn settings(&self, base: Settings) -> Settings {
        Settings {
            concat_dim: self.concat_dim.clone(),
            new_dim: self.new_dim.clone(),
            new_dim_values: self.new_dim_values.clone(),
            allow_gaps: self.allow_gaps,
            time_units: self.time_units.clone(),
            order_by: self.order_by.clone(),
            ..base
        }
    }
}

/// What a build does with small chunks.
#[derive(clap::Args, Clone)]
pub(crate) struct SmallChunkArgs {
    /// What to do with small chunks: inline (the default: merge adjacent uncompressed chunks
    /// under 64 KiB into larger virtual chunks, then keep inline the arrays whose references
    /// would still average under 1 KiB, and copy other chunks under 1 KiB inline), merge
    /// (merge only; copy no data), keep (reference every chunk as it is stored).
    #[arg(long, value_name = "POLICY")]
    pub(crate) small_chunks: Option<SmallChunksArg>,
    /// Merged chunks, and the chunks of arrays kept inline, hold up to SIZE (default 4MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) chunk_target: Option<u64>,
    /// Keep an array inline only if what the output stores of it (its chunks re-encoded)
    /// takes at most SIZE (default 16MiB); a larger one stays referenced, with a warning. An
    /// array is decoded for that only if it decodes to at most 16 times SIZE.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) inline_max: Option<u64>,
    /// Store at most SIZE inline in all (as written), the cheapest arrays first (default
    /// 256MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) inline_total: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum SmallChunksArg {
    /// Merge, then keep inline what would still be referenced in small pieces.
    Inline,
    /// Merge adjacent uncompressed chunks into larger virtual chunks; copy no data.
    Merge,
    /// Reference every chunk as it is stored.
    Keep,
}

impl SmallChunkArgs {
    /// `base` with the small-chunk policy these flags ask for.
    pub(crate) fn settings(&self, base: Settings) -> Settings {
        Settings {
            small_chunks: self.small_chunks.map(|m| match m {
                SmallChunksArg::Inline => SmallChunks::Inline,
                SmallChunksArg::Merge => SmallChunks::Merge,
                SmallChunksArg::Keep => SmallChunks::Keep,
            }),
            chunk_target: self.chunk_target,
            inline_max: self.inline_max,
            inline_total: self.inline_total,
            ..base
        }
    }
}

/// Where a build or a combine writes, and how.
#[derive(clap::Args, Clone)]
pub(crate) struct OutputArgs {
    /// Output: a reference file (written atomically; a local path, or an s3://, gs:// or
    /// az:// URL), or with --format icechunk a repository (a local directory, or
    /// s3://, gs:// or az://bucket/prefix).
    #[arg(short, long, value_name = "OUT.json|REPO")]
    pub(crate) output: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "kerchunk")]
    pub(crate) format: FormatArg,
    /// The branch of an Icechunk repository to commit to.
    #[arg(long, value_name = "BRANCH", default_value = "main")]
    pub(crate) branch: String,
    /// With --format icechunk: the most chunk references Icechunk holds in memory before
    /// they are committed; a build of more is written in pieces of at most N, one commit
    /// each, that the branch gains all together or not at all (smaller: less memory, more
    /// commits).
    #[arg(long, value_name = "N", default_value_t = vzarr_icechunk::PIECE_REFS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) piece_refs: usize,
    /// With --format icechunk: one commit per piece. What a build of more than --piece-refs
    /// chunks does anyway; kept for scripts that ask for it.
    #[arg(long, conflicts_with = "one_commit")]
    pub(crate) commit_per_piece: bool,
    /// With --format icechunk: one commit whatever the size, the whole build held in
    /// Icechunk's memory until it commits (a few hundred bytes a reference: several GB at
    /// 10 million); --piece-refs is then ignored.
    #[arg(long)]
    pub(crate) one_commit: bool,
}

impl OutputArgs {
    /// The output these flags name, validated by the library.
    pub(crate) fn output(&self) -> Result<Output> {
        Ok(
            Output::parse(&self.output, self.format.into(), &self.branch)?
                .with_piece_refs(self.piece_refs)
                .with_commits(if self.one_commit {
                    vzarr_icechunk::Commits::One
                } else {
                    vzarr_icechunk::Commits::per_piece(self.commit_per_piece)
                }),
        )
    }
}

/// What `vzarr build` and `vzarr combine` share: how the sources are combined, what is done
/// with their small chunks, and where the reports go.
#[derive(clap::Args, Clone)]
pub(crate) struct CombiningArgs {
    #[command(flatten)]
    pub(crate) combine: CombineArgs,
    #[command(flatten)]
    pub(crate) small: SmallChunkArgs,
    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

/// Where to put reports.
#[derive(clap::Args, Clone)]
pub(crate) struct ReportArgs {
    /// Where to list the sources left out with --on-error skip (default: OUT.json.failed.txt).
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
    /// Also write the summary (files, scans, cache hits, arrays, chunks, bytes, seconds) as
    /// JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) summary_json: Option<PathBuf>,
}

impl ReportArgs {
    /// Checks, before anything is scanned, that the reports asked for can be written where
    /// they are to go.
    pub(crate) fn check_writable(&self) -> Result<()> {
        for p in [&self.report, &self.summary_json].into_iter().flatten() {
            vzarr_build::output::check_file_writable(p)?;
        }
        Ok(())
    }
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Virtualise files: write Zarr v3 metadata and chunk references (kerchunk v1 JSON).
    ///
    /// One file is virtualised as it is. Several files (directories, catalogs, prefixes) are
    /// combined into one dataset along --concat-dim, or stacked along a new dimension with
    /// --new-dim.
    Build {
        #[command(flatten)]
        sources: SourceArgs,
        #[command(flatten)]
        output: OutputArgs,
        /// Extend OUT.json with the given new files: its recorded sources are combined with
        /// them (their scans come from --cache-dir when cached there); the result equals a
        /// full rebuild. An Icechunk repository gets the result as a new commit.
        #[arg(long)]
        append: bool,
        #[command(flatten)]
        combining: CombiningArgs,
    },
    /// Scan one shard of the sources (every N-th, starting at K) into a partial file, for
    /// `vzarr combine`; run shards 0..N on any batch engine.
    Scan {
        #[command(flatten)]
        sources: SourceArgs,
        /// The shard: K/N (K from 0 to N-1).
        #[arg(long, value_name = "K/N", default_value = "0/1")]
        shard: Shard,
        /// Partial scan file to write.
        #[arg(short, long, value_name = "PARTIAL.json")]
        output: PathBuf,
    },
    /// Combine the partial scans of every shard into one reference file (or, with --format
    /// icechunk, a commit of an Icechunk repository).
    Combine {
        /// Partial scan files of shards 0..N.
        #[arg(required = true)]
        partials: Vec<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        combining: CombiningArgs,
    },
    /// Print what the scanner sees in a file: arrays, shapes, types, chunking, codecs; and
    /// which small chunks a build would merge or keep inline.
    Inspect {
        /// HDF5, NetCDF4 or NetCDF3 file (or object-store URL), or an Icechunk repository
        /// (a local directory, or s3://, gs:// or az://bucket/prefix) written by vzarr.
        input: String,
        /// The branch, for an Icechunk repository.
        #[arg(long, value_name = "BRANCH", default_value = "main")]
        branch: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        scan: ScanArgs,
        #[command(flatten)]
        small: SmallChunkArgs,
    },
    /// Check references: read every chunk (or a --sample) through the manifest and compare
    /// every value with the source read directly; exit status 1 if any value differs.
    Verify(VerifyArgs),
    /// Print values through the references, e.g. `vzarr cat OUT.json 'tas[0:3,10,:]'`.
    Cat(CatArgs),
    /// Check DMR++ sidecars against their granules (each sidecar's layout compared with the
    /// granule's, or with --ranges by range reads only); exit status 1 if any does not match.
    #[command(name = "check-dmrpp")]
    CheckDmrpp(crate::dmrpp_cmd::CheckDmrppArgs),
    /// Bring an output in line with its sources: new files appended, changed ones replaced.
    Sync(crate::sync_cmd::SyncArgs),
    /// Expire an Icechunk repository's old snapshots and collect its garbage, keeping what
    /// vzarr records of its sources (for appends and sync).
    Expire(crate::expire_cmd::ExpireArgs),
    /// Upgrade existing references (kerchunk's JSON or Parquet, Zarr v2 metadata) to Zarr v3
    /// references or an Icechunk repository, their sources checked and recorded and small
    /// chunks merged and inlined as a build does.
    Upgrade(crate::upgrade_cmd::UpgradeArgs),
    /// Serve reads of sources through libhdf5 and netCDF-C for `vzarr verify` (internal).
    #[command(name = "__verify-worker", hide = true)]
    VerifyWorker,
    /// Scan one local HDF5 file with the libhdf5 scanner for `--hdf5-scanner libhdf5`
    /// (internal).
    #[command(name = "__scan-worker", hide = true)]
    ScanWorker {
        /// The file.
        path: PathBuf,
        /// Split contiguous datasets above this many bytes.
        split_contiguous: Option<u64>,
    },
}

impl Command {
    /// Every subcommand's name, as typed.
    #[cfg(test)]
    pub(crate) const NAMES: [&'static str; 12] = [
        "build",
        "sync",
        "expire",
        "scan",
        "combine",
        "inspect",
        "verify",
        "cat",
        "check-dmrpp",
        "upgrade",
        "__verify-worker",
        "__scan-worker",
    ];

    /// The subcommand's name, as typed (for hints that name its options).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Command::Build { .. } => "build",
            Command::Scan { .. } => "scan",
            Command::Combine { .. } => "combine",
            Command::Inspect { .. } => "inspect",
            Command::Verify(_) => "verify",
            Command::Cat(_) => "cat",
            Command::CheckDmrpp(_) => "check-dmrpp",
            Command::Sync(_) => "sync",
            Command::Expire(_) => "expire",
            Command::Upgrade(_) => "upgrade",
            Command::VerifyWorker => "__verify-worker",
            Command::ScanWorker { .. } => "__scan-worker",
        }
    }
}

/// A command with its flags validated into the library's options.
pub(crate) enum Run {
    /// `vzarr build`.
    Build {
        sources: Vec<SourceRef>,
        opts: BuildOptions,
        output: Output,
        append: bool,
        report: ReportArgs,
    },
    /// `vzarr scan --shard`.
    Scan {
        sources: Vec<SourceRef>,
        opts: BuildOptions,
        shard: Shard,
        output: PathBuf,
    },
    /// `vzarr combine`.
    Combine {
        partials: Vec<PathBuf>,
        opts: BuildOptions,
        output: Output,
        report: ReportArgs,
    },
    /// `vzarr inspect`.
    Inspect {
        source: SourceRef,
        scan: vzarr_scan::ScanOptions,
        small: SmallChunkPolicy,
        json: bool,
    },
    /// `vzarr inspect` of an Icechunk repository.
    InspectRepo {
        location: vzarr_icechunk::RepoLocation,
        branch: String,
        json: bool,
    },
    /// `vzarr verify`.
    Verify(VerifyArgs),
    /// `vzarr cat`.
    Cat(CatArgs),
    /// `vzarr check-dmrpp`.
    CheckDmrpp(crate::dmrpp_cmd::CheckDmrppArgs),
    /// `vzarr sync`.
    Sync(crate::sync_cmd::SyncArgs),
    /// `vzarr expire`.
    Expire(crate::expire_cmd::ExpireArgs),
    /// `vzarr upgrade`.
    Upgrade(crate::upgrade_cmd::UpgradeArgs),
    /// The worker process of `vzarr verify`.
    VerifyWorker,
    /// The worker process of the libhdf5 scanner.
    ScanWorker {
        /// The file.
        path: PathBuf,
        /// Split contiguous datasets above this many bytes.
        split_contiguous: Option<u64>,
    },
}

/// Validates a parsed command line into a [`Run`].
pub(crate) fn validate(command: Command) -> Result<Run> {
    Ok(match command {
        Command::Build {
            sources,
            output,
            append,
            combining:
                CombiningArgs {
                    combine,
                    small,
                    report,
                },
        } => Run::Build {
            opts: build_options(&sources, Some((&combine, &small)))?,
            sources: collect(&sources)?,
            output: output.output()?,
            append,
            report,
        },
        Command::Scan {
            sources,
            shard,
            output,
        } => Run::Scan {
            opts: build_options(&sources, None)?,
            sources: collect(&sources)?,
            shard,
            output,
        },
        Command::Combine {
            partials,
            output,
            combining:
                CombiningArgs {
                    combine,
                    small,
                    report,
                },
        } => Run::Combine {
            partials,
            opts: BuildOptions {
                on_error: OnError::Skip,
                ..small
                    .settings(combine.settings(Settings::new()))
                    .options()?
            },
            output: output.output()?,
            report,
        },
        Command::Inspect {
            input,
            json,
            branch,
            ..
        } if vzarr_icechunk::is_repository(&input) => Run::InspectRepo {
            location: vzarr_icechunk::RepoLocation::parse(&input)?,
            branch,
            json,
        },
        Command::Inspect {
            input,
            json,
            scan,
            small,
            ..
        } => {
            let found = vzarr_scan::inputs::collect(
                std::slice::from_ref(&input),
                &[],
                &Filters::default(),
            )?;
            let [source] = <[SourceRef; 1]>::try_from(found)
                .map_err(|_| anyhow::anyhow!("{input}: inspect takes one file"))?;
            Run::Inspect {
                source,
                scan: scan_options(&scan, DEFAULT_FILE_TIMEOUT)?,
                small: small
                    .settings(Settings::new())
                    .small_chunk_policy()?
                    .unwrap_or_default(),
                json,
            }
        }
        Command::Verify(args) => Run::Verify(args),
        Command::Cat(args) => Run::Cat(args),
        Command::Sync(args) => Run::Sync(args),
        Command::Expire(args) => Run::Expire(args),
        Command::Upgrade(args) => Run::Upgrade(args),
        Command::CheckDmrpp(args) => Run::CheckDmrpp(args),
        Command::VerifyWorker => Run::VerifyWorker,
        Command::ScanWorker {
            path,
            split_contiguous,
        } => Run::ScanWorker {
            path,
            split_contiguous,
        },
    })
}

/// Options shared by the commands that read through references.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct ReadArgs {
    /// Allow reading sources under this prefix: a local directory or a URL prefix such as
    /// s3://bucket/dir/ (repeatable). Also read from $VZARR_ALLOW_PREFIXES (comma-separated)
    /// and from the file $XDG_CONFIG_HOME/vzarr/allowed-prefixes (one per line). The prefixes
    /// the references record only narrow these; with none allowed, nothing is read.
    #[arg(long = "allow-prefix", value_name = "PREFIX")]
    pub(crate) allow_prefix: Vec<String>,
    /// Also allow the prefixes the references record (only for references you made or trust).
    #[arg(long)]
    pub(crate) trust_references: bool,
    /// Read even if a source's size or modification time changed since the build.
    #[arg(long)]
    pub(crate) ignore_stale: bool,
    /// Requests in flight at most.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub(crate) concurrency: usize,
    /// The branch to read, when the references are an Icechunk repository.
    #[arg(long, value_name = "BRANCH", default_value = "main")]
    pub(crate) branch: String,
}

impl ReadArgs {
    /// The reader options these flags (and the environment and config file) ask for.
    pub(crate) fn options(&self) -> Result<vzarr_read::ReadOptions> {
        let mut allow_prefixes = self.allow_prefix.clone();
        allow_prefixes.extend(vzarr_read::configured_prefixes()?);
        Ok(vzarr_read::ReadOptions {
            allow_prefixes,
            trust_recorded_prefixes: self.trust_references,
            ignore_stale: self.ignore_stale,
            concurrency: self.concurrency.max(1),
            ..Default::default()
        })
    }
}

/// Arguments of `vzarr verify`.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct VerifyArgs {
    /// Reference file (a path, or a file://, s3://, gs://, az:// or http(s):// URL), or an
    /// Icechunk repository (a local directory, or s3://, gs:// or az://bucket/prefix).
    #[arg(value_name = "OUT.json|REPO")]
    pub(crate) refs: String,
    /// Check a random sample of N chunks instead of all of them.
    #[arg(long, value_name = "N")]
    pub(crate) sample: Option<u64>,
    /// Seed of the random sample (the same seed checks the same chunks).
    #[arg(long, value_name = "SEED", default_value_t = 0, requires = "sample")]
    pub(crate) seed: u64,
    /// Only verify this array (repeatable).
    #[arg(long = "array", value_name = "PATH")]
    pub(crate) arrays: Vec<String>,
    /// Describe at most this many differing chunks (all are counted).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) max_reported: usize,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    /// The readers of the sources: native (vzarr's own: HDF5's chunk index walked and
    /// decoded with vzarr's codecs, NetCDF3 through its header) or c (libhdf5 and netCDF-C;
    /// builds with the cargo feature c-oracle, where it is the default).
    #[arg(long, value_name = "READERS")]
    pub(crate) readers: Option<ReadersArg>,
    /// With --readers c, sources are read through libhdf5 and netCDF-C in a separate
    /// process; a read taking longer than SECONDS stops it and counts as a failed chunk.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub(crate) read_timeout: u64,
    /// A file the references were made from (repeatable; for references that record none,
    /// such as kerchunk's): arrays whose chunks name no file are compared with it when the
    /// references name no other, and a file no reference points into is reported as dropped.
    #[arg(long = "source", value_name = "FILE|URL")]
    pub(crate) sources: Vec<String>,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

impl VerifyArgs {
    /// The readers asked for (default: the C libraries where built, else vzarr's own).
    pub(crate) fn source_readers(&self) -> Result<vzarr_verify::SourceReaders> {
        let r = match self.readers {
            None => vzarr_verify::SourceReaders::default(),
            Some(ReadersArg::Native) => vzarr_verify::SourceReaders::Native,
            Some(ReadersArg::C) => vzarr_verify::SourceReaders::CLibraries,
        };
        if !r.available() {
            anyhow::bail!(
                "--readers c is not part of this build: it needs the cargo feature `c-oracle` \
                 (e.g. `cargo install --locked --path . --features c-oracle`, which builds HDF5 and \
                 netCDF-C from source and needs cmake >= 3.26); --readers native needs no C \
                 library"
            );
        }
        Ok(r)
    }
}

/// Arguments of `vzarr cat`.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct CatArgs {
    /// Reference file (a path, or a file://, s3://, gs://, az:// or http(s):// URL), or an
    /// Icechunk repository (a local directory, or s3://, gs:// or az://bucket/prefix).
    #[arg(value_name = "OUT.json|REPO")]
    pub(crate) refs: String,
    /// Array and optional numpy-like selection, e.g. 'tas[0:3,10,:]', 'g/v[-1]', 'time'.
    #[arg(value_name = "VAR[SEL]")]
    pub(crate) selection: String,
    /// Print the values as JSON (nested lists) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

/// A byte size flag (the library's [`vzarr_build::parse_size`]).
fn parse_size(s: &str) -> Result<u64, String> {
    vzarr_build::parse_size(s)
}

/// Seconds a source's scan may take by default (`--file-timeout`).
const DEFAULT_FILE_TIMEOUT: u64 = DEFAULT_FILE_TIMEOUT_SECS;

/// The scan options these flags ask for; the libhdf5 scanner runs in worker processes
/// (this binary's `__scan-worker`) stopped after `timeout_secs` (0: no limit).
fn scan_options(a: &ScanArgs, timeout_secs: u64) -> Result<vzarr_scan::ScanOptions> {
    if a.hdf5_scanner == Hdf5ScannerArg::Libhdf5 && !vzarr_scan::Hdf5Scanner::Libhdf5.available() {
        anyhow::bail!(
            "--hdf5-scanner libhdf5 is not part of this build: it needs the cargo feature \
             `c-oracle` (e.g. `cargo install --locked --path . --features c-oracle`, which builds HDF5 \
             and netCDF-C from source and needs cmake >= 3.26)"
        );
    }
    let worker = match a.hdf5_scanner {
        Hdf5ScannerArg::Native => None,
        Hdf5ScannerArg::Libhdf5 => Some(vzarr_scan::worker::Libhdf5Worker {
            program: std::env::current_exe().context("locating the vzarr binary")?,
            args: vec!["__scan-worker".into()],
            timeout: (timeout_secs > 0).then(|| std::time::Duration::from_secs(timeout_secs)),
        }),
    };
    Ok(vzarr_scan::ScanOptions::default()
        .with_split_contiguous(a.split_contiguous)
        .with_max_string_bytes(a.max_string_bytes)
        .with_object_references(!a.no_object_references)
        .with_record_links(a.record_links)
        .with_dmrpp_data_url(a.data_url.clone())
        .with_hdf5_scanner(match a.hdf5_scanner {
            Hdf5ScannerArg::Native => vzarr_scan::Hdf5Scanner::Native,
            Hdf5ScannerArg::Libhdf5 => vzarr_scan::Hdf5Scanner::Libhdf5,
        })
        .with_libhdf5_worker(worker))
}

/// The build options these flags ask for (validated by the library's [`Settings`]), with the
/// inputs to record.
pub(crate) fn build_options(
    s: &SourceArgs,
    c: Option<(&CombineArgs, &SmallChunkArgs)>,
) -> Result<BuildOptions> {
    let base = Settings {
        jobs: s.jobs,
        on_error: match s.on_error {
            OnErrorArg::Fail => OnError::Fail,
            OnErrorArg::Skip => OnError::Skip,
        },
        cache_dir: s.cache_dir.clone(),
        strict: s.strict,
        file_timeout_secs: s.file_timeout,
        scan: scan_options(&s.scan, s.file_timeout)?,
        ..Settings::new()
    };
    let settings = match c {
        Some((c, small)) => small.settings(c.settings(base)),
        None => base,
    };
    let mut opts = settings.options()?;
    opts.inputs = vzarr_scan::inputs::recorded_inputs(&s.inputs, &s.catalog, &filters(s))?;
    Ok(opts)
}

/// The include/exclude patterns these flags give.
fn filters(s: &SourceArgs) -> Filters {
    Filters {
        include: s.include.clone(),
        exclude: s.exclude.clone(),
    }
}

/// The sources these flags name, in order.
fn collect(s: &SourceArgs) -> Result<Vec<SourceRef>> {
    Ok(vzarr_scan::inputs::collect(
        &s.inputs,
        &s.catalog,
        &filters(s),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_size("512kib"), Ok(512 << 10));
        assert_eq!(parse_size("1000000"), Ok(1_000_000));
        assert_eq!(parse_size("2 GB"), Ok(2_000_000_000));
        assert!(parse_size("0").is_err());
        assert!(parse_size("4 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
    }
}
