#!/usr/bin/env bash
# hack/demo.sh — a throwaway federation (`make demo`), all in a temp dir:
# the plane and cellfed-controller (hack/run.sh's functions), three
# member-apiservers on free ports joined as member-1..3, and the tenant
# workspace "shop" with four cells (rz00a and rz01a on member-1, rz10a on
# member-2, rz20a on member-3). Then the release story, each step printed
# as the command a user would type and what it shows:
#
#   1. plain manifests and one policy: a Deployment api, the ConfigMap it
#      reads with envFrom and a Service applied as they are, a
#      PropagationPolicy placing them on rz00a, rz10a and rz20a; the demo
#      plays the members' workload controllers (the members are bare API
#      servers) and `kubectl rollout status deployment/api` returns
#      against the plane;
#   2. the same with KubeFed's wrapper types: web, a FederatedDeployment
#      (5 replicas on rz10a by override) and a FederatedService on the same
#      cells, READY per cell; the steps below release web;
#   3. an app team's identity (`cellfedctl tenant grant`), which does the
#      releases below and is refused in another workspace;
#   4. grayscale: `rollout start --cells=rz00a`, an image update reaches
#      one cell, `rollout next`, `rollout finish`;
#   5. disaster recovery: member-2 stops, rz10a is masked out, an update
#      is released to the rest; member-2 comes back untouched until
#      `rollout finish` adds it back;
#   6. roll back with `rollout undo`.
#
# Every step checks what it expects (polling with a deadline, DEMO_TIMEOUT
# s, default 300) and on a miss prints what it expected and what it saw
# and exits 1. Afterwards the demo waits; Ctrl-C stops everything and
# removes the temp dir. DEMO_EXIT=1 exits after the last step instead (exit
# code 0 only if every expectation held); DEMO_STEP=1 waits for Enter
# before each step (for a live audience).
set -euo pipefail
# shellcheck source=hack/run.sh
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"

TIMEOUT=${DEMO_TIMEOUT:-300}
export PLANE_TIMEOUT=$TIMEOUT CONTROLLER_TIMEOUT=$TIMEOUT
NS=shop
CELLS=(rz00a:member-1 rz01a:member-1 rz10a:member-2 rz20a:member-3)
declare -A WANT_REPLICAS=([member-1]=2 [member-2]=5 [member-3]=2)
declare -a MEMBER_ARGS=()
WORKLOADS_PID=""

DEMO=$(mktemp -d "${TMPDIR:-/tmp}/cellfed-demo.XXXXXX")
export DEMO KUBECONFIG=$DEMO/plane/admin.kubeconfig
export PATH=$BIN:$PATH
RUNNING=0 # 1 once set up: Ctrl-C then ends the demo with exit code 0

cleanup() {
	if [[ -n $WORKLOADS_PID ]]; then
		kill "$WORKLOADS_PID" 2>/dev/null || true
		wait "$WORKLOADS_PID" 2>/dev/null || true
	fi
	stop_procs board || true
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
	MEMBER_ARGS[i]="--data-dir=$DEMO/member-$i --secure-port=$port --v=0"
	# shellcheck disable=SC2086 # the arguments hold no spaces
	start_proc "member-$i" "$DEMO/logs/member-$i.log" "$BIN/member-apiserver" ${MEMBER_ARGS[i]}
done
log "Starting the plane on 127.0.0.1:$plane_port and members on ports ${member_ports[*]}..."
# The demo joins members directly: no tunnel hub, so its fixed ports never
# collide with another plane on this machine.
start_plane "$DEMO/plane" "$DEMO/logs" --secure-port="$plane_port" --bind-address=127.0.0.1 --tunnel-agent-port=0
log "Plane ready after $((SECONDS - start))s. Starting cellfed-controller..."
# Members are probed every 2 s with one failure enough (default: 3 failures) so the outage in
# step 4 shows at once.
start_controller "$KUBECONFIG" "127.0.0.1:$health_port" "$DEMO/logs/cellfed-controller.log" \
	--cluster-probe-period=2s --cluster-probe-timeout=2s --cluster-failure-threshold=1
for i in 1 2 3; do
	wait_apiserver "member-$i" "$DEMO/member-$i/admin.kubeconfig" "$DEMO/.started" "$TIMEOUT"
done
log "Controller and members ready after $((SECONDS - start))s. Joining members..."

for i in 1 2 3; do
	cellfedctl join "member-$i" --kubeconfig-member="$DEMO/member-$i/admin.kubeconfig" >/dev/null
done
cellfedctl tenant create "$NS" --tenant=acme --workspace=prod >/dev/null
# The release board of the workspace, as the platform admin, on localhost.
board_port=""
pick_port board_port
start_proc board "$DEMO/logs/board.log" "$BIN/cellfedctl" --kubeconfig="$KUBECONFIG" board -n "$NS" --address="127.0.0.1:$board_port"
BOARD_URL=""
for _ in $(seq 1 100); do
	BOARD_URL=$(grep -o 'http://[^ ]*' "$DEMO/logs/board.log" | head -1) && [[ -n $BOARD_URL ]] && break
	sleep 0.1
done
if [[ -z $BOARD_URL ]]; then log "cellfedctl board printed no address: $(cat "$DEMO/logs/board.log")"; exit 1; fi
for c in "${CELLS[@]}"; do
	cell=${c%%:*}
	cellfedctl cell create "$cell" -n "$NS" --cluster="${c#*:}" --label="zone=z${cell:2:1}" >/dev/null
done
eventually "cells ready" "True True True True " \
	kubectl get cells -n "$NS" -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}'
log "Members joined, cells ready after $((SECONDS - start))s."

# --- the story -------------------------------------------------------------

STEP=0
# step TITLE [TEXT] starts a step: a heading, what it is about and, with
# DEMO_STEP=1, a pause until Enter on the terminal.
step() {
	STEP=$((STEP + 1))
	if [[ ${DEMO_STEP:-0} != 0 ]]; then
		if [[ -r /dev/tty ]]; then
			printf '\n[Enter: step %d, %s] ' "$STEP" "$1" >/dev/tty
			read -r _ </dev/tty || true
		else
			log "DEMO_STEP=1 needs a terminal; going on"
		fi
	fi
	printf '\n==== %d. %s (%ds) ====\n' "$STEP" "$1" "$((SECONDS - start))"
	[[ -n ${2:-} ]] && printf '%s\n' "$2"
	return 0
}

# say TEXT prints a comment line of the story.
say() { printf '\n# %s\n' "$*"; }

# expect_fails DESCRIPTION WANT CMD prints "$ CMD", runs it and checks that
# it fails with WANT in its output.
expect_fails() {
	local what=$1 want=$2 cmd=$3 out rc=0
	printf '\n$ %s\n' "$cmd"
	out=$(eval "$cmd" 2>&1) || rc=$?
	printf '%s\n' "$out"
	if ((rc == 0)) || [[ $out != *"$want"* ]]; then
		log "error: $what"
		log "  want: a failure saying $want"
		log "  got:  exit code $rc, $out"
		exit 1
	fi
}

# MEMBERS_CMD prints each member's image of web and its ready replicas.
MEMBERS_CMD='for m in 1 2 3; do echo "member-$m: $(kubectl --kubeconfig=$DEMO/member-$m/admin.kubeconfig -n shop get deploy web -o jsonpath='"'"'{.spec.template.spec.containers[0].image} ready {.status.readyReplicas}/{.spec.replicas}'"'"' 2>&1)"; done'
fed_status() {
	kubectl get federateddeployments web -n "$NS" -o 'jsonpath={.status.released} {.status.ready} {.status.propagated}'
}
# rollout_done waits until `cellfedctl rollout status` exits 0: the
# released cells are updated and ready.
rollout_done() {
	eventually "rollout status of deployment/web exits 0 (released cells updated and ready)" "exit 0" \
		bash -c 'cellfedctl --kubeconfig="$APP" rollout status deployment/web -n shop >/dev/null 2>&1; echo "exit $?"'
}
# images_are WANT1 WANT2 WANT3 waits until members 1..3 run these images
# (- for a member not asked).
images_are() {
	local -a want=("$@")
	eventually "members run ${want[*]}" "${want[*]}" bash -c '
		out=""
		for i in 1 2 3; do
			w=${!i}
			if [[ $w == - ]]; then out+="- "; continue; fi
			out+="$(kubectl --kubeconfig="$DEMO/member-$i/admin.kubeconfig" --request-timeout=5s -n shop get deploy web -o "jsonpath={.spec.template.spec.containers[0].image}" 2>&1) "
		done
		printf "%s" "${out% }"' _ "${want[@]}"
}
SET_IMAGE='kubectl --kubeconfig=$APP -n shop patch federateddeployment web --type=json -p '"'"'[{"op":"replace","path":"/spec/template/spec/template/spec/containers/0/image","value":"IMAGE"}]'"'"''

# workload_controllers plays the members' Deployment controllers, which
# bare API servers do not run: every second it marks each member
# Deployment that is not yet rolled out as rolled out and ready at its
# generation (status.observedGeneration, replicas, updatedReplicas,
# readyReplicas, availableReplicas through the status subresource), as a
# real cluster's controllers and kubelets would once the pods run. A
# member that does not answer is skipped. Log: $DEMO/logs/workload-controllers.log.
workload_controllers() {
	local i kc rows name gen replicas ogen ready
	while :; do
		for i in 1 2 3; do
			kc=$DEMO/member-$i/admin.kubeconfig
			rows=$(kubectl --kubeconfig="$kc" --request-timeout=2s get deployments -n "$NS" \
				-o 'jsonpath={range .items[*]}{.metadata.name} {.metadata.generation} {.spec.replicas} {.status.observedGeneration} {.status.readyReplicas}{"\n"}{end}' 2>/dev/null) || continue
			while read -r name gen replicas ogen ready; do
				[[ -z $name || ($gen == "$ogen" && $replicas == "$ready") ]] && continue
				if kubectl --kubeconfig="$kc" --request-timeout=2s patch deployment "$name" -n "$NS" --subresource=status --type=merge \
					-p "{\"status\":{\"observedGeneration\":$gen,\"replicas\":$replicas,\"updatedReplicas\":$replicas,\"readyReplicas\":$replicas,\"availableReplicas\":$replicas}}" >/dev/null 2>&1; then
					printf '%s member-%d: deployment %s/%s rolled out, %s/%s ready (generation %s)\n' "$(date +%T)" "$i" "$NS" "$name" "$replicas" "$replicas" "$gen"
				fi
			done <<<"$rows"
		done
		sleep 1
	done
}

cat <<EOF

==== cellfed demo: a plane, a controller, three members, four cells ====
To explore from another shell:
  export DEMO=$DEMO KUBECONFIG=$KUBECONFIG PATH=$BIN:\$PATH
Open the release board in a browser and watch every cell change as the steps run:
  $BOARD_URL
EOF
show 'cellfedctl status'
show 'kubectl get cells -n shop'

step "Plain manifests and one policy" "An app team applies its manifests as they are, as to one cluster: a
Deployment api, the ConfigMap api-env it reads with envFrom, and a Service.
The plane stores them and runs none of them; one PropagationPolicy places
the Deployment and the Service on rz00a, rz10a and rz20a, and the ConfigMap
follows the Deployment that references it."
show "kubectl apply -f - <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: api-env, namespace: shop}
data: {GREETING: hello}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - {name: api, image: \"nginx:1.27\", envFrom: [{configMapRef: {name: api-env}}]}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: shop}
spec:
  selector: {app: api}
  ports: [{port: 80, targetPort: 80}]
EOF"
show "kubectl apply -f - <<'EOF'
apiVersion: policy.cellfed.io/v1alpha1
kind: PropagationPolicy
metadata: {name: api, namespace: shop}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: api}
  - {apiVersion: v1, kind: Service, name: api}
  placement: {topologies: [{name: rz00a}, {name: rz10a}, {name: rz20a}]}
EOF"
for i in 1 2 3; do
	eventually "deployment api, configmap api-env and service api in member-$i" "api api-env api" \
		kubectl --kubeconfig="$DEMO/member-$i/admin.kubeconfig" get deployment/api configmap/api-env service/api -n "$NS" \
		-o 'jsonpath={.items[*].metadata.name}'
done
log "api placed on three cells after $((SECONDS - start))s."
show 'kubectl get propagationpolicies -n shop'
say "The members are bare kube-apiservers: they store Deployments but run no
# controllers and no pods, so nothing is ready yet. From here on the demo
# plays the members' workload controllers: a loop that marks each member
# Deployment rolled out and ready at its generation, through the status
# subresource (log: \$DEMO/logs/workload-controllers.log). The plane's
# Deployment gets its status from the cells, so kubectl rollout status
# works against the plane as against one cluster."
workload_controllers >"$DEMO/logs/workload-controllers.log" 2>&1 &
WORKLOADS_PID=$!
show "kubectl rollout status deployment/api -n shop --timeout=${TIMEOUT}s" || { log "error: kubectl rollout status deployment/api did not succeed within ${TIMEOUT}s"; tail_named cellfed-controller; exit 1; }
eventually "api ready in every cell" "3/3 3/3" \
	kubectl get federateddeployments api -n "$NS" -o 'jsonpath={.status.ready} {.status.propagated}'
show 'kubectl get deployment api -n shop'
show 'cellfedctl status deployment/api -n shop'
show 'for m in 1 2 3; do echo "member-$m: $(kubectl --kubeconfig=$DEMO/member-$m/admin.kubeconfig -n shop get deploy api -o jsonpath='"'"'{.spec.template.spec.containers[0].image} envFrom {.spec.template.spec.containers[0].envFrom[0].configMapRef.name} ready {.status.readyReplicas}/{.spec.replicas}'"'"' 2>&1)"; done'

step "The same with KubeFed's wrapper types" "Without a policy, the team writes the federated object itself: KubeFed's
wrappers carry the template, the placement and the overrides in one
object. The releases below use web, a FederatedDeployment and a
FederatedService on the same three cells. The workload controllers' loop
makes it ready, and cellfed-controller reflows each member's status into
the federated object."

show "kubectl apply -f - <<'EOF'
apiVersion: types.kubefed.io/v1beta2
kind: FederatedDeployment
metadata: {name: web, namespace: shop}
spec:
  placement: {topologies: [{name: rz00a}, {name: rz10a}, {name: rz20a}]}
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
        spec: {containers: [{name: web, image: \"nginx:1.27\", ports: [{containerPort: 80}]}]}
---
apiVersion: types.kubefed.io/v1beta2
kind: FederatedService
metadata: {name: web, namespace: shop}
spec:
  placement: {topologies: [{name: rz00a}, {name: rz10a}, {name: rz20a}]}
  template:
    metadata: {labels: {app: web}}
    spec:
      type: ClusterIP
      selector: {app: web}
      ports: [{name: http, port: 80, targetPort: 80, protocol: TCP}]
EOF"

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
eventually "cells count the objects they hold" "5 0 5 5 " \
	kubectl get cells -n "$NS" -o 'jsonpath={range .items[*]}{.status.objects}{" "}{end}'
log "Propagated to all three cells after $((SECONDS - start))s."
eventually "web ready in every cell" "3/3 3/3 3/3" fed_status
show 'kubectl get cells -n shop'
show 'kubectl get federateddeployments,federatedservices -n shop'
show "kubectl get federateddeployments web -n shop -o jsonpath='{range .status.topologies[*]}{.name}{\"\\t\"}{.cluster}{\"\\t\"}{.status}{\"\\t\"}ready={.ready}{\"\\t\"}readyReplicas={.remoteStatus.readyReplicas}{\"\\n\"}{end}'"
printf '\n# The same object read as KubeFed'"'"'s v1beta1: cells become per-cell clusters <namespace>.<cell>\n'
show "kubectl get federateddeployments.v1beta1.types.kubefed.io web -n shop -o jsonpath='{.spec.placement}{\"\\n\"}{.spec.overrides}{\"\\n\"}'"
show 'cat $DEMO/logs/workload-controllers.log'
show "$MEMBERS_CMD"

step "An app team's identity" "The platform admin creates a service account for the shop team's release
pipeline and grants it the app-team role in workspace shop only; the
releases below run with its token (kubeconfig \$APP)."
export APP=$DEMO/app-team.kubeconfig
show 'kubectl create serviceaccount release-bot -n shop'
show 'cellfedctl tenant grant serviceaccount:shop:release-bot -n shop --role=app-team'
kubectl config view --raw --minify --flatten -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$DEMO/plane-ca.crt"
server=$(kubectl config view --minify -o 'jsonpath={.clusters[0].cluster.server}')
show "kubectl config set-cluster plane --server=$server --certificate-authority=\$DEMO/plane-ca.crt --embed-certs --kubeconfig=\$APP >/dev/null
kubectl config set-credentials release-bot --token=\"\$(kubectl create token release-bot -n shop --duration=1h)\" --kubeconfig=\$APP >/dev/null
kubectl config set-context shop --cluster=plane --user=release-bot --namespace=shop --kubeconfig=\$APP >/dev/null
kubectl config use-context shop --kubeconfig=\$APP"
show 'cellfedctl tenant create billing --tenant=globex --workspace=prod'
eventually "the app team reads its workspace" "yes" kubectl --kubeconfig="$APP" auth can-i update federateddeployments -n shop
show 'kubectl --kubeconfig=$APP auth can-i update federateddeployments -n shop'
expect_fails "the app team must not read another workspace" "Forbidden" \
	'kubectl --kubeconfig=$APP get federateddeployments -n billing'

step "Grayscale: one cell first" "The team releases nginx:1.28 to rz00a only. rollout start masks the other
placed cells; the template change then reaches rz00a only, while rz10a and
rz20a keep nginx:1.27 (held back)."
show 'cellfedctl --kubeconfig=$APP rollout start deployment/web -n shop --cells=rz00a'
show "${SET_IMAGE/IMAGE/nginx:1.28}"
images_are nginx:1.28 nginx:1.27 nginx:1.27
rollout_done
eventually "web: 1 of 3 released, updated" "1/3 3/3 1/3" fed_status
show 'kubectl get federateddeployments -n shop'
show 'cellfedctl --kubeconfig=$APP rollout status deployment/web -n shop'
show "$MEMBERS_CMD"
say "rz00a is healthy on nginx:1.28: release the next cell, then the rest."
show 'cellfedctl --kubeconfig=$APP rollout next deployment/web -n shop --cells=rz10a'
images_are nginx:1.28 nginx:1.28 nginx:1.27
rollout_done
show 'kubectl get federateddeployments -n shop'
show 'cellfedctl --kubeconfig=$APP rollout finish deployment/web -n shop'
images_are nginx:1.28 nginx:1.28 nginx:1.28
eventually "web: released, ready and updated everywhere" "3/3 3/3 3/3" fed_status
show 'kubectl get federateddeployments -n shop'
show "$MEMBERS_CMD"

step "Disaster recovery: release around a lost cluster" "member-2 (cell rz10a) goes down. The team masks rz10a out and releases
nginx:1.29 to the other cells; when member-2 comes back nothing changes
there until rz10a is added back."
say "member-2's API server stops (an outage in zone z1)."
stop_procs member-2 >/dev/null 2>&1 || true
eventually "cell rz10a not ready" "False" kubectl get cell rz10a -n "$NS" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
show 'kubectl get cells -n shop'
show 'cellfedctl --kubeconfig=$APP rollout start deployment/web -n shop --cells=rz00a,rz20a'
show "${SET_IMAGE/IMAGE/nginx:1.29}"
images_are nginx:1.29 - nginx:1.29
rollout_done
show 'cellfedctl --kubeconfig=$APP rollout status deployment/web -n shop'
say "member-2 comes back."
# shellcheck disable=SC2086 # the arguments hold no spaces
start_proc member-2 "$DEMO/logs/member-2-restarted.log" "$BIN/member-apiserver" ${MEMBER_ARGS[2]}
touch "$DEMO/.restarted"
wait_apiserver member-2 "$DEMO/member-2/admin.kubeconfig" "$DEMO/.started" "$TIMEOUT"
eventually "cell rz10a ready again" "True" kubectl get cell rz10a -n "$NS" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
# The controller has seen the member ready; it must leave rz10a alone.
eventually "rz10a held back at nginx:1.28 after its return" "HeldBack nginx:1.28" bash -c '
	printf "%s %s" "$(kubectl get federateddeployments web -n shop -o "jsonpath={.status.topologies[?(@.name==\"rz10a\")].status}")" \
		"$(kubectl --kubeconfig=$DEMO/member-2/admin.kubeconfig -n shop get deploy web -o "jsonpath={.spec.template.spec.containers[0].image}")"'
show 'kubectl get cells -n shop'
show "$MEMBERS_CMD"
show 'kubectl get federateddeployments -n shop'
say "member-2 is healthy again: add rz10a back."
show 'cellfedctl --kubeconfig=$APP rollout finish deployment/web -n shop'
images_are nginx:1.29 nginx:1.29 nginx:1.29
eventually "web: released, ready and updated everywhere" "3/3 3/3 3/3" fed_status
show "$MEMBERS_CMD"

step "Roll back" "nginx:1.29 misbehaves: rollout undo restores the previous template
(recorded in the object's history) in every placed cell."
show 'cellfedctl --kubeconfig=$APP rollout history deployment/web -n shop'
show 'cellfedctl --kubeconfig=$APP rollout undo deployment/web -n shop'
images_are nginx:1.28 nginx:1.28 nginx:1.28
eventually "web: released, ready and updated everywhere" "3/3 3/3 3/3" fed_status
show 'kubectl get federateddeployments -n shop'
show "$MEMBERS_CMD"

log ""
log "Demo done after $((SECONDS - start))s: every step's expectation held."
if [[ ${DEMO_EXIT:-0} != 0 ]]; then
	exit 0
fi
RUNNING=1
log "Release board: $BOARD_URL (open it in a browser: every object of shop against every cell, live)"
log "Demo running; Ctrl-C to stop and clean up"
watch_procs
