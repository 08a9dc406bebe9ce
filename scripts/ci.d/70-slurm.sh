#!/usr/bin/env bash
# job_submit/mem4d in a real SLURM: a single-host cluster in a scratch
# directory (munged, slurmctld, slurmd with fake GPUs), the plugin loaded
# from the build, real sbatch submissions, outcomes asserted from sbatch's
# exit status and message. The steps are those of contrib/slurm/README.md.
# Then the plugin's code paths under valgrind, driven directly.
#
# Needs root and slurm-wlm + munge (scripts/setup.sh installs them). Where
# they are missing it says why and skips, except on CI (CI=true): there a
# skip is a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BUILD_DIR:?}"
src=$PWD
t_start=$(date +%s.%N)

skip() {
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $* (CI=true: this test must run on CI)"
        exit 1
    fi
    echo "SKIP: $*"
    exit 0
}
[ "$(id -u)" -eq 0 ] || skip "not root: munged, slurmctld and slurmd run as root in this test"
for tool in munged slurmctld slurmd sbatch scontrol mknod valgrind; do
    command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (scripts/setup.sh installs slurm-wlm libslurm-dev munge valgrind)"
done

# The plugin, built with the SLURM headers.
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    meson setup "$BUILD_DIR" -Djson=enabled -Dslurm=enabled -Ddocs=disabled >/dev/null
fi
grep -q 'job_submit_mem4d' "$BUILD_DIR/build.ninja" ||
    skip "the build in $BUILD_DIR has no SLURM plugin (libslurm-dev was not found when it was configured)"
ninja -C "$BUILD_DIR" contrib/slurm/job_submit_mem4d.so contrib/slurm/test-job-submit >/dev/null
plugin_build=$(cd "$BUILD_DIR/contrib/slurm" && pwd)

# SLURM's own plugins (Debian: /usr/lib/<multiarch>/slurm-wlm).
sysplugins=""
for d in "/usr/lib/$(cc -print-multiarch 2>/dev/null)/slurm-wlm" /usr/lib64/slurm /usr/lib/slurm; do
    [ -f "$d/select_cons_tres.so" ] && { sysplugins=$d; break; }
done
[ -n "$sysplugins" ] || skip "SLURM's plugin directory was not found"

scratch=$(mktemp -d /tmp/mem4d-slurm.XXXXXX)
S=$scratch
pids_to_stop=()
stop_pidfile() { # stop a daemon by the PID in its pid file: TERM, then KILL
    local f=$1 pid
    # A daemon started moments ago may not have written its pid file yet.
    if [ -e "$f.started" ]; then
        for _ in $(seq 50); do [ -s "$f" ] && break; sleep 0.1; done
    fi
    [ -s "$f" ] || return 0
    pid=$(cat "$f")
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$f.started"
}
teardown() {
    local rc=$?
    stop_pidfile "$S/slurmd.pid"
    stop_pidfile "$S/slurmctld.pid"
    stop_pidfile "$S/munged.pid"
    if [ "$rc" -ne 0 ]; then
        echo "--- slurmctld.log (last 30 lines)"; tail -n 30 "$S/slurmctld.log" 2>/dev/null || true
        echo "--- slurmd.log (last 10 lines)"; tail -n 10 "$S/slurmd.log" 2>/dev/null || true
    fi
    rm -rf "$scratch"
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# --- 1. munge: a key, socket, pid and log of our own -----------------------
mkdir -p "$S/state" "$S/spool" "$S/dev" "$S/etc"
chmod 700 "$S"
dd if=/dev/urandom of="$S/munge.key" bs=1024 count=1 status=none
chmod 400 "$S/munge.key"
touch "$S/munged.pid.started"
munged --force --key-file="$S/munge.key" --socket="$S/munge.sock" --pid-file="$S/munged.pid" \
    --log-file="$S/munged.log" --seed-file="$S/munged.seed"

# --- 2. fake GPUs: 8 character devices of NVIDIA's major number ------------
for i in 0 1 2 3 4 5 6 7; do mknod "$S/dev/nvidia$i" c 195 "$i"; done

# --- 3. slurm.conf, gres.conf and mem4d.conf --------------------------------
host=$(hostname -s)
cpus=$(nproc)
cat > "$S/etc/slurm.conf" <<EOF
ClusterName=mem4dtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
SlurmctldDebug=info
PluginDir=$sysplugins:$plugin_build
JobSubmitPlugins=mem4d
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MailProg=/bin/true
GresTypes=gpu
SelectType=select/cons_tres
ReturnToService=2
NodeName=node0 NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus RealMemory=1 Gres=gpu:h100:8 State=UNKNOWN
NodeName=n[01-15] CPUs=$cpus RealMemory=1 Gres=gpu:h100:8 State=FUTURE
PartitionName=gpu Nodes=node0,n[01-15] Default=YES MaxTime=INFINITE State=UP
EOF
cat > "$S/etc/gres.conf" <<EOF
NodeName=node0 Name=gpu Type=h100 File=$S/dev/nvidia[0-7]
EOF
write_mem4d_conf() { # $1: policy
    cat > "$S/etc/mem4d.conf" <<EOF
# job_submit/mem4d: GPU type and partition -> libmem4d device
gres.h100 = h100-80
partition.gpu = h100-80
policy = $1
strict = no
EOF
}
export SLURM_CONF=$S/etc/slurm.conf

# MEM4D_SLURM_VALGRIND=1 runs slurmctld itself under valgrind (slow: about
# a minute more); its error summaries are checked at the end.
start_slurmctld() {
    : > "$S/slurmctld.log"
    touch "$S/slurmctld.pid.started"
    if [ "${MEM4D_SLURM_VALGRIND:-0}" = 1 ]; then
        (valgrind --log-file="$S/valgrind-slurmctld.%p.log" --leak-check=no \
            slurmctld -D -f "$SLURM_CONF" -i >/dev/null 2>&1 &)
    else
        slurmctld -f "$SLURM_CONF" -i
    fi
    for _ in $(seq 600); do
        scontrol ping 2>/dev/null | grep -q 'is UP' && return 0
        sleep 0.1
    done
    echo "FAIL: slurmctld did not answer"; return 1
}

failures=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# submit NAME EXPECT(accept|reject) PATTERN...: sbatch, then check exit status
# and that every pattern is in its output.
submit() {
    local name=$1 expect=$2 out rc=0
    last_job=""
    shift 2
    out=$(sbatch --hold "$src/contrib/slurm/examples/$name" 2>&1) || rc=$?
    if [ "$expect" = accept ] && { [ "$rc" -ne 0 ] || ! grep -q '^Submitted batch job' <<<"$out"; }; then
        fail "$name: expected acceptance, sbatch exited $rc: $out"; return
    fi
    if [ "$expect" = reject ] && [ "$rc" -ne 1 ]; then
        fail "$name: expected rejection (exit 1), sbatch exited $rc: $out"; return
    fi
    local p
    for p in "$@"; do
        grep -qF -- "$p" <<<"$out" || { fail "$name: '$p' is not in sbatch's output: $out"; return; }
    done
    pass "$name: ${expect}ed (sbatch exit $rc)"
    [ "$expect" = reject ] && echo "     $(grep 'mem4d:' <<<"$out" | head -n 1)"
    last_job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' <<<"$out")
    return 0
}
logged() { # a pattern in slurmctld's log
    grep -qF -- "$1" "$S/slurmctld.log" && pass "slurmctld.log: $2" || fail "slurmctld.log lacks '$1' ($2)"
}

# --- 4. start the cluster with the plugin (policy = admit) -----------------
write_mem4d_conf admit
start_slurmctld
touch "$S/slurmd.pid.started"
slurmd -f "$SLURM_CONF" -N node0
logged "job_submit/mem4d: libmem4d" "the plugin loaded and read mem4d.conf"

# --- 5. submissions ---------------------------------------------------------
submit llama3-8b.sbatch accept
logged "name=llama3-8b partition=(default) gpus=8 type=h100: fits, admitted" "the 8B job's verdict"
submit llama3-70b.sbatch reject "would run out of GPU memory" "pipeline stage 0 needs" "bytes) per GPU" \
    "one h100-80 GPU has 80.00 GiB (85899345920 bytes)" "on these 32 GPUs this layout fits" \
    "--pipeline-model-parallel-size"
submit bad-tp.sbatch reject "layout is invalid" "32 attention heads are not divisible by tp 3"
submit no-training.sbatch accept
submit unreadable.sbatch accept
logged "unknown, admitted: mem4d: cannot check this job's GPU memory" "unreadable arguments admitted by policy"
submit llama3-70b-pp2.sbatch accept
job70=$last_job
# job_modify: the same job on 2 nodes would not fit; on 4 it still does.
if out=$(scontrol update JobId="$job70" NumNodes=2 2>&1); then
    fail "job_modify: moving job $job70 to 2 nodes was accepted: $out"
else
    pass "job_modify: moving the 70B job to 2 nodes refused ($out)"
fi
logged "modify uid=0 name=llama3-70b-pp2 partition=gpu gpus=16 type=h100: oom, rejected" "job_modify's re-check"
scontrol update JobId="$job70" TimeLimit=60 && pass "job_modify: a time-limit change passes" ||
    fail "job_modify: a time-limit change was refused"
alive() { scontrol ping 2>/dev/null | grep -q 'is UP' && pass "slurmctld still up $1" || fail "slurmctld died $1"; }
alive "after the submissions and updates"

# --- 6. policy = reject: unreadable arguments are refused ------------------
stop_pidfile "$S/slurmctld.pid"
write_mem4d_conf reject
start_slurmctld
submit unreadable.sbatch reject "cannot check this job's GPU memory" "\$MODEL_ARGS" "(policy = reject)"
submit llama3-8b.sbatch accept
alive "with policy = reject"

# --- 7. a garbled mem4d.conf is reported when the plugin loads -------------
stop_pidfile "$S/slurmctld.pid"
printf 'gres.h100 = h100-80\npolicy = sometimes\n' > "$S/etc/mem4d.conf"
: > "$S/slurmctld.log"
rc=0
timeout 60 slurmctld -D -f "$SLURM_CONF" -i >/dev/null 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
    pass "slurmctld refuses to start with a garbled mem4d.conf (exit $rc)"
else
    fail "slurmctld with a garbled mem4d.conf exited $rc"
fi
logged "mem4d.conf:2: policy = 'sometimes': the value must be admit or reject" "the garbled line, named"

stop_pidfile "$S/slurmd.pid"
if [ "${MEM4D_SLURM_VALGRIND:-0}" = 1 ]; then
    if grep -h 'ERROR SUMMARY' "$S"/valgrind-slurmctld.*.log | grep -qv ' 0 errors'; then
        fail "slurmctld under valgrind: $(grep -h 'ERROR SUMMARY' "$S"/valgrind-slurmctld.*.log | sort | uniq -c)"
    else
        pass "slurmctld under valgrind: $(grep -h 'ERROR SUMMARY' "$S"/valgrind-slurmctld.*.log | sed 's/^==[0-9]*== //' | sort | uniq -c | xargs)"
    fi
fi
t_cluster=$(date +%s.%N)
echo "live cluster test: $(python3 -c "print(f'{$t_cluster - $t_start:.1f}')") s"

# --- 8. the plugin's code paths under valgrind -----------------------------
if CK_FORK=no valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        "$BUILD_DIR/contrib/slurm/test-job-submit" "$src/contrib/slurm/examples" > "$S/valgrind.log" 2>&1; then
    pass "test-job-submit under valgrind: no errors, no leaks"
else
    fail "test-job-submit under valgrind"; tail -n 40 "$S/valgrind.log"
fi

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all SLURM checks passed"
