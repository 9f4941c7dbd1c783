//! The words of `--help`: headings, one-line descriptions and worked examples per command.

/// The options every command takes (clap's global arguments), shown last under
/// [`super::GLOBAL`].
pub(super) const GLOBAL_IDS: &[&str] = &[
    "profile",
    "endpoint_url",
    "config",
    "providers",
    "retry_timeout",
    "verbose",
    "log_level",
    "log_file",
    "log_format",
];

/// Headings shared by the commands, in the order they are shown, with the flags (clap ids) under
/// each.
pub(super) const HEADINGS: &[(&str, &[&str])] = &[
    (
        "What to copy",
        &[
            "include",
            "exclude",
            "include_from",
            "exclude_from",
            "files_from",
            "inventory",
            "min_size",
            "max_size",
            "max_age",
            "min_age",
            "allow_empty_source",
            "size_only",
            "checksum",
        ],
    ),
    ("Deleting", &["delete", "max_delete", "allow_early_delete"]),
    (
        "How objects are written",
        &[
            "storage_class",
            "metadata_set",
            "no_metadata",
            "preserve_mtime",
            "fsync",
        ],
    ),
    (
        "Speed",
        &[
            "transfers",
            "part_concurrency",
            "checkers",
            "list_streams",
            "bwlimit",
            "tpslimit",
            "part_size",
            "multipart_threshold",
            "max_buffer",
            "ranged_reads",
            "no_server_side",
            "no_streamed_put",
            "retries",
        ],
    ),
    (
        "Verification and safety",
        &["verify", "no_probe", "dry_run", "journal", "lock"],
    ),
    (
        "Output",
        &[
            "quiet",
            "json",
            "progress",
            "stats",
            "metrics_file",
            "metrics_push",
        ],
    ),
];

/// Headings of one command's own flags, shown before the shared ones: (command, id, heading).
pub(super) const COMMAND_HEADINGS: &[(&str, &str, &str)] = &[
    ("exec", "src", "Plan and shards"),
    ("exec", "dst", "Plan and shards"),
    ("exec", "shard", "Plan and shards"),
    ("exec", "progress_location", "Plan and shards"),
    ("sync", "allow_empty_source", "Deleting"),
    ("drain", "complete_when", "Checkpoints"),
    ("drain", "every", "Checkpoints"),
    ("drain", "watch", "Checkpoints"),
    ("drain", "on_durable", "Checkpoints"),
    ("drain", "keep_local", "Checkpoints"),
    ("drain", "keep_remote", "Checkpoints"),
    ("drain", "keep_every", "Checkpoints"),
    ("stage", "node", "Staging"),
    ("stage", "plan", "Staging"),
    ("stage", "nodes", "Staging"),
    ("stage", "evict", "Staging"),
    ("stage", "wait_ready", "Staging"),
    ("stage", "timeout", "Staging"),
    ("status", "src", "What to show"),
    ("status", "dst", "What to show"),
    ("status", "stale_after", "What to show"),
    ("status", "progress", "What to show"),
    ("ls", "max_depth", "What to list"),
    ("ls", "summary", "What to list"),
    ("probe", "size", "Measuring"),
    ("probe", "streams", "Measuring"),
    ("probe", "requests", "Measuring"),
    ("probe", "no_save", "Measuring"),
    ("plan", "example", "The corpus"),
    ("plan", "bytes", "The corpus"),
    ("plan", "objects", "The corpus"),
    ("plan", "size_profile", "The corpus"),
    ("plan", "inventory", "The corpus"),
    ("plan", "inventory_format", "The corpus"),
    ("plan", "s3_columns", "The corpus"),
    ("plan", "src", "The corpus"),
    ("plan", "prefixes", "The corpus"),
    ("plan", "from", "From where to where"),
    ("plan", "to", "From where to where"),
    ("plan", "pick", "From where to where"),
    ("plan", "compute_at", "From where to where"),
    ("plan", "restore_tier", "From where to where"),
    ("plan", "exit_waiver", "From where to where"),
    ("plan", "then", "From where to where"),
    ("plan", "then_dst", "From where to where"),
    ("plan", "delete_source", "From where to where"),
    ("plan", "accept_policy_risk", "From where to where"),
    ("plan", "months", "Time and reads"),
    ("plan", "reads_per_month", "Time and reads"),
    ("plan", "epochs", "Time and reads"),
    ("plan", "over_months", "Time and reads"),
    ("plan", "read_rate", "Time and reads"),
    ("plan", "store_read_rate", "Time and reads"),
    ("plan", "bandwidth", "Speed"),
    ("plan", "workers", "Speed"),
    ("plan", "worker_nic", "Speed"),
    ("plan", "concurrency", "Speed"),
    ("plan", "stream_throughput", "Speed"),
    ("plan", "latency_ms", "Speed"),
    ("plan", "no_probe", "Speed"),
    ("plan", "gpu_hourly", "GPU and worker cost"),
    ("plan", "gpus", "GPU and worker cost"),
    ("plan", "gpu_rate", "GPU and worker cost"),
    ("plan", "worker_hourly", "GPU and worker cost"),
    ("plan", "tiering", "Fast tier (--tiering)"),
    ("plan", "dataset", "Fast tier (--tiering)"),
    ("plan", "checkpoint", "Fast tier (--tiering)"),
    ("plan", "fast_tier", "Fast tier (--tiering)"),
    ("plan", "fast_tier_price", "Fast tier (--tiering)"),
    ("plan", "fast_tier_throughput", "Fast tier (--tiering)"),
    ("plan", "object_throughput", "Fast tier (--tiering)"),
    ("plan", "nodes", "Fast tier (--tiering)"),
    ("plan", "train_hours", "Fast tier (--tiering)"),
    ("plan", "jobs_per_month", "Fast tier (--tiering)"),
    ("plan", "dst", "Saving and shards"),
    ("plan", "save", "Saving and shards"),
    ("plan", "plans_dir", "Saving and shards"),
    ("plan", "shards", "Saving and shards"),
    ("plan", "progress", "Saving and shards"),
    ("plan", "report", "Output"),
];

/// One-line descriptions where the doc comment's first clause would not do (the doc comment in
/// full is `moverctl help COMMAND`'s): by id, or `command.id` for one command's.
pub(super) const SHORT: &[(&str, &str)] = &[
    (
        "status.src",
        "Source of a `copy` run (with --dst; instead of a plan)",
    ),
    ("status.dst", "Destination of a `copy` run (with --src)"),
    ("status.json", "Print one JSON document instead of text"),
    (
        "plan.size_profile",
        "Object sizes as shares of the count: \"70%:256KiB,25%:64MiB,5%:4GiB\"",
    ),
    ("plan.json", "Print the ranking as JSON"),
    (
        "inventory",
        "Read the source from its inventory report (S3, Azure, GCS manifest) instead of listing",
    ),
    (
        "no_probe",
        "Do not probe an S3 destination on first use (MD5 proves the writes)",
    ),
    (
        "plan.no_probe",
        "Ignore saved probe results (`moverctl probe`); use the defaults",
    ),
    (
        "list_streams",
        "List a large source as up to N key ranges at once",
    ),
    (
        "plan.store_read_rate",
        "Read rate each store gives the GPUs: 20Gbps or azure=50Gbps,b2=5Gbps",
    ),
    (
        "plan.read_rate",
        "Rate the GPUs consume data while training [default: reads x corpus / --train-hours]",
    ),
    (
        "plan.delete_source",
        "Price deleting the source after the copy (its minimum storage duration)",
    ),
    (
        "plan.worker_hourly",
        "What one copying machine costs per hour, in USD",
    ),
    (
        "plan.accept_policy_risk",
        "Rank candidates relying on a reasonable-use rule by their price",
    ),
    (
        "plan.then",
        "Multi-hop: copy on from the destination to PLACE (repeat for more legs)",
    ),
    (
        "plan.then_dst",
        "The location of each --then place, in order",
    ),
    (
        "plan.tiering",
        "Plan the tiering boundary instead of a move",
    ),
    (
        "plan.checkpoint",
        "Checkpoints: size=SIZE,every=DURATION[,keep=N], e.g. size=2TB,every=1h,keep=5",
    ),
    (
        "plan.fast_tier",
        "The fast tier: a catalog id (`moverctl providers show aws`) or onprem",
    ),
    (
        "plan.nodes",
        "Machines reading and writing the object store",
    ),
    (
        "plan.progress",
        "Where shards keep their progress records (recorded in the plan)",
    ),
    (
        "status.progress",
        "A sharded plan: where its shards keep their progress records",
    ),
    ("plan.dst", "Destination location to record in the plan"),
    (
        "profile",
        "AWS profile for S3 locations (as aws-cli's --profile)",
    ),
    (
        "endpoint_url",
        "S3 endpoint URL, e.g. http://127.0.0.1:3900 (as aws-cli's)",
    ),
    (
        "config",
        "Remotes file (default ~/.config/moverctl/remotes.toml)",
    ),
    (
        "providers",
        "Provider files that extend the catalog (or MOVERCTL_PROVIDERS)",
    ),
    ("retry_timeout", "Retry each failed request this long"),
    (
        "verbose",
        "More detail: -v retries and stats, -vv every request",
    ),
    (
        "log_level",
        "Log level instead of -v: error, warn, info, debug, trace",
    ),
    ("log_file", "Append log lines to FILE instead of stderr"),
    ("log_format", "Log lines as text or json"),
    ("transfers", "Objects copied at the same time"),
    (
        "part_concurrency",
        "Parts of one large object in flight at once",
    ),
    (
        "checkers",
        "Destination HEADs in flight (default: share the transfer slots)",
    ),
    (
        "bwlimit",
        "Bandwidth limit: 100M or 100MiB/s, 1Gbps, UP:DOWN, a timetable, off",
    ),
    ("tpslimit", "Requests per second over the whole run"),
    ("part_size", "Multipart part size, e.g. 64M (= 64 MiB)"),
    (
        "multipart_threshold",
        "Objects above this size go in parts, e.g. 256M",
    ),
    ("max_buffer", "Memory for part buffers across the run"),
    (
        "ranged_reads",
        "Read each part of a large object with its own ranged GET",
    ),
    (
        "no_server_side",
        "Stream every object through here, never a server-side copy",
    ),
    (
        "no_streamed_put",
        "Upload large single-part objects in parts, never one streamed PUT",
    ),
    ("retries", "Attempts after the first for a failed object"),
    (
        "include",
        "Only keys matching GLOB (repeatable; rclone's rules)",
    ),
    ("exclude", "Leave out keys matching GLOB (repeatable)"),
    ("include_from", "Read --include patterns from FILE"),
    ("exclude_from", "Read --exclude patterns from FILE"),
    (
        "files_from",
        "Only the keys listed in FILE (one a line, or ls --json output)",
    ),
    (
        "min_size",
        "Leave out objects smaller than SIZE (100K, 10M; bare number = KiB)",
    ),
    ("max_size", "Leave out objects larger than SIZE"),
    (
        "max_age",
        "Only objects modified within AGE (36h, 7d) or since a date",
    ),
    (
        "min_age",
        "Only objects modified longer ago than AGE (or before a date)",
    ),
    (
        "size_only",
        "Same size at the destination = same object (no checksum, no HEAD)",
    ),
    (
        "checksum",
        "Decide by checksums (always so; accepted for rclone's habit)",
    ),
    (
        "storage_class",
        "Storage class written at the destination (GLACIER_IR, Cool, …)",
    ),
    (
        "metadata_set",
        "Set a content header or metadata KEY=VALUE on every object",
    ),
    ("no_metadata", "Do not copy the source's user metadata"),
    (
        "preserve_mtime",
        "Local destinations: keep the source's modification time",
    ),
    (
        "fsync",
        "Local destinations: when files are synced: batch, object, end, never",
    ),
    (
        "verify",
        "How each object is checked: auto, strict, size, md5, readback",
    ),
    (
        "dry_run",
        "Show what would be done, and why; change nothing",
    ),
    ("journal", "Journal file (default: in the state folder)"),
    ("lock", "Lock file that keeps runs of one pair apart"),
    ("quiet", "Print nothing when all is well"),
    ("json", "Print JSON instead of text"),
    (
        "progress",
        "Show progress (the default on a terminal; for rclone's habit)",
    ),
    (
        "stats",
        "Print a stats line every DURATION (30s, 5m); 0 turns it off",
    ),
    (
        "metrics_file",
        "Write run metrics to PATH in Prometheus text format",
    ),
    ("metrics_push", "Also PUT the metrics to a Pushgateway URL"),
    (
        "allow_empty_source",
        "Go on when the source lists no object (exit 0)",
    ),
    (
        "delete",
        "Delete destination objects no longer at the source (guarded)",
    ),
    (
        "max_delete",
        "Most objects one run may delete: N or N% [default: 10%]",
    ),
    (
        "allow_early_delete",
        "Also delete objects younger than their minimum storage duration",
    ),
    (
        "shard",
        "Run shard K/N of a sharded plan, or auto (Slurm / Kubernetes index)",
    ),
    (
        "progress_location",
        "Where shards keep their progress records",
    ),
];

/// Value names where clap's (the id in capitals) would be long: (id, name).
pub(super) const VALUE_NAMES: &[(&str, &str)] = &[
    ("transfers", "N"),
    ("part_concurrency", "N"),
    ("tpslimit", "N"),
    ("retries", "N"),
    ("part_size", "SIZE"),
    ("multipart_threshold", "SIZE"),
    ("max_buffer", "SIZE"),
    ("verify", "MODE"),
    ("bytes", "SIZE"),
    ("objects", "COUNT"),
    ("bandwidth", "RATE"),
    ("concurrency", "N"),
    ("workers", "N"),
    ("gpu_hourly", "USD"),
    ("inventory_format", "FORMAT"),
    ("latency_ms", "MS"),
    ("pick", "DEST"),
    ("plans_dir", "DIR"),
    ("s3_columns", "COLUMNS"),
    ("stream_throughput", "RATE"),
    ("worker_nic", "RATE"),
    ("prefixes", "N"),
    ("months", "N"),
    ("store_read_rate", "RATE"),
    ("fast_tier_throughput", "RATE[,W]"),
    ("object_throughput", "RATE[,W]"),
];

/// Worked examples, after each command's flags.
pub(super) const EXAMPLES: &[(&str, &str)] = &[
    ("copy", COPY),
    ("exec", EXEC),
    ("sync", SYNC),
    ("plan", PLAN),
    ("ls", LS),
    ("probe", PROBE),
    ("drain", DRAIN),
    ("stage", STAGE),
    ("status", STATUS),
    ("providers", PROVIDERS),
];

const COPY: &str = "\
Examples:
  moverctl copy ./corpus s3://bucket/corpus                local folder to S3
  moverctl copy s3://src/v1 gs://dst/v1 -n                  what would be copied, and why
  moverctl copy s3://src/v1 ./out --include '*.safetensors' --bwlimit 100M
  moverctl --endpoint-url http://127.0.0.1:3900 --profile lab copy s3://b/data ./data

Sizes: 64M = 64Mi = 64MiB = 64 x 1024^2 bytes (as in rclone); 64MB = 64,000,000. Output shows
KiB, MiB, GiB. Every flag in full: moverctl help copy; exit codes: moverctl --help.";

const EXEC: &str = "\
Examples:
  moverctl plan --from aws:us-east-1 --to gcp:us-central1 --bytes 2PB --objects 40M \\
      --src s3://corpus --dst gs://corpus --save move
  moverctl exec plans/move.toml -n                          what it would copy
  moverctl exec plans/move.toml                             run it (resumes after a stop)
  moverctl exec plans/move.toml --shard auto                one shard per Slurm array task

Every flag in full: moverctl help exec.";

const SYNC: &str = "\
sync copies new and changed objects (by size, the journal kept in the state folder, MD5 ETags
when both sides have them, and only then one HEAD), and with --delete removes what the source no
longer has: never after a run with a failed or refused object, never when the source listed
nothing (unless --allow-empty-source), never more than --max-delete, never an object younger
than the destination's minimum storage duration unless --allow-early-delete. --dry-run shows all
of it. With --json, sync prints one summary object (a dry run first prints one line per object it
would copy, delete or keep). Exit code 5 (delete guard) is sync's own; 6 means another run of the
same pair (copy or sync) holds the lock.

Examples:
  moverctl sync s3://prod/models gs://mirror/models --delete -n     what a run would do
  moverctl sync s3://prod/models gs://mirror/models --delete --max-delete 1%
  # crontab: a quiet run every 15 minutes, metrics for node_exporter
  */15 * * * * moverctl sync -q --delete --metrics-file /var/lib/node_exporter/mirror.prom \\
      s3://prod/models gs://mirror/models

Every flag in full: moverctl help sync.";

const PLAN: &str = "\
Examples:
  moverctl plan --example                                   a worked example, explained
  moverctl plan --from aws:us-east-1 --to gcp:us-central1 --to r2 --bytes 2PB --objects 40M
  moverctl plan --from aws:us-east-1 --src s3://corpus/v1 --to onprem   sizes from a listing
  moverctl plan --from aws:us-east-1 --to onprem --bytes 500TB --objects 10M --save move

Sizes: 64M = 64 MiB, 2PB = 2 x 1000^5 bytes; plan shows corpus sizes in TB/PB (powers of 1000),
prices per each provider's billed GB (moverctl providers show NAME). In full: moverctl help plan.";

const LS: &str = "\
Examples:
  moverctl ls s3://bucket/prefix
  moverctl ls garage:bucket/prefix --json > keys.jsonl
  moverctl --endpoint-url http://127.0.0.1:3900 ls s3://bucket/prefix";

const PROBE: &str = "\
Examples:
  moverctl probe s3://bucket/scratch            what the store does; latency and throughput
  moverctl probe gs://bucket/tmp --size 256M --streams 8
  moverctl probe s3://bucket/scratch --json --no-save";

const DRAIN: &str = "\
Examples:
  moverctl drain /scratch/ckpt s3://durable/ckpt                        one pass (cron)
  moverctl drain /scratch/ckpt s3://durable/ckpt --watch --keep-local 2
  moverctl drain /scratch/ckpt s3://durable/ckpt --every 5m --complete-when COMPLETE

Every flag in full: moverctl help drain.";

const STAGE: &str = "\
Examples:
  moverctl stage s3://corpus/v1 /fast/corpus                  the whole data set
  moverctl stage s3://corpus/v1 /fast/corpus --node 3/16      node 3's share of 16
  moverctl stage s3://corpus/v1 /fast/corpus --evict          at job end

Every flag in full: moverctl help stage.";

const STATUS: &str = "\
Examples:
  moverctl status plans/move.toml
  moverctl status --src s3://src/v1 --dst ./out
  moverctl status plans/move.toml --json";

const PROVIDERS: &str = "\
Examples:
  moverctl providers
  moverctl providers show aws
  moverctl providers --json";
