#!/usr/bin/env bash
# hack/demo.sh — a throwaway federation (`make demo`), all in a temp dir:
# the plane and cellfed-controller (hack/run.sh's functions), three
# member-apiservers on free ports joined as member-1..3, the tenant
# workspace "shop" with four cells (rz00a and rz01a on member-1, rz10a on
# member-2, rz20a on member-3), and an app released to three cells: a
# FederatedDeployment (5 replicas on rz10a by override) and a
# FederatedService. Once the members hold the objects it prints what the
# plane and the members see, then waits; Ctrl-C stops everything and
# removes the temp dir. DEMO_EXIT=1 exits after printing instead (exit code
# 0 only if everything propagated). DEMO_TIMEOUT (s, default 300; the demo
# takes ~30 s on an idle machine) bounds each wait.
set -euo pipefail
# shellcheck source=hack/run.sh
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"

TIMEOUT=${DEMO_TIMEOUT:-300}
export PLANE_TIMEOUT=$TIMEOUT CONTROLLER_TIMEOUT=$TIMEOUT
NS=shop
CELLS=(rz00a:member-1 rz01a:member-1 rz10a:member-2 rz20a:member-3)
PLACED=(rz00a rz10a rz20a)
declare -A WANT_REPLICAS=([member-1]=2 [member-2]=5 [member-3]=2)

DEMO=$(mktemp -d "${TMPDIR:-/tmp}/cellfed-demo.XXXXXX")
export DEMO KUBECONFIG=$DEMO/plane/admin.kubeconfig
export PATH=$BIN:$PATH
RUNNING=0 # 1 once set up: Ctrl-C then ends the demo with exit code 0

cleanup() {
	stop_procs cellfed-controller || true
	stop_procs cellfed-apiserver || true
	stop_procs member-1 member-2 member-3 || true
	rm -rf "$DEMO"
	log "Removed $DEMO"
}
trap cleanup EXIT
on_signal() {
	log "Stopping..."
	if ((RUNNING)); then exit 0; else exit 130; fi
}
trap on_signal INT TERM

[[ -x $BIN/member-apiserver && -x $BIN/cellfedctl ]] || { log "error: no binaries in $BIN; run make build"; exit 1; }
[[ -x $KUBECTL ]] || { log "error: no kubectl on PATH or in $BIN; run make kubectl"; exit 1; }
kubectl() { "$KUBECTL" "$@"; }

# eventually DESCRIPTION WANT CMD... runs CMD until its output is WANT,
# failing after $TIMEOUT s with the last output.
eventually() {
	local what=$1 want=$2 got="" deadline=$((SECONDS + TIMEOUT))
	shift 2
	while :; do
		got=$("$@" 2>&1) || true
		[[ $got == "$want" ]] && return 0
		fail_if_dead
		if ((SECONDS >= deadline)); then
			log "error: $what: not done after ${TIMEOUT}s"
			log "  want: $want"
			log "  got:  $got"
			tail_named cellfed-controller
			exit 1
		fi
		sleep 0.5
	done
}

# show CMD prints "$ CMD" and runs it (the command as one could type it
# with $DEMO and $KUBECONFIG exported).
show() {
	printf '\n$ %s\n' "$1"
	eval "$1"
}

start=$SECONDS
log "Demo dir: $DEMO"

plane_port="" health_port="" port=""
member_ports=()
pick_port plane_port
pick_port health_port
touch "$DEMO/.started"
for i in 1 2 3; do
	pick_port port
	member_ports+=("$port")
	start_proc "member-$i" "$DEMO/logs/member-$i.log" \
		"$BIN/member-apiserver" --data-dir="$DEMO/member-$i" --secure-port="$port" --v=0
done
log "Starting the plane on 127.0.0.1:$plane_port and members on ports ${member_ports[*]}..."
# The demo joins members directly: no tunnel hub, so its fixed ports never
# collide with another plane on this machine.
start_plane "$DEMO/plane" "$DEMO/logs" --secure-port="$plane_port" --bind-address=127.0.0.1 --tunnel-agent-port=0
log "Plane ready after $((SECONDS - start))s. Starting cellfed-controller..."
start_controller "$KUBECONFIG" "127.0.0.1:$health_port" "$DEMO/logs/cellfed-controller.log"
for i in 1 2 3; do
	wait_apiserver "member-$i" "$DEMO/member-$i/admin.kubeconfig" "$DEMO/.started" "$TIMEOUT"
done
log "Controller and members ready after $((SECONDS - start))s. Joining members..."

for i in 1 2 3; do
	cellfedctl join "member-$i" --kubeconfig-member="$DEMO/member-$i/admin.kubeconfig" >/dev/null
done
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: $NS
  labels: {cellfed.io/tenant: acme, cellfed.io/workspace: prod}
EOF
for c in "${CELLS[@]}"; do
	cell=${c%%:*}
	cellfedctl cell create "$cell" -n "$NS" --cluster="${c#*:}" --label="zone=z${cell:2:1}" >/dev/null
done
eventually "cells ready" "True True True True " \
	kubectl get cells -n "$NS" -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}'
log "Members joined, cells ready after $((SECONDS - start))s. Releasing web to ${PLACED[*]}..."

placement="{topologyType: cell, topologies: [{name: ${PLACED[0]}}, {name: ${PLACED[1]}}, {name: ${PLACED[2]}}]}"
kubectl apply -f - >/dev/null <<EOF
apiVersion: types.kubefed.io/v1beta2
kind: FederatedDeployment
metadata: {name: web, namespace: $NS}
spec:
  placement: $placement
  overrides:
  - topologyName: rz10a
    clusterOverrides: [{path: /spec/replicas, value: 5}]
  template:
    metadata: {labels: {app: web}}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.27", ports: [{containerPort: 80}]}]}
---
apiVersion: types.kubefed.io/v1beta2
kind: FederatedService
metadata: {name: web, namespace: $NS}
spec:
  placement: $placement
  template:
    metadata: {labels: {app: web}}
    spec:
      type: ClusterIP
      selector: {app: web}
      ports: [{name: http, port: 80, targetPort: 80, protocol: TCP}]
EOF

status_view='jsonpath={range .status.topologies[*]}{.name}={.status} {end}{.status.conditions[?(@.type=="Propagation")].status}'
for kind in federateddeployments federatedservices; do
	eventually "$kind/web propagated" "rz00a=OK rz10a=OK rz20a=OK True" \
		kubectl get "$kind.v1beta2.types.kubefed.io" web -n "$NS" -o "$status_view"
done
for i in 1 2 3; do
	eventually "deployment and service web in member-$i" "${WANT_REPLICAS[member-$i]} ClusterIP" \
		kubectl --kubeconfig="$DEMO/member-$i/admin.kubeconfig" get deployment/web service/web -n "$NS" \
		-o 'jsonpath={.items[0].spec.replicas} {.items[1].spec.type}'
done
log "Propagated to all three cells after $((SECONDS - start))s."

cat <<EOF

==== cellfed demo: a plane, a controller, three members ====
To explore from another shell:
  export DEMO=$DEMO KUBECONFIG=$KUBECONFIG PATH=$BIN:\$PATH
EOF
show 'cellfedctl status'
show 'kubectl get cells -n shop'
show 'kubectl get federateddeployments.v1beta2.types.kubefed.io,federatedservices.v1beta2.types.kubefed.io -n shop'
show "kubectl get federateddeployments.v1beta2.types.kubefed.io web -n shop -o yaml | sed -n '/^status:/,\$p'"
show "kubectl get federatedservices.v1beta2.types.kubefed.io web -n shop -o jsonpath='{range .status.topologies[*]}{.name}{\"\\t\"}{.cluster}{\"\\t\"}{.status}{\"\\n\"}{end}'"
printf '\n# The same object read as KubeFed'"'"'s v1beta1: cells become per-cell clusters <namespace>.<cell>\n'
show 'kubectl get federateddeployments.v1beta1.types.kubefed.io -n shop'
show "kubectl get federateddeployments.v1beta1.types.kubefed.io web -n shop -o jsonpath='{.spec.placement}{\"\\n\"}{.spec.overrides}{\"\\n\"}'"
printf '\n# What each member stores. Members are bare kube-apiservers without\n# controllers: Deployments are stored but no pods run (READY 0/N);\n# Services get ClusterIPs from the member'"'"'s own service range.\n'
for i in 1 2 3; do
	show "kubectl --kubeconfig=\$DEMO/member-$i/admin.kubeconfig get deployments,services -n shop -o wide"
done

log ""
log "Demo ready after $((SECONDS - start))s."
if [[ ${DEMO_EXIT:-0} != 0 ]]; then
	exit 0
fi
RUNNING=1
log "Demo running; Ctrl-C to stop and clean up"
watch_procs
