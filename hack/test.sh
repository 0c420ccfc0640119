#!/usr/bin/env bash
# Runs the whole suite verbosely and ends with one plain summary line,
# "N passed, N failed" (tests and subtests), so a run that executed no test
# cannot pass for a green one.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test -count=1 -timeout "${TEST_TIMEOUT:-20m}" -v "$@" 2>&1 | tee "$log" | grep -v -E '^(=== (RUN|PAUSE|CONT|NAME))'
status=${PIPESTATUS[0]}
# hack/kubefed is its own module (KubeFed's dependencies): its test proves
# the PropagatedVersion vectors the controller is tested against are
# KubeFed's own values.
(cd hack/kubefed && go test -count=1 -v ./...) 2>&1 | tee -a "$log" | grep -v -E '^(=== (RUN|PAUSE|CONT|NAME))'
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
passed=$(grep -c -E '^\s*--- PASS' "$log")
failed=$(grep -c -E '^\s*--- FAIL' "$log")
skipped=$(grep -c -E '^\s*--- SKIP' "$log")
echo
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$status" -eq 0 ] && [ "$passed" -eq 0 ]; then
  echo "no test ran" >&2
  exit 1
fi
exit "$status"
