#!/usr/bin/env bash
# hack/run.sh — the central plane with one command (`make run`):
# cellfed-apiserver on embedded SQLite in $DATA_DIR, then, once its /readyz
# says ok, cellfed-controller against its admin kubeconfig.
#
#   DATA_DIR=.cellfed CONTROLLER_ARGS='--v=2' hack/run.sh [cellfed-apiserver flags]
#
# Ctrl-C (SIGINT) or SIGTERM stops the controller, then the plane, and waits
# for both; the data dir is kept, so starting again keeps every object. If
# either process dies, the other is stopped and the script exits 1 with the
# tail of the dead one's log; so does a start that is not ready in time
# (PLANE_TIMEOUT 300 s, CONTROLLER_TIMEOUT 120 s). Logs: $DATA_DIR/logs/.
#
# The controller serves /healthz and /readyz on $CONTROLLER_HEALTH_ADDRESS
# (default 127.0.0.1:10358, its own default; the plane listens on 6443); a
# --health-address in CONTROLLER_ARGS wins.
#
# hack/demo.sh sources this file for its functions; main runs only when the
# file is executed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
if command -v kubectl >/dev/null 2>&1; then
	KUBECTL=$(command -v kubectl)
else
	KUBECTL=$BIN/kubectl # `make kubectl` builds it
fi

# Processes started by start_proc, in start order.
PROC_NAMES=()
PROC_PIDS=()
PROC_LOGS=()
PICKED_PORTS=()

log() { printf '%s\n' "$*" >&2; }

# alive PID: running (a dead child not yet reaped is a zombie and does not count).
alive() {
	local stat
	stat=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[[ -n $stat && $stat != Z* ]]
}

# start_proc NAME LOG CMD [ARGS...] starts CMD in the background, output to
# LOG. setsid puts it in its own session, so a Ctrl-C on the terminal reaches
# only this script, which then stops each process once and in order (a
# second signal makes Kubernetes servers exit at once, skipping shutdown).
start_proc() {
	local name=$1 logfile=$2
	shift 2
	mkdir -p "$(dirname "$logfile")"
	: >"$logfile"
	if command -v setsid >/dev/null 2>&1; then
		setsid "$@" >>"$logfile" 2>&1 </dev/null &
	else
		"$@" >>"$logfile" 2>&1 </dev/null &
	fi
	PROC_NAMES+=("$name")
	PROC_PIDS+=("$!")
	PROC_LOGS+=("$logfile")
}

# tail_named NAME prints the end of the log of the process named NAME.
tail_named() {
	local i
	for i in "${!PROC_NAMES[@]}"; do
		[[ ${PROC_NAMES[$i]} == "$1" ]] && tail_log "$i"
	done
	return 0
}

# tail_log I prints the end of process I's log.
tail_log() {
	log "--- last lines of ${PROC_LOGS[$1]} (${PROC_NAMES[$1]}) ---"
	tail -n "${TAIL_LINES:-30}" "${PROC_LOGS[$1]}" >&2 || true
	log "---"
}

# dead_proc prints the index of the first started process that is no longer
# running and returns 0; returns 1 while all run.
dead_proc() {
	local i
	for i in "${!PROC_PIDS[@]}"; do
		if [[ -n ${PROC_PIDS[$i]} ]] && ! alive "${PROC_PIDS[$i]}"; then
			echo "$i"
			return 0
		fi
	done
	return 1
}

# fail_if_dead: when a process has died, report it with its exit code and
# log tail and exit 1 (the EXIT trap stops the others).
fail_if_dead() {
	local i rc=0
	i=$(dead_proc) || return 0
	wait "${PROC_PIDS[$i]}" 2>/dev/null || rc=$?
	PROC_PIDS[i]=""
	log "error: ${PROC_NAMES[$i]} exited (code $rc)"
	tail_log "$i"
	exit 1
}

# stop_procs NAME... stops the named processes together: SIGTERM, up to
# STOP_TIMEOUT seconds (30) to exit, then SIGKILL. Returns 1 if one had to
# be killed or exited with an error.
stop_procs() {
	local i n pid rc ok=0 t0=$SECONDS deadline=$((SECONDS + ${STOP_TIMEOUT:-30}))
	local -a idx=()
	for n in "$@"; do
		for i in "${!PROC_NAMES[@]}"; do
			[[ ${PROC_NAMES[$i]} == "$n" && -n ${PROC_PIDS[$i]} ]] && idx+=("$i")
		done
	done
	for i in "${idx[@]}"; do
		kill -TERM "${PROC_PIDS[$i]}" 2>/dev/null || true
	done
	for i in "${idx[@]}"; do
		pid=${PROC_PIDS[$i]}
		PROC_PIDS[i]=""
		while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
		if alive "$pid"; then
			log "${PROC_NAMES[$i]} did not stop in ${STOP_TIMEOUT:-30}s: killing it"
			kill -KILL "$pid" 2>/dev/null || true
			ok=1
		fi
		rc=0
		wait "$pid" 2>/dev/null || rc=$?
		if ((rc != 0 && rc != 143)); then # 143: ended by our SIGTERM without handling it
			log "${PROC_NAMES[$i]} exited with code $rc"
			ok=1
		else
			log "${PROC_NAMES[$i]} stopped ($((SECONDS - t0))s)"
		fi
	done
	return "$ok"
}

# stop_all stops the processes one after another in reverse start order
# (the controller before the plane it talks to).
stop_all() {
	local i ok=0
	for ((i = ${#PROC_NAMES[@]} - 1; i >= 0; i--)); do
		stop_procs "${PROC_NAMES[$i]}" || ok=1
	done
	return "$ok"
}

# pick_port VAR stores a free loopback TCP port (20000-32767, below Linux's
# ephemeral range) in VAR, never one picked before by this script.
pick_port() {
	local p n
	for n in $(seq 1 200); do
		p=$((20000 + RANDOM % 12768))
		[[ " ${PICKED_PORTS[*]} " == *" $p "* ]] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			PICKED_PORTS+=("$p")
			printf -v "$1" '%s' "$p"
			return 0
		fi
	done
	log "error: no free port found"
	return 1
}

# wait_apiserver NAME KUBECONFIG NEWER_THAN TIMEOUT waits until KUBECONFIG
# exists, was written after the file NEWER_THAN (so a kubeconfig left by an
# earlier run, maybe for another port, is not used) and the server's /readyz
# says ok. On timeout it prints the tail of process NAME's log.
wait_apiserver() {
	local name=$1 kc=$2 marker=$3 timeout=$4
	local deadline=$((SECONDS + timeout))
	until [[ -f $kc && $kc -nt $marker ]] &&
		[[ $("$KUBECTL" --kubeconfig "$kc" --request-timeout=5s get --raw /readyz 2>/dev/null) == ok ]]; do
		fail_if_dead
		if ((SECONDS >= deadline)); then
			log "error: $name ($kc): /readyz not ok after ${timeout}s"
			tail_named "$name"
			return 1
		fi
		sleep 0.2
	done
}

# wait_controller HOST:PORT TIMEOUT waits until the controller's /readyz says
# ok: it leads and has loaded the clusters.
wait_controller() {
	local addr=$1 deadline=$((SECONDS + $2))
	until [[ $(curl -sS -m 2 "http://$addr/readyz" 2>/dev/null) == ok ]]; do
		fail_if_dead
		if ((SECONDS >= deadline)); then
			log "error: cellfed-controller on $addr not ready after $2s"
			tail_named cellfed-controller
			return 1
		fi
		sleep 0.2
	done
}

# start_plane DATA_DIR LOG_DIR [cellfed-apiserver flags] starts the plane and
# waits until it is ready.
start_plane() {
	local dir=$1 logdir=$2
	shift 2
	mkdir -p "$dir" "$logdir"
	touch "$logdir/.started"
	start_proc cellfed-apiserver "$logdir/cellfed-apiserver.log" \
		"$BIN/cellfed-apiserver" --data-dir="$dir" "$@"
	wait_apiserver cellfed-apiserver "$dir/admin.kubeconfig" "$logdir/.started" "${PLANE_TIMEOUT:-300}"
}

# start_controller KUBECONFIG HEALTH_ADDRESS LOG [flags] starts
# cellfed-controller and waits until it is ready.
start_controller() {
	local kc=$1 addr=$2 logfile=$3
	shift 3
	start_proc cellfed-controller "$logfile" \
		"$BIN/cellfed-controller" --kubeconfig="$kc" --health-address="$addr" "$@"
	wait_controller "$addr" "${CONTROLLER_TIMEOUT:-120}"
}

# watch_procs returns when a process dies (reporting it, exit 1); signals
# are handled by the caller's trap.
watch_procs() {
	while :; do
		fail_if_dead
		sleep 1 &
		wait $! || true
	done
}

run_main() {
	local data_dir=${DATA_DIR:-.cellfed}
	data_dir=$(mkdir -p "$data_dir" && cd "$data_dir" && pwd)
	local logdir=$data_dir/logs kc=$data_dir/admin.kubeconfig
	local health=${CONTROLLER_HEALTH_ADDRESS:-127.0.0.1:10358} a
	local -a controller_args
	read -ra controller_args <<<"${CONTROLLER_ARGS:-}"
	for a in "${controller_args[@]}"; do
		[[ $a == --health-address=* ]] && health=${a#--health-address=}
	done
	[[ -x $BIN/cellfed-apiserver && -x $BIN/cellfed-controller ]] || { log "error: no binaries in $BIN; run make build"; exit 1; }
	[[ -x $KUBECTL ]] || { log "error: no kubectl on PATH or in $BIN; run make kubectl"; exit 1; }

	trap 'log "Stopping (controller first, then the plane)..."; rc=0; stop_all || rc=1; exit $rc' INT TERM
	trap 'stop_all || true' EXIT

	log "Starting cellfed-apiserver on embedded SQLite in $data_dir (log: $logdir/cellfed-apiserver.log)"
	start_plane "$data_dir" "$logdir" "$@"
	log "Plane ready. Starting cellfed-controller, health on http://$health (log: $logdir/cellfed-controller.log)"
	start_controller "$kc" "$health" "$logdir/cellfed-controller.log" "${controller_args[@]}"
	cat >&2 <<EOF

cellfed plane and controller are running (Ctrl-C stops both; data is kept in $data_dir).
In another shell:
  export KUBECONFIG=$kc
  kubectl get kubefedclusters -A
  bin/cellfedctl status
Logs: tail -f $logdir/*.log
EOF
	watch_procs
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	run_main "$@"
fi
