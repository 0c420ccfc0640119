#!/usr/bin/env bash
# Builds the previous release — the commit hack/upgrade/previous names —
# for the upgrade test (test/e2e/upgrade_test.go): its cellfed-apiserver,
# cellfed-controller, cellfed-agent and cellfedctl, from this repository's
# own history, in their own worktree, into _output/previous/<commit>/bin.
#
# A commit is built once: when _output/previous/<commit>/bin holds every
# binary (and its stamp file), the script prints the directory and exits.
# The worktree (git worktree add --detach, of the checkout this script is
# in) is removed after the build and pruned; the Go build cache keeps a
# rebuild cheap.
#
# Offline first: modules come from the module cache (GOPROXY=off,
# GOFLAGS=-mod=mod). Only when a module is missing there does it retry
# once with the usual GOPROXY, and says so. OFFLINE=1 forbids the retry.
#
# The binaries are stamped as that commit's own Makefile stamped them
# (v1.36.4+cellfed.<commit>: a plane from before versioned releases).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
commit=$(grep -v '^#' hack/upgrade/previous | head -1 | tr -d '[:space:]')
[ -n "$commit" ] || { echo "hack/upgrade/previous names no commit" >&2; exit 1; }
if ! full=$(git rev-parse --verify --quiet "$commit^{commit}"); then
  echo "commit $commit (hack/upgrade/previous) is not in this repository's history:" \
    "a shallow clone? run git fetch --unshallow" >&2
  exit 1
fi
short=${full:0:12}
out=$root/_output/previous/$short
bins=(cellfed-apiserver cellfed-controller cellfed-agent cellfedctl)
stamp=$out/bin/.built
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$full" ]; then
  ok=1
  for b in "${bins[@]}"; do [ -x "$out/bin/$b" ] || ok=0; done
  if [ "$ok" = 1 ]; then
    echo "previous release $short: $out/bin (built before)"
    exit 0
  fi
fi

start=$SECONDS
src=$out/src
mkdir -p "$out"
# A worktree left by an interrupted build is removed first.
if [ -e "$src" ]; then
  git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
fi
git worktree prune
git worktree add --detach "$src" "$full" >/dev/null
cleanup() {
  git -C "$root" worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
  git -C "$root" worktree prune
}
trap cleanup EXIT

k8s=v1.36.4
date=$(git log -1 --format=%cI "$full")
pkg=k8s.io/component-base/version
ldflags="-X $pkg.gitVersion=$k8s+cellfed.$short -X $pkg.gitMajor=1 -X $pkg.gitMinor=36 \
-X $pkg.gitCommit=$short -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
build() {
  (cd "$src" && GOFLAGS=-mod=mod GOTOOLCHAIN=local "$@" go build -ldflags "$ldflags" -o "$out/bin/" \
    ./cmd/cellfed-apiserver ./cmd/cellfed-controller ./cmd/cellfed-agent ./cmd/cellfedctl)
}
rm -rf "$out/bin"
mkdir -p "$out/bin"
if ! build env GOPROXY=off; then
  if [ "${OFFLINE:-0}" = 1 ]; then
    echo "building $short offline failed (OFFLINE=1: no retry through GOPROXY)" >&2
    exit 1
  fi
  echo "building $short from the module cache failed: retrying once through GOPROXY=$(go env GOPROXY)" >&2
  build env
fi
echo "$full" >"$stamp"
echo "previous release $short: $out/bin (built in $((SECONDS - start)) s)"
