#!/usr/bin/env bash
# Runs the whole suite verbosely and ends with one plain summary line,
# "N passed, N failed" (tests and subtests), so a run that executed no test
# cannot pass for a green one.
#
# Unit packages (everything outside test/) run with the race detector; the
# end-to-end tests and benchmarks under test/ drive separate processes
# (the plane, members, kubectl) and run without it. Arguments are package
# patterns, ./... by default; RACE=0 turns the race detector off.
# E2E_PARALLEL=N runs up to N end-to-end tests at once (go test
# -parallel N; by default twice the number of CPUs: the tests mostly wait
# on the processes they start — a load average of 1–2.5 on 2 CPUs with
# -parallel 2). TEST_TIMEOUT bounds each unit package (20m), E2E_TIMEOUT
# the end-to-end package (45m): it runs in 8–12 min on a quiet 2-CPU
# machine, but took over 20 on a slower one whose every test ran 2–2.3×
# longer, and the timeout is there to catch a hang, not a slow machine.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
[ $# -gt 0 ] || set -- ./...

mapfile -t all < <(go list "$@")
unit=() e2e=()
for p in "${all[@]}"; do
  case "$p" in
    */test/*) e2e+=("$p") ;;
    *) unit+=("$p") ;;
  esac
done

status=0
run() {
  go test -count=1 -v "$@" 2>&1 | tee -a "$log" | grep -v -E '^(=== (RUN|PAUSE|CONT|NAME))'
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
}
race=-race
[ "${RACE:-1}" = 0 ] && race=
if [ ${#unit[@]} -gt 0 ]; then
  echo "== unit packages${race:+ (race detector on)}: ${#unit[@]}"
  start=$SECONDS
  run -timeout "${TEST_TIMEOUT:-20m}" $race "${unit[@]}"
  echo "== unit packages took $((SECONDS - start)) s"
fi
if [ ${#e2e[@]} -gt 0 ]; then
  echo "== end-to-end packages: ${e2e[*]##*/cellfed/}"
  start=$SECONDS
  run -timeout "${E2E_TIMEOUT:-45m}" -parallel "${E2E_PARALLEL:-$((2 * $(nproc)))}" "${e2e[@]}"
  echo "== end-to-end packages took $((SECONDS - start)) s"
fi
# hack/kubefed is its own module (KubeFed's dependencies): its test proves
# the PropagatedVersion vectors the controller is tested against are
# KubeFed's own values.
echo "== hack/kubefed"
(cd hack/kubefed && go test -count=1 -v ./...) 2>&1 | tee -a "$log" | grep -v -E '^(=== (RUN|PAUSE|CONT|NAME))'
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
passed=$(grep -c -E '^\s*--- PASS' "$log")
failed=$(grep -c -E '^\s*--- FAIL' "$log")
skipped=$(grep -c -E '^\s*--- SKIP' "$log")
echo
echo "hack/test.sh took $SECONDS s"
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$status" -eq 0 ] && [ "$passed" -eq 0 ]; then
  echo "no test ran" >&2
  exit 1
fi
exit "$status"
