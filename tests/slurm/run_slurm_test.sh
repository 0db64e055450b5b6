#!/usr/bin/env bash
# make test-slurm: run a small configuration of the workflow (generated data, one job of every
# rule) through a real Slurm scheduler on this machine.
#
#   bash tests/slurm/run_slurm_test.sh          (as root; needs .venv with snakemake and
#                                                snakemake-executor-plugin-slurm)
#   bash tests/slurm/run_slurm_test.sh --rules  (prints the rules it sends to Slurm and stops)
#
# 1. installs Debian's Slurm (slurmctld, slurmd, slurmdbd, client), munge and MariaDB if absent;
# 2. starts a one-node cluster in a temp folder: munged, mariadbd, slurmdbd, slurmctld, slurmd,
#    all on 127.0.0.1 and private ports, with accounting (the executor plugin polls sacct);
# 3. runs the small configuration (tests/test_workflow_full_catalog.py's, with two scorers: one
#    job of every rule) with --workflow-profile profiles/slurm, checks with sacct that its jobs went
#    through Slurm and all COMPLETED, and that every table is byte-identical to a local run;
# 4. failure: the audit jobs run again through Slurm and one of them is killed with scancel while
#    its script runs; the workflow must fail, leave none of that job's outputs, and a rerun must
#    submit only that job again;
# 5. stops every daemon and job it started (also on failure) and prints one PASS/FAIL line.
#
# Environment knobs (all optional):
#   TIEAUDIT_SLURM_KEEP=1         keep the temp folder (logs, results) after the run
#   TIEAUDIT_SLURM_PORT_BASE=N    ports N..N+3 for slurmctld, slurmd, slurmdbd, mariadb (26817)
#   TIEAUDIT_SLURM_TMP=DIR        parent folder of the temp folder (default: /tmp)
#   TIEAUDIT_SLURM_PAUSE=1        wait once the cluster is up (touch TMP/resume to go on)
set -Eeuo pipefail

SECONDS=0
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$REPO/tests/slurm"
VENV_BIN="$REPO/.venv/bin"
SNAKEMAKE="$VENV_BIN/snakemake"
# the workflow runs from a snapshot of the working tree (see below): these point into it
SNAP=""
PROFILE=""
RUN_CONFIG=""
CLUSTER=tieaudit_test
PARTITION=tieaudit_debug
ACCOUNT=tieaudit_ci
PORT_BASE=${TIEAUDIT_SLURM_PORT_BASE:-26817}
CTLD_PORT=$PORT_BASE
SLURMD_PORT=$((PORT_BASE + 1))
DBD_PORT=$((PORT_BASE + 2))
DB_PORT=$((PORT_BASE + 3))
# rules whose jobs the profile sends to Slurm: every rule of the workflow but `all` and those its
# `localrules:` lists (download and the paper's tables, figures and page), read from the rule files
SLURM_RULES=$(awk '/^localrules:/ { inlist = 1; next }
    inlist && /^    [a-z_]+,?$/ { name = $1; sub(/,$/, "", name); local_[name] = 1; next }
    { inlist = 0 }
    /^ *rule [a-z_]+:/ { name = $2; sub(/:$/, "", name); rules[name] = 1 }
    END { for (r in rules) if (!(r in local_) && r != "all") print r }' \
    "$REPO/Snakefile" "$REPO"/workflow/rules/*.smk | sort | tr '\n' ' ')
SLURM_RULES=${SLURM_RULES% }
# `run_slurm_test.sh --rules` prints them and stops (tests/test_slurm_rules.py, part of `make test`,
# checks them against the jobs a dry run of the workflow does not run locally)
if [[ ${1:-} == --rules ]]; then
    echo "$SLURM_RULES"
    exit 0
fi

STAGE=setup
TMP=""
declare -a DAEMON_PIDS=() DAEMON_NAMES=()
SNAKEMAKE_BG_PID=""
CLEANED=0

log() { printf '[test-slurm %4ds] %s\n' "$SECONDS" "$*"; }
fail() {
    log "FAIL: $*"
    exit 1
}

summary() {
    local rc=$1
    if [[ $rc -eq 0 ]]; then
        echo "test-slurm: PASS ($CHECKS checks) in ${SECONDS}s"
    else
        echo "test-slurm: FAIL (stage: $STAGE, exit $rc) after ${SECONDS}s"
        [[ -n "$TMP" && -d "$TMP" ]] && echo "test-slurm: logs kept in $TMP/log"
    fi
}

# --- stopping everything we started --------------------------------------------------------

stop_pid() {  # stop_pid PID NAME: TERM, wait up to 15 s, then KILL
    local pid=$1 name=$2 i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 30); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.5
    done
    log "  $name ($pid) ignored TERM; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

tagged_pids() {  # processes started under this test (slurmstepd, job steps): they carry the tag
    local f pid
    for f in /proc/[0-9]*/environ; do
        pid=${f#/proc/}
        pid=${pid%/environ}
        [[ $pid == "$$" ]] && continue
        if { tr '\0' '\n' <"$f"; } 2>/dev/null | grep -qxF "TIEAUDIT_SLURM_TEST_TAG=$TMP"; then
            echo "$pid"
        fi
    done
}

cleanup() {
    [[ $CLEANED -eq 1 ]] && return 0
    CLEANED=1
    set +e
    log "stopping everything this test started"
    if [[ -n "$SNAKEMAKE_BG_PID" ]] && kill -0 "$SNAKEMAKE_BG_PID" 2>/dev/null; then
        kill -INT "$SNAKEMAKE_BG_PID" 2>/dev/null  # like Ctrl-C: it cancels its Slurm jobs
        for _ in $(seq 1 40); do
            kill -0 "$SNAKEMAKE_BG_PID" 2>/dev/null || break
            sleep 0.5
        done
        stop_pid "$SNAKEMAKE_BG_PID" snakemake
    fi
    if [[ -n "${SLURM_CONF:-}" && -f "${SLURM_CONF:-}" ]] && command -v squeue >/dev/null; then
        local ids
        ids=$(timeout 10 squeue -h -o %i 2>/dev/null)
        if [[ -n "$ids" ]]; then
            # shellcheck disable=SC2086
            timeout 10 scancel $ids 2>/dev/null
            for _ in $(seq 1 20); do
                [[ -z "$(timeout 10 squeue -h -o %i 2>/dev/null)" ]] && break
                sleep 0.5
            done
        fi
    fi
    local i
    for ((i = ${#DAEMON_PIDS[@]} - 1; i >= 0; i--)); do  # reverse start order
        stop_pid "${DAEMON_PIDS[$i]}" "${DAEMON_NAMES[$i]}"
    done
    unset TIEAUDIT_SLURM_TEST_TAG
    local left
    left=$(tagged_pids)
    if [[ -n "$left" ]]; then
        log "  stray processes of this test: $left; killing them"
        for pid in $left; do stop_pid "$pid" stray; done
        left=$(tagged_pids)
    fi
    if [[ -n "$left" ]]; then
        log "  still running after cleanup: $left"
        LEFTOVER=1
    fi
    if [[ -n "${CREATED_LINK:-}" && -L "$CREATED_LINK" ]]; then
        rm -f "$CREATED_LINK"
    fi
    if [[ -n "${TIEAUDIT_SLURM_IN_NS:-}" ]] && mountpoint -q /etc/slurm; then
        umount /etc/slurm
    fi
    if [[ -n "${CREATED_DIR:-}" ]]; then
        rmdir "$CREATED_DIR" 2>/dev/null
    fi
    if [[ -n "$TMP" && -d "$TMP" && "${TIEAUDIT_SLURM_KEEP:-0}" != 1 && "${KEEP_TMP:-0}" != 1 ]]; then
        rm -rf "$TMP"
    fi
    set -e
}

on_exit() {
    local rc=$?
    trap - EXIT
    [[ $rc -ne 0 ]] && KEEP_TMP=1
    cleanup
    [[ ${LEFTOVER:-0} -eq 1 && $rc -eq 0 ]] && rc=1
    summary "$rc"
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

CHECKS=0
check() {  # check DESCRIPTION COMMAND...: run a check, count it, stop on the first failure
    local what=$1
    shift
    if "$@"; then
        CHECKS=$((CHECKS + 1))
        log "ok: $what"
    else
        fail "$what"
    fi
}

# --- 1. packages ---------------------------------------------------------------------------

[[ $(id -u) -eq 0 ]] || fail "run as root (installs packages, starts daemons)"

# Inside a job, the plugin's jobstep executor drops every SLURM_* variable (SLURM_CONF too)
# before it calls srun, so srun only finds the configuration at Slurm's default path,
# /etc/slurm/slurm.conf. The test therefore runs in a private mount namespace and bind-mounts its
# own configuration folder over /etc/slurm there: the machine's /etc is never changed.
if [[ -z "${TIEAUDIT_SLURM_IN_NS:-}" && "${TIEAUDIT_SLURM_NO_UNSHARE:-0}" != 1 ]] &&
    unshare --mount --propagation private true 2>/dev/null; then
    export TIEAUDIT_SLURM_IN_NS=1
    trap - EXIT
    exec unshare --mount --propagation private bash "${BASH_SOURCE[0]}" "$@"
fi
[[ -x "$SNAKEMAKE" ]] || fail "no $SNAKEMAKE: run 'make venv' first"
"$VENV_BIN/python" -c "import snakemake_executor_plugin_slurm" 2>/dev/null ||
    fail "snakemake-executor-plugin-slurm is not in .venv: .venv/bin/pip install snakemake-executor-plugin-slurm"

PACKAGES="slurmctld slurmd slurmdbd slurm-client munge mariadb-server"
missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [[ -n "$missing" ]]; then
    log "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
for b in slurmctld slurmd slurmdbd sbatch sacct sacctmgr squeue scancel sinfo munged mariadbd mariadb-install-db; do
    command -v "$b" >/dev/null || fail "$b not found after installing $PACKAGES"
done

# --- 2. a one-node cluster in a temp folder --------------------------------------------------

STAGE=cluster
TMP=$(mktemp -d "${TIEAUDIT_SLURM_TMP:-/tmp}/tieaudit-slurm.XXXXXX")
chmod 755 "$TMP"
mkdir -p "$TMP"/{etc,log,run,state,spool,munge,mysql,runs}
export TIEAUDIT_SLURM_TEST_TAG="$TMP"  # every daemon and job inherits it: cleanup finds strays
log "temp folder $TMP"

for port in $CTLD_PORT $SLURMD_PORT $DBD_PORT $DB_PORT; do
    "$VENV_BIN/python" - "$port" <<'EOF' || fail "port $port on 127.0.0.1 is in use (set TIEAUDIT_SLURM_PORT_BASE)"
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.close()
EOF
done

NODE=$(hostname -s)
CPUS=$(nproc)
TOTAL_MB=$(free -m | awk '/^Mem:/ {print $2}')
MEM_MB=$((TOTAL_MB * 9 / 10))
# The profile asks up to 10 GB per job (sized for the paper); this test's jobs use < 0.2 GB. On a
# smaller machine declare 24 GB anyway (slurm.conf: SlurmdParameters=config_overrides), so that
# Slurm accepts the profile's requests instead of rejecting them.
((MEM_MB >= 24000)) || MEM_MB=24000
DB_PASS=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')

fill() {  # fill TEMPLATE OUTPUT
    sed -e "s|@TMP@|$TMP|g" -e "s|@CLUSTER@|$CLUSTER|g" -e "s|@NODE@|$NODE|g" \
        -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" \
        -e "s|@DBD_PORT@|$DBD_PORT|g" -e "s|@DB_PORT@|$DB_PORT|g" -e "s|@DB_PASS@|$DB_PASS|g" \
        -e "s|@CPUS@|$CPUS|g" -e "s|@MEM_MB@|$MEM_MB|g" -e "s|@PARTITION@|$PARTITION|g" \
        "$1" >"$2"
}
fill "$HERE/slurm.conf.in" "$TMP/etc/slurm.conf"
fill "$HERE/slurmdbd.conf.in" "$TMP/etc/slurmdbd.conf"
chmod 600 "$TMP/etc/slurmdbd.conf"
: >"$TMP/etc/plugstack.conf"
# every Slurm command (ours, the plugin's, the jobs') reads this cluster's configuration;
# slurmdbd finds slurmdbd.conf beside it
export SLURM_CONF="$TMP/etc/slurm.conf"
[[ -d /etc/slurm ]] || { mkdir -p /etc/slurm && CREATED_DIR=/etc/slurm; }
if [[ -n "${TIEAUDIT_SLURM_IN_NS:-}" ]]; then
    mount --bind "$TMP/etc" /etc/slurm
elif [[ ! -e /etc/slurm/slurm.conf ]]; then  # no mount namespace: a link, removed on exit
    ln -s "$TMP/etc/slurm.conf" /etc/slurm/slurm.conf
    CREATED_LINK=/etc/slurm/slurm.conf
else
    fail "/etc/slurm/slurm.conf exists and no private mount namespace (unshare) is possible"
fi
unset SLURM_JOB_ID SBATCH_ACCOUNT SBATCH_PARTITION SLURM_ACCOUNT SLURM_PARTITION
log "node $NODE: CPUs=$CPUS RealMemory=${MEM_MB}MB, partition $PARTITION, account $ACCOUNT"

start_daemon() {  # start_daemon NAME LOGFILE COMMAND...: run in the foreground, in background
    local name=$1 logfile=$2
    shift 2
    "$@" >>"$logfile" 2>&1 &
    DAEMON_PIDS+=("$!")
    DAEMON_NAMES+=("$name")
    log "started $name (pid $!)"
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2 t0=$SECONDS
    shift 2
    until "$@" >/dev/null 2>&1; do
        ((SECONDS - t0 < limit)) || fail "timed out after ${limit}s waiting for $what"
        sleep 0.5
    done
}

daemons_alive() {
    local i
    for i in "${!DAEMON_PIDS[@]}"; do
        kill -0 "${DAEMON_PIDS[$i]}" 2>/dev/null || {
            log "${DAEMON_NAMES[$i]} died; its log:"
            tail -n 20 "$TMP/log/${DAEMON_NAMES[$i]}".* 2>/dev/null || true
            return 1
        }
    done
}

# munge: a fresh key and a private socket
head -c 1024 /dev/urandom >"$TMP/munge/munge.key"
chmod 400 "$TMP/munge/munge.key"
start_daemon munged "$TMP/log/munged.stdout" munged --foreground --force --num-threads=4 \
    --socket="$TMP/munge/munge.socket" --key-file="$TMP/munge/munge.key" \
    --pid-file="$TMP/run/munged.pid" --log-file="$TMP/log/munged.log" \
    --seed-file="$TMP/munge/munged.seed"
wait_for 20 munged munge --socket="$TMP/munge/munge.socket" -n

# MariaDB: a private data folder, TCP on 127.0.0.1 only
mariadb-install-db --no-defaults --user=root --datadir="$TMP/mysql" --skip-test-db \
    --auth-root-authentication-method=socket >"$TMP/log/mariadb-install.log" 2>&1 ||
    fail "mariadb-install-db (see $TMP/log/mariadb-install.log)"
start_daemon mariadb "$TMP/log/mariadb.log" mariadbd --no-defaults --user=root \
    --datadir="$TMP/mysql" --socket="$TMP/run/mysqld.sock" --pid-file="$TMP/run/mysqld.pid" \
    --bind-address=127.0.0.1 --port="$DB_PORT" --skip-name-resolve \
    --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 --log-error="$TMP/log/mariadb.log"
wait_for 60 mariadb mariadb --no-defaults --socket="$TMP/run/mysqld.sock" -u root -e "SELECT 1"
mariadb --no-defaults --socket="$TMP/run/mysqld.sock" -u root <<EOF
CREATE DATABASE slurm_acct_db;
CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
FLUSH PRIVILEGES;
EOF

start_daemon slurmdbd "$TMP/log/slurmdbd.stdout" slurmdbd -D
wait_for 60 slurmdbd sacctmgr -n list cluster
daemons_alive || fail "a daemon died while starting slurmdbd"
sacctmgr -i add cluster "$CLUSTER" >/dev/null
sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" Description="make test-slurm" Organization=tieaudit >/dev/null
sacctmgr -i add user root Account="$ACCOUNT" DefaultAccount="$ACCOUNT" Cluster="$CLUSTER" >/dev/null

start_daemon slurmctld "$TMP/log/slurmctld.stdout" slurmctld -D -i
wait_for 60 slurmctld scontrol ping
start_daemon slurmd "$TMP/log/slurmd.stdout" slurmd -D -N "$NODE"
node_idle() { sinfo -h -N -n "$NODE" -o %t | grep -qx idle; }
wait_for 90 "node $NODE idle in sinfo" node_idle
daemons_alive || fail "a daemon died while starting the cluster"
log "cluster up: $(sinfo -h -o '%P %a %D %t %c CPUs %m MB')"
# a trivial job proves scheduling, launching and accounting before the workflow does
probe=$(sbatch --parsable -A "$ACCOUNT" -p "$PARTITION" -t 1 --mem 100 -J probe -o /dev/null --wrap "srun -n1 true")
probe_done() { [[ $(sacct -n -X -P -j "$probe" -o State) == COMPLETED ]]; }
wait_for 60 "probe job $probe to be COMPLETED in sacct" probe_done
check "probe job $probe ran through srun and is COMPLETED in sacct" probe_done
if [[ -n "${TIEAUDIT_SLURM_PAUSE:-}" ]]; then  # for poking at the cluster by hand
    log "paused: export SLURM_CONF=$SLURM_CONF; touch $TMP/resume to go on"
    until [[ -e "$TMP/resume" ]]; do sleep 1; done
fi

# --- 3. the small configuration through Slurm vs locally ---------------------------------------

# A snapshot of the workflow and the library, so that edits made in the working tree while the
# test runs (it takes minutes) can neither trigger reruns nor make the runs differ. The scripts
# import tieaudit from it too: PYTHONPATH comes before .venv's editable install.
STAGE=snapshot
SNAP="$TMP/workflow"
mkdir -p "$SNAP"
for item in Snakefile workflow scripts src config profiles environment.yml; do
    cp -a "$REPO/$item" "$SNAP/"
done
find "$SNAP" -name __pycache__ -prune -exec rm -rf {} +
export PYTHONPATH="$SNAP/src${PYTHONPATH:+:$PYTHONPATH}"
PROFILE="$SNAP/profiles/slurm"
# the configuration: small, generated data, yet one job of every rule of the workflow (both
# settings, hash seeds split over two jobs, rows in two parts side by side, two scorers so that a
# failed audit job has siblings)
RUN_CONFIG="$SNAP/config/slurm_test.yaml"
(cd "$REPO" && "$VENV_BIN/python" - "$RUN_CONFIG" <<'PY'
import sys, yaml
from tests.test_workflow_full_catalog import CONFIG
config = dict(CONFIG, scorers={s: CONFIG["scorers"][s] for s in ("attribute_overlap", "popularity")},
              evaluation=dict(CONFIG["evaluation"], row_chunks=2))
with open(sys.argv[1], "w") as fh:
    yaml.safe_dump(config, fh, sort_keys=False)
PY
) || fail "could not write the test configuration $RUN_CONFIG"
imports_snapshot() {
    [[ $("$VENV_BIN/python" -c 'import tieaudit; print(tieaudit.__file__)') == "$SNAP/src/"* ]]
}
check "the jobs import tieaudit from the snapshot $SNAP" imports_snapshot

# The profile's default-resources with this cluster's account and partition added: on the
# command line --default-resources replaces the profile's whole mapping, so repeat its entries.
mapfile -t DEFAULT_RESOURCES < <("$VENV_BIN/python" - "$PROFILE/config.yaml" "$ACCOUNT" "$PARTITION" <<'EOF'
import sys, yaml
resources = dict(yaml.safe_load(open(sys.argv[1]))["default-resources"])
resources.update(slurm_account=sys.argv[2], slurm_partition=sys.argv[3])
for key, value in resources.items():
    print(f"{key}={value}")
EOF
)
SLURM_ARGS=(--workflow-profile "$PROFILE" --configfile "$RUN_CONFIG"
    --default-resources "${DEFAULT_RESOURCES[@]}"
    --slurm-init-seconds-before-status-checks 2 --seconds-between-status-checks 2)

run_snakemake() {  # run_snakemake LOGFILE ARGS...: snakemake in the snapshot, in the background
    local logfile=$1 rc=0  # (so that a TERM to this script is handled at once, not after it)
    shift
    (cd "$SNAP" && exec "$SNAKEMAKE" "$@") >"$logfile" 2>&1 &
    SNAKEMAKE_BG_PID=$!
    wait "$SNAKEMAKE_BG_PID" || rc=$?
    SNAKEMAKE_BG_PID=""
    return "$rc"
}

run_id() { grep -o 'SLURM run ID: [A-Za-z0-9_-]*' "$1" | head -n 1 | awk '{print $4}'; }

jobs_of_run() {  # jobs_of_run RUN_ID: "jobid|comment|state" per Slurm job of that run
    sacct -n -X -P --starttime now-1days -o JobIDRaw,Comment%200,State --name "$1"
}

tables() {  # tables DIR: the result tables, relative paths, sorted (the audit files, not its parts/)
    (cd "$1" && ls results/paper/*.csv results/paper/*.md results/paper/*.tex \
        results/*/*/*/metrics.csv results/*/*/*/audit/*.* 2>/dev/null | sort)
}

same_tables() {  # same_tables DIR_A DIR_B: the same list of tables and identical bytes
    local a=$1 b=$2 n f
    n=$(tables "$a" | wc -l)
    [[ $n -gt 0 ]] || { log "no tables in $a"; return 1; }
    diff <(tables "$a") <(tables "$b") >/dev/null || { log "table lists differ: $a vs $b"; return 1; }
    while read -r f; do
        cmp -s "$a/$f" "$b/$f" || { log "differs: $f"; return 1; }
    done < <(tables "$a")
    log "  $n tables identical"
}

STAGE=slurm-run
RUN1="$TMP/runs/slurm"
log "the small configuration through Slurm into $RUN1"
t0=$SECONDS
run_snakemake "$TMP/log/run-slurm.log" "${SLURM_ARGS[@]}" --directory "$RUN1" ||
    { tail -n 40 "$TMP/log/run-slurm.log"; fail "the Slurm run failed (log: $TMP/log/run-slurm.log)"; }
log "Slurm run took $((SECONDS - t0))s"
RID1=$(run_id "$TMP/log/run-slurm.log")
[[ -n "$RID1" ]] || fail "no 'SLURM run ID' in the Slurm run's log"
jobs_of_run "$RID1" >"$TMP/log/sacct-run1.txt"
sacct -X --starttime now-1days --name "$RID1" \
    -o JobID,JobName%36,Comment%64,Partition,Account,State,Elapsed,ReqMem,TimeLimit \
    >"$TMP/log/sacct-run1-full.txt"
n_jobs=$(wc -l <"$TMP/log/sacct-run1.txt")
log "sacct: $n_jobs jobs named $RID1; by rule:"
sed -E 's/^[0-9]+\|rule_//; s/_wildcards_[^|]*//; s/\|/ /' "$TMP/log/sacct-run1.txt" |
    sort | uniq -c | sed 's/^/    /'
check "Slurm ran jobs of this run (sacct count $n_jobs > 0)" test "$n_jobs" -gt 0
rules_ok() {
    local comment rule
    while IFS='|' read -r _ comment _; do
        rule=$(sed -E 's/^rule_(.*)_wildcards_.*$/\1/; s/^rule_//' <<<"$comment")
        [[ " $SLURM_RULES " == *" $rule "* ]] || { log "unexpected job comment: $comment"; return 1; }
    done <"$TMP/log/sacct-run1.txt"
}
check "every Slurm job's comment names a workflow rule" rules_ok
all_completed() { ! cut -d'|' -f3 "$TMP/log/sacct-run1.txt" | grep -qvx COMPLETED; }
check "every Slurm job of the run is COMPLETED" all_completed
every_rule_used() {
    local rule
    for rule in $SLURM_RULES; do
        grep -q "|rule_${rule}[|_]" "$TMP/log/sacct-run1.txt" || { log "no Slurm job for rule $rule"; return 1; }
    done
}
check "each of the rules sent to Slurm ($SLURM_RULES) has Slurm jobs" every_rule_used
N_AUDIT=$(grep -c '|rule_audit_' "$TMP/log/sacct-run1.txt" || true)
check "the run sent several audit jobs to Slurm ($N_AUDIT)" test "$N_AUDIT" -ge 2

STAGE=local-run
RUN_LOCAL="$TMP/runs/local"
log "the same configuration locally (--cores 2, no profile) into $RUN_LOCAL"
t0=$SECONDS
run_snakemake "$TMP/log/run-local.log" --workflow-profile none --cores 2 \
    --configfile "$RUN_CONFIG" --directory "$RUN_LOCAL" ||
    { tail -n 40 "$TMP/log/run-local.log"; fail "the local run failed"; }
log "local run took $((SECONDS - t0))s"
check "every table of the Slurm run is byte-identical to the local run" same_tables "$RUN_LOCAL" "$RUN1"

# --- 4. a job killed mid-run, then a rerun -----------------------------------------------------

# The finished Slurm run again, with --forcerun audit: its audit jobs (datasets x settings x
# scorers, as many as the first run sent to Slurm) run again, and one
# of them is killed while its script runs. (In place: a copy in another folder would rerun
# everything, since the download rule's file: URLs are absolute paths of the working folder.)
# `scancel --signal=TERM` stops the job's step (the rule's script) the way a preemption or an
# administrator would; the job then ends FAILED in sacct. Not a plain `scancel` (or
# --signal=KILL): sacct records such a job as "CANCELLED by <uid>", which
# snakemake-executor-plugin-slurm 2.8.0 does not take for a failure, so the workflow would wait
# for it forever (see docs/cluster.md).
STAGE=failure-run
RUN2="$RUN1"
log "Slurm run in $RUN2 with --forcerun audit --retries 0; one running audit job will be killed"
(cd "$SNAP" && exec "$SNAKEMAKE" "${SLURM_ARGS[@]}" --retries 0 --forcerun audit \
    --directory "$RUN2") >"$TMP/log/run-killed.log" 2>&1 &
SNAKEMAKE_BG_PID=$!
victim=""
victim_comment=""
t0=$SECONDS
while [[ -z "$victim" ]]; do
    kill -0 "$SNAKEMAKE_BG_PID" 2>/dev/null || fail "the run ended before an audit job could be killed"
    ((SECONDS - t0 < 300)) || fail "no running audit job seen within 300s"
    # a RUNNING audit job whose job step (srun: the rule's script) has started
    while IFS='|' read -r jid comment; do
        if squeue -h -s -j "$jid" -o %i 2>/dev/null | grep -qx "$jid.0"; then
            sleep 1  # let the script get under way
            if squeue -h -s -j "$jid" -o %i 2>/dev/null | grep -qx "$jid.0"; then
                scancel --signal=TERM "$jid"
                victim=$jid
                victim_comment=$comment
                break
            fi
        fi
    done < <(squeue -h -t RUNNING -o '%i|%k' 2>/dev/null | grep '|rule_audit_' || true)
    sleep 0.3
done
log "killed job $victim ($victim_comment) with scancel --signal=TERM"
rc=0
wait_snakemake() {
    local t0=$SECONDS
    while kill -0 "$SNAKEMAKE_BG_PID" 2>/dev/null; do
        ((SECONDS - t0 < 300)) || fail "the run did not end within 300s of the kill"
        sleep 1
    done
    wait "$SNAKEMAKE_BG_PID"
}
wait_snakemake || rc=$?
SNAKEMAKE_BG_PID=""
log "the run ended with exit code $rc"
check "the workflow with a killed job fails (exit $rc)" test "$rc" -ne 0
victim_state=$(sacct -n -X -P -j "$victim" -o State,ExitCode | head -n 1)
check "sacct records job $victim as FAILED ($victim_state)" grep -q '^FAILED|' <<<"$victim_state"
check "Snakemake reported the Slurm job as failed" grep -q "SLURM-job '$victim' failed" "$TMP/log/run-killed.log"
# the job's outputs: with row_chunks > 1 (this configuration) an audit job audits one part and
# writes results/<dataset>/<setting>/<scorer>/audit/parts/audit_rows.<part>.parquet, which
# merge_audit joins into audit/{invariance,diagnostics}.csv and checklist.md; with one part the
# audit job writes those three itself. Its comment joins the wildcards dataset, setting, scorer
# (and part) with '_'; the scorers are the configuration's.
SCORERS=$("$VENV_BIN/python" -c 'import sys, yaml; print("|".join(yaml.safe_load(open(sys.argv[1]))["scorers"]))' "$RUN_CONFIG")
[[ $SCORERS =~ ^[a-z0-9_|]+$ ]] || fail "unexpected scorer names in $RUN_CONFIG: $SCORERS"
WILDCARDS_RE="^(.*)_(sampled|full)_($SCORERS)(_([0-9]+))?\$"
wc_part=${victim_comment#rule_audit_wildcards_}
[[ $wc_part =~ $WILDCARDS_RE ]] ||
    fail "cannot read the killed job's wildcards from its comment $victim_comment"
VICTIM_DIR="results/${BASH_REMATCH[1]}/${BASH_REMATCH[2]}/${BASH_REMATCH[3]}/audit"
VICTIM_GROUP="${BASH_REMATCH[1]}_${BASH_REMATCH[2]}_${BASH_REMATCH[3]}"
VICTIM_PART=${BASH_REMATCH[5]}
MERGED_OUTS=(invariance.csv diagnostics.csv checklist.md)
if [[ -n "$VICTIM_PART" ]]; then
    VICTIM_OUTS=("parts/audit_rows.$VICTIM_PART.parquet")
else
    VICTIM_OUTS=("${MERGED_OUTS[@]}")
fi
# the paths are the job's real outputs: the local run of the same configuration wrote them
victim_outs_real() {
    local f
    for f in "${VICTIM_OUTS[@]}"; do
        [[ -f "$RUN_LOCAL/$VICTIM_DIR/$f" ]] || { log "not an output of the local run: $VICTIM_DIR/$f"; return 1; }
    done
}
check "the killed job's outputs are ${VICTIM_OUTS[*]} in $VICTIM_DIR/" victim_outs_real
no_partial() {
    local f
    for f in "${VICTIM_OUTS[@]}"; do
        [[ -e "$RUN2/$VICTIM_DIR/$f" ]] && { log "left behind: $VICTIM_DIR/$f"; return 1; }
    done
    return 0
}
check "no output of the killed job is left in $VICTIM_DIR/" no_partial
RID2=$(run_id "$TMP/log/run-killed.log")
jobs_of_run "$RID2" >"$TMP/log/sacct-run2.txt"
log "sacct for the failed run $RID2: $(cut -d'|' -f3 "$TMP/log/sacct-run2.txt" | sort | uniq -c | xargs)"
# the merges that follow the audit: one per dataset, setting and scorer, but not the killed
# part's (keep-going runs every job that does not need the failed one)
N_MERGE=$(grep -c '|rule_merge_audit_' "$TMP/log/sacct-run1.txt" || true)
N_MERGE2=$((N_MERGE - (N_MERGE > 0 ? 1 : 0)))
all_audits() {
    local comments
    comments=$(cut -d'|' -f2 "$TMP/log/sacct-run2.txt")
    [[ $(grep -c '^rule_audit_wildcards_' <<<"$comments") -eq "$N_AUDIT" &&
        $(grep -c '^rule_merge_audit_wildcards_' <<<"$comments") -eq "$N_MERGE2" &&
        $(wc -l <"$TMP/log/sacct-run2.txt") -eq $((N_AUDIT + N_MERGE2)) ]]
}
check "--forcerun audit sent exactly the $N_AUDIT audit jobs and $N_MERGE2 of the $N_MERGE merges to Slurm" all_audits
n2_ok=$(grep -c '|COMPLETED$' "$TMP/log/sacct-run2.txt" || true)
check "the other jobs finished despite the failure (keep-going: $n2_ok COMPLETED)" \
    test "$n2_ok" -eq $((N_AUDIT + N_MERGE2 - 1))

# mtimes of every output before the rerun
snapshot() { (cd "$RUN2" && find results data -type f ! -path 'results/logs/*' \
    ! -path 'results/benchmarks/*' -printf '%p %T@\n' | LC_ALL=C sort); }
snapshot >"$TMP/log/mtimes-before.txt"

STAGE=rerun
RERUN_TARGETS=()
if [[ -n "$VICTIM_PART" ]]; then
    # The killed part's group still has its merged audit from the first run, and the part that
    # was recomputed has the same content: Snakemake takes the merged files for current and
    # does not rebuild the missing part on its own (a missing file that only feeds current
    # files is not rebuilt). Naming the part as a target rebuilds it, and then its merge.
    run_snakemake "$TMP/log/run-rerun-dry.log" "${SLURM_ARGS[@]}" --directory "$RUN2" -n ||
        { tail -n 40 "$TMP/log/run-rerun-dry.log"; fail "the dry run of the rerun failed"; }
    check "the same command finds the merged audit current (nothing to be done)" \
        grep -q "Nothing to be done" "$TMP/log/run-rerun-dry.log"
    RERUN_TARGETS=(all "$VICTIM_DIR/parts/audit_rows.$VICTIM_PART.parquet")
fi
log "rerunning the same command (without --forcerun) ${RERUN_TARGETS[*]}"
t0=$SECONDS
run_snakemake "$TMP/log/run-rerun.log" "${SLURM_ARGS[@]}" --directory "$RUN2" "${RERUN_TARGETS[@]}" ||
    { tail -n 40 "$TMP/log/run-rerun.log"; fail "the rerun failed"; }
log "rerun took $((SECONDS - t0))s"
RID3=$(run_id "$TMP/log/run-rerun.log")
jobs_of_run "$RID3" >"$TMP/log/sacct-run3.txt"
log "sacct for the rerun $RID3: $(cut -d'|' -f2,3 "$TMP/log/sacct-run3.txt" | xargs)"
# the killed job again and, for a part, its group's merge
RERUN_EXPECTED="$victim_comment|COMPLETED"
[[ -z "$VICTIM_PART" ]] || RERUN_EXPECTED+=$'\n'"rule_merge_audit_wildcards_$VICTIM_GROUP|COMPLETED"
check "the rerun submitted exactly the killed job (and its merge), COMPLETED" \
    test "$(cut -d'|' -f2,3 "$TMP/log/sacct-run3.txt" | LC_ALL=C sort)" == "$(LC_ALL=C sort <<<"$RERUN_EXPECTED")"
unchanged() {  # only the killed job's outputs, its merge's and the local rules' paper outputs may change
    local changed allowed=""
    [[ -z "$VICTIM_PART" ]] || allowed=$(printf "$VICTIM_DIR/%s\\n" "${MERGED_OUTS[@]}")
    changed=$(LC_ALL=C join -j 1 "$TMP/log/mtimes-before.txt" <(snapshot) | awk '$2 != $3 {print $1}' |
        grep -v '^results/paper/' | grep -vxF -e "${allowed:-results/paper/}" || true)
    [[ -z "$changed" ]] || { log "rewritten by the rerun: $changed"; return 1; }
}
check "the rerun left every finished output of a Slurm job untouched (mtimes)" unchanged
check "every table after the rerun is byte-identical to the local run" same_tables "$RUN_LOCAL" "$RUN2"

STAGE=cleanup
cleanup
[[ ${LEFTOVER:-0} -eq 0 ]] || fail "processes of this test still running after cleanup"
check "no daemon, job or step of this test is left running" test -z "$(tagged_pids)"
