#!/bin/bash
# Slurm job array: one move of 256 shards, 64 running at a time.
# Made with:  moverctl plan --from aws:us-east-1 --to gcp:us-central1 --workers 64 \
#               --src s3://corpus-prod/v3 --dst gs://corpus-new/v3 --shards 256 --save move
# Submit:     PLAN=$PWD/plans/move.toml sbatch --export=ALL examples/scale-out/slurm-array.sh
# Watch:      moverctl status plans/move.toml
#
# Each array task runs one shard: `--shard auto` reads SLURM_ARRAY_TASK_ID and refuses an array
# that does not match the plan's shard count (submit with --array=0-<shards-1>).
#SBATCH --job-name=moverctl-move
#SBATCH --array=0-255%64
#SBATCH --requeue
#SBATCH --cpus-per-task=1
#SBATCH --output=moverctl-%A_%a.out
#SBATCH --open-mode=append
set -u

: "${PLAN:?set PLAN to the plan file (a path every node can read)}"
MOVERCTL="${MOVERCTL:-moverctl}"
# Retries of one task after a failure that may pass (exit 1: a run-time failure, 3: some
# objects failed, 7: the progress location could not be written for --retry-timeout, e.g. a
# store outage, 137: moverctl was killed, e.g. by the OOM killer). Bad input (2), refused
# credentials (4), a held lock (6) and an interrupt (130) are not retried.
MAX_RESTARTS="${MOVERCTL_MAX_RESTARTS:-3}"

# Node-local scratch for the journal. A requeued task may start on another node, or this one
# with the folder gone: it rebuilds its journal from the shard's progress records on the store.
scratch="${MOVERCTL_SCRATCH:-${TMPDIR:-/tmp}}"
export MOVERCTL_STATE_DIR="$scratch/moverctl-${SLURM_ARRAY_JOB_ID:-0}-${SLURM_ARRAY_TASK_ID:-0}-${SLURM_RESTART_COUNT:-0}"

echo "shard ${SLURM_ARRAY_TASK_ID:-?} attempt ${SLURM_RESTART_COUNT:-0} on $(hostname)"
# --bwlimit / --tpslimit here are per task (per shard process), not for the whole move.
# moverctl runs as the task's job step (srun): Slurm accounts for it, and a step killed on its
# own (`scancel --signal=KILL <jobid>.0`, or the OOM killer) ends with 137, which requeues the task.
srun --ntasks=1 "$MOVERCTL" exec "$PLAN" --shard auto --json ${MOVERCTL_EXEC_ARGS:-}
code=$?
rm -rf "$MOVERCTL_STATE_DIR"
echo "shard ${SLURM_ARRAY_TASK_ID:-?} exit $code"

case "$code" in
  1|3|7|137)
    if [ "${SLURM_RESTART_COUNT:-0}" -lt "$MAX_RESTARTS" ]; then
      # Back into the queue; the retry skips everything verified (no re-copy, no HEAD).
      scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
      exit 0
    fi
    ;;
esac
exit "$code"
