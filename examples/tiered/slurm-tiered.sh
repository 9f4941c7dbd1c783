#!/bin/bash
# A training job on a tiered pipeline, in one Slurm batch script:
#   1. stage:  each node copies its share of the dataset from object storage onto its local NVMe
#              (or a PFS folder) with moverctl's verified engine; a ready marker when it is whole;
#   2. train:  waits for the marker, reads the data, writes DCP checkpoints into the fast tier,
#              while `moverctl drain --watch` copies each *complete* checkpoint to durable
#              storage in the background and writes its durability receipt;
#   3. finish: the drain is stopped, one last pass makes every complete checkpoint durable, and
#              `stage --evict` gives the fast tier back (only files moverctl staged, unchanged, whose
#              original the object store still holds).
#
# Submit:  DATASET=s3://corpus/v3 CKPT_DST=s3://ckpts/run-42 sbatch --export=ALL --nodes=4 \
#            examples/tiered/slurm-tiered.sh
# The same steps fit a prolog/epilog: put step 1 in the prolog and step 3 in the epilog.
#SBATCH --job-name=tiered-train
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --output=tiered-%j.out
set -u

: "${DATASET:?set DATASET to the dataset location (s3://…, gs://…, az://…, REMOTE:…)}"
: "${CKPT_DST:?set CKPT_DST to where checkpoints go (s3://…/run-N)}"
MOVERCTL="${MOVERCTL:-moverctl}"
PYTHON="${PYTHON:-python3}"
HERE="${TIERED_DIR:-$(dirname "$(readlink -f "$0")")}"
# The fast tier: node-local NVMe here (per node), or a PFS folder every node sees.
FAST="${FAST_DIR:-/local/nvme/$SLURM_JOB_ID}"
DATA="$FAST/data"
CKPT="$FAST/ckpt"
# moverctl's journals beside the data (node-local, like the data).
export MOVERCTL_STATE_DIR="${MOVERCTL_STATE_DIR:-$FAST/.moverctl-state}"
mkdir -p "$CKPT"

# 1. Stage: one task per node; `--node auto` is SLURM_NODEID/SLURM_NNODES, so node K copies
#    share K of N (key ranges balanced by bytes, the same split on every node). A rerun of the
#    job copies nothing that is still verified there.
srun --ntasks-per-node=1 "$MOVERCTL" stage "$DATASET" "$DATA" --node auto
code=$?
if [ "$code" -ne 0 ]; then
  echo "stage failed with exit $code: no ready marker, not training"
  exit "$code"
fi

# 2. Drain in the background, for the whole job: each checkpoint directly under $CKPT is copied
#    once .metadata exists (DCP writes it last), newest first, with a receipt beside it and at
#    $CKPT_DST/step-N/. --every bounds the wait where the file system sends no notifications.
"$MOVERCTL" drain "$CKPT" "$CKPT_DST" --watch --every "${DRAIN_EVERY:-5s}" --quiet \
  ${DRAIN_ARGS:-} &
drain_pid=$!

#    Train: the step waits for the node's ready marker (exit 10 after --timeout), then runs.
srun --ntasks-per-node=1 bash -c '
  "$0" stage --wait-ready "$1" --node auto --timeout 10m || exit $?
  exec "$2" "$3/train_standin.py" --data "$1" --ckpt "$4" $5
' "$MOVERCTL" "$DATA" "$PYTHON" "$HERE" "$CKPT" "${TRAIN_ARGS:-}"
train=$?
echo "training exit $train"

# 3. Stop the watching drain (a checkpoint it was copying gets no receipt: nothing lies), then one
#    last pass that finishes it and every other complete checkpoint; an incomplete one (a save cut
#    short) is never uploaded.
kill -TERM "$drain_pid" 2>/dev/null
wait "$drain_pid" 2>/dev/null
"$MOVERCTL" drain "$CKPT" "$CKPT_DST" ${DRAIN_ARGS:-}
drained=$?
echo "final drain exit $drained"

#    Evict: each node removes what it staged (files changed here, or whose original changed or
#    went missing at the source, are kept and named: exit 3).
srun --ntasks-per-node=1 "$MOVERCTL" stage "$DATASET" "$DATA" --node auto --evict
evicted=$?
echo "evict exit $evicted"

for c in "$train" "$drained" "$evicted"; do
  [ "$c" -eq 0 ] || exit "$c"
done
exit 0
