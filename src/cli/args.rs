//! The flags of the commands that run the engine (`copy`, `exec`, `sync`), as clap reads them;
//! [`super::engine`] resolves them once into the engine's options.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// Objects copied at the same time (the in-flight window's maximum; bytes in flight stay
    /// within --max-buffer whatever this is). `plan --concurrency` assumes the same 64.
    #[arg(long, default_value_t = 64)]
    pub transfers: usize,
    /// Parts of one large object in flight at the same time.
    #[arg(long, default_value_t = 4)]
    pub part_concurrency: usize,
    /// Read each part of a large object with its own ranged GET (parallel streams, which can
    /// help over long-distance links) instead of one GET per object split as it streams.
    #[arg(long)]
    pub ranged_reads: bool,
    /// Stream every object through this machine even where source and destination are one S3
    /// service with the same credentials (by default those are copied on the server with
    /// CopyObject / UploadPartCopy: no bytes through here, and --bwlimit does not apply to them).
    #[arg(long)]
    pub no_server_side: bool,
    /// Set a content header (content-type, content-encoding, content-language,
    /// content-disposition, cache-control) or a user metadata key on every object written,
    /// over the source's: KEY=VALUE, repeatable.
    #[arg(long = "metadata-set", value_name = "KEY=VALUE")]
    pub metadata_set: Vec<String>,
    /// Do not copy the source's user metadata (content headers and moverctl's own keys are
    /// still written).
    #[arg(long)]
    pub no_metadata: bool,
    /// Upload a large single-part source in parts even where one streamed PUT carrying its MD5
    /// would do (by default an object of up to 4 parts' size whose source states its MD5 goes in
    /// one PUT when the destination checks Content-MD5: one request, no MD5 computed here).
    #[arg(long)]
    pub no_streamed_put: bool,
    /// Preferred multipart part size (raised to fit the destination's limits).
    #[arg(long)]
    pub part_size: Option<String>,
    /// Objects above this size are uploaded in parts.
    #[arg(long)]
    pub multipart_threshold: Option<String>,
    /// Upper bound for part buffers held in memory across the run.
    #[arg(long, default_value = "128MiB")]
    pub max_buffer: String,
    /// Bandwidth limit over the whole run: 200MiB/s, 1Gbps, or rclone's forms: 10M (MiB/s),
    /// 10M:off (upload:download), a timetable "08:00,10M 19:00,off" (local time), off.
    #[arg(long, value_name = "RATE")]
    pub bwlimit: Option<String>,
    /// Requests per second over the whole run.
    #[arg(long)]
    pub tpslimit: Option<u32>,
    /// Attempts after the first for an object that failed.
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// auto: ETags, stored digests and HEAD (CRC64 alone where both ends keep one); an object
    /// whose cloud source states no digest and whose reads nothing checked is written but
    /// `unverified` (exit 9); strict: fail such objects instead; size: accept them, checked by
    /// size; md5: as auto, but MD5 wherever a store offers one (no checksum-only path);
    /// readback: also read every object back and compare.
    #[arg(long, default_value = "auto")]
    pub verify: String,
    /// Show what would be copied and skipped, and why; change nothing.
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// Do not probe an S3 destination on first use (by default one that nothing settles gets a
    /// 3-request probe under .moverctl-probe-*/, removed and saved; if it checks CRC64, writes
    /// are proven by CRC64 instead of an MD5 of every byte).
    #[arg(long, env = "MOVERCTL_NO_PROBE", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_probe: bool,
    /// Only keys matching this glob (repeatable; rclone's rules: '*.safetensors' at any depth,
    /// '/ckpt/**' from the root only, '**' crosses folders).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Leave out keys matching this glob (repeatable; rules as --include).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Read --include patterns from a file, one a line ('#' and ';' start comments).
    #[arg(long, value_name = "FILE")]
    pub include_from: Vec<PathBuf>,
    /// Read --exclude patterns from a file, one a line.
    #[arg(long, value_name = "FILE")]
    pub exclude_from: Vec<PathBuf>,
    /// Only the keys listed in FILE (one a line, or `moverctl ls --json` output), sorted in byte
    /// order; read alongside the listing, so any length works.
    #[arg(long, value_name = "FILE")]
    pub files_from: Option<PathBuf>,
    /// Leave out objects smaller than SIZE (rclone units: 100K, 10M, 1G are binary; a bare
    /// number is KiB; 10MB is 10^7 bytes).
    #[arg(long, value_name = "SIZE")]
    pub min_size: Option<String>,
    /// Leave out objects larger than SIZE.
    #[arg(long, value_name = "SIZE")]
    pub max_size: Option<String>,
    /// Only objects modified within this long (36h, 7d, 2w; a bare number is seconds) or since a
    /// date (2026-11-01).
    #[arg(long, value_name = "AGE")]
    pub max_age: Option<String>,
    /// Only objects modified longer ago than this (or before a date).
    #[arg(long, value_name = "AGE")]
    pub min_age: Option<String>,
    /// Destination HEADs in flight at once, apart from --transfers (default: the checks share
    /// the transfer slots). Listing is not affected (see --list-streams).
    #[arg(long, value_name = "N")]
    pub checkers: Option<usize>,
    /// A large cloud listing (over 10,000 keys) is cut into up to N key ranges, listed at once
    /// and copied from in turn (spreads requests across prefixes); 1: one ordered stream.
    #[arg(long, value_name = "N", default_value_t = moverctl::transfer::DEFAULT_LIST_STREAMS)]
    pub list_streams: usize,
    /// Take a destination object of the source's size as the same: no MD5 comparison, no HEAD.
    #[arg(long, conflicts_with = "checksum")]
    pub size_only: bool,
    /// Decide by checksums, never by modification times: what moverctl always does (accepted for
    /// rclone's habit; see the decision table).
    #[arg(long)]
    pub checksum: bool,
    /// Show progress: the default when stderr is a terminal (accepted for rclone's habit).
    #[arg(long, short = 'P')]
    pub progress: bool,
    /// Journal file (default: in the state folder, named after source and destination).
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// One JSON object per line for each object, then a summary.
    #[arg(long)]
    pub json: bool,
    /// Local destinations: batch (default) syncs files in groups (one sync per 256 files,
    /// 1 GiB or 200 ms) before their journal rows are written; object syncs each file and its
    /// folder entry before it is journaled; end syncs once when the run ends; never leaves it
    /// to the operating system.
    #[arg(long, default_value = "batch", value_name = "WHEN")]
    pub fsync: String,
    /// Local destinations: give each file the source's last-modified time (default true).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true", value_name = "BOOL")]
    pub preserve_mtime: bool,
    /// Print a stats line (done / total, objects, rate, ETA, failures) every DURATION, e.g.
    /// 30s or 5m, to stderr or --log-file. Default: every minute when stderr is not a terminal
    /// (on a terminal the progress bar shows the same); 0 turns it off.
    #[arg(long, value_name = "DURATION")]
    pub stats: Option<String>,
}

#[derive(Debug, Args)]
pub struct CopyArgs {
    /// Where to read: s3://…, gs://…, az://…, a path, or REMOTE:bucket/prefix.
    pub src: String,
    /// Where to write.
    pub dst: String,
    /// Storage class written at the destination: a catalog class (`moverctl providers show
    /// PROVIDER`) or the store's own name (GLACIER_IR, Cool). Overrides the remote's.
    #[arg(long, value_name = "CLASS")]
    pub storage_class: Option<String>,
    /// Print nothing when all is well (no summary); problems and the summary of a run that did
    /// not succeed still go to stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Copy even when the source lists no object (exit 0, nothing done). Without it an empty
    /// source (a typo'd prefix) exits 11 and nothing is created at the destination.
    #[arg(long)]
    pub allow_empty_source: bool,
    /// Take the source's objects from its inventory report instead of listing it: an S3
    /// Inventory manifest.json, an Azure Blob Inventory <rule>-manifest.json or a GCS inventory
    /// report manifest (CSV or Parquet), a local file or a location (s3://inv/…/manifest.json).
    #[arg(long, value_name = "MANIFEST")]
    pub inventory: Option<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// A plan file written by `moverctl plan --save`.
    pub plan: PathBuf,
    /// Storage class written at the destination: a catalog class (`moverctl providers show
    /// PROVIDER`) or the store's own name (GLACIER_IR, Cool). Overrides the remote's.
    #[arg(long, value_name = "CLASS")]
    pub storage_class: Option<String>,
    /// Print nothing when all is well (no summary); problems and the summary of a run that did
    /// not succeed still go to stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Source location, when the plan has none (or to override it).
    #[arg(long)]
    pub src: Option<String>,
    /// Destination location, when the plan has none (or to override it).
    #[arg(long)]
    pub dst: Option<String>,
    /// Run one shard of a plan made with `plan --shards N`: K/N, or auto (JOB_COMPLETION_INDEX
    /// of a Kubernetes Indexed Job, else SLURM_ARRAY_TASK_ID of a Slurm array). --bwlimit and
    /// --tpslimit then apply to this shard's process.
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<String>,
    /// Where shards keep their progress records (default: the plan's, else .moverctl-progress/
    /// beside the destination prefix).
    #[arg(
        long = "progress-location",
        id = "progress_location",
        value_name = "LOCATION"
    )]
    pub progress: Option<String>,
    /// Copy even when the source lists no object (exit 0, nothing done). Without it an empty
    /// source (a typo'd prefix) exits 11 and nothing is created at the destination.
    #[arg(long)]
    pub allow_empty_source: bool,
    /// Take the source's objects from its inventory report instead of listing it: an S3
    /// Inventory manifest.json, an Azure Blob Inventory <rule>-manifest.json or a GCS inventory
    /// report manifest (CSV or Parquet), a local file or a location (s3://inv/…/manifest.json).
    #[arg(long, value_name = "MANIFEST")]
    pub inventory: Option<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Where to read: s3://…, gs://…, az://…, a path, or REMOTE:bucket/prefix.
    pub src: String,
    /// The mirror to keep in step with SRC.
    pub dst: String,
    /// Delete destination objects that are no longer at the source (behind the guards below).
    #[arg(long)]
    pub delete: bool,
    /// Most objects one run may delete: a count (1000) or a percentage of the destination
    /// objects listed (5%). Above it nothing is deleted and the run exits 5.
    #[arg(long, value_name = "N|N%", default_value = "10%")]
    pub max_delete: String,
    /// Delete even when the source lists no object at all. Without it, an empty source (an
    /// unmounted volume, a wrong bucket) deletes nothing, whatever --max-delete says, and the run
    /// exits 5.
    #[arg(long)]
    pub allow_empty_source: bool,
    /// Also delete objects younger than the destination class's minimum storage duration
    /// (they are billed for the rest of it; the summary prices that).
    #[arg(long)]
    pub allow_early_delete: bool,
    /// Storage class written at the destination: a catalog class (`moverctl providers show
    /// PROVIDER`) or the store's own name (GLACIER_IR, Cool). Overrides the remote's.
    #[arg(long, value_name = "CLASS")]
    pub storage_class: Option<String>,
    /// Lock file that keeps runs apart (default: in the state folder, named after SRC and DST).
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Print nothing when all is well; only problems otherwise.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Write run metrics here in Prometheus text format (node_exporter's textfile collector),
    /// atomically.
    #[arg(long, value_name = "PATH")]
    pub metrics_file: Option<PathBuf>,
    /// Also PUT the metrics to a Prometheus Pushgateway group URL after every run, e.g.
    /// http://pushgateway:9091/metrics/job/moverctl/mirror/corpus (needs --metrics-file, which
    /// keeps the last success time across runs).
    #[arg(long, value_name = "URL", requires = "metrics_file")]
    pub metrics_push: Option<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}
