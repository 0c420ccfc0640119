#!/usr/bin/env bash
# Generates manifests/crds/ from Go types with controller-gen: KubeFed's core
# API from the sigs.k8s.io/kubefed module (markers and all, never a copy of
# its YAML) and cellfed's own core.cellfed.io and policy.cellfed.io APIs
# from pkg/apis.
#
#   hack/manifests.sh            regenerate manifests/crds/
#   hack/manifests.sh --verify   regenerate into a temp dir, diff, fail on drift
#
# controller-gen is built from the tools module hack/tools (its version is
# pinned there, away from the main module's dependencies), and is run twice,
# each time in the module whose go.mod owns the packages it loads:
#   - in hack/tools for sigs.k8s.io/kubefed/pkg/apis/core/{v1beta1,v1alpha1}
#     and scheduling/v1alpha1 (ReplicaSchedulingPreference)
#     (hack/tools requires kubefed; tools.go keeps it and its go.sum entries);
#   - in the main module for ./pkg/apis/core/v1alpha1, so our types are read
#     from the work tree with the main module's own dependencies, and a change
#     to the main go.mod never needs a matching change in hack/tools.
#
# It also generates manifests/federated/: the two shapes of a federated type
# (./pkg/apis/types/v1beta1 and v1beta2) as one CRD of a generic kind
# FederatedObject. It is never installed: pkg/federatedtypes copies its
# descriptions (the Go types' doc comments) into every federated CRD it
# builds, so `kubectl explain` describes their fields.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GOWORK=off

# The CRDs cellfed-apiserver installs; anything else controller-gen emits
# from the same packages (KubeFed's FederatedServiceStatus) is dropped.
crds=(
	core.cellfed.io_cells.yaml
	core.cellfed.io_clusterregistrations.yaml
	core.cellfed.io_registrationpolicies.yaml
	core.cellfed.io_templaterevisions.yaml
	core.kubefed.io_clusterpropagatedversions.yaml
	core.kubefed.io_federatedtypeconfigs.yaml
	core.kubefed.io_kubefedclusters.yaml
	core.kubefed.io_kubefedconfigs.yaml
	core.kubefed.io_propagatedversions.yaml
	policy.cellfed.io_clusterpropagationpolicies.yaml
	policy.cellfed.io_propagationpolicies.yaml
	scheduling.kubefed.io_replicaschedulingpreferences.yaml
)

verify=false
case "${1:-}" in
"") ;;
--verify) verify=true ;;
*)
	echo "usage: $0 [--verify]" >&2
	exit 2
	;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

controller_gen=$tmp/controller-gen
go -C "$root/hack/tools" build -o "$controller_gen" sigs.k8s.io/controller-tools/cmd/controller-gen

gen=$tmp/gen
(cd "$root/hack/tools" && "$controller_gen" crd \
	paths=sigs.k8s.io/kubefed/pkg/apis/core/v1beta1 \
	paths=sigs.k8s.io/kubefed/pkg/apis/core/v1alpha1 \
	paths=sigs.k8s.io/kubefed/pkg/apis/scheduling/v1alpha1 \
	output:crd:dir="$gen")
(cd "$root" && "$controller_gen" crd \
	paths=./pkg/apis/core/v1alpha1 \
	paths=./pkg/apis/policy/v1alpha1 \
	output:crd:dir="$gen")
fedgen=$tmp/fedgen
(cd "$root" && "$controller_gen" crd \
	paths=./pkg/apis/types/v1beta1 \
	paths=./pkg/apis/types/v1beta2 \
	output:crd:dir="$fedgen")
federated=types.kubefed.io_federatedobjects.yaml
if [ ! -f "$fedgen/$federated" ]; then
	echo "controller-gen did not emit $federated" >&2
	exit 1
fi

out=$tmp/crds
mkdir "$out"
for f in "${crds[@]}"; do
	if [ ! -f "$gen/$f" ]; then
		echo "controller-gen did not emit $f" >&2
		exit 1
	fi
	cp "$gen/$f" "$out/$f"
done
fedout=$tmp/federated
mkdir "$fedout"
cp "$fedgen/$federated" "$fedout/$federated"

dest=$root/manifests/crds
fedDest=$root/manifests/federated
if $verify; then
	if ! diff -r -u "$dest" "$out" || ! diff -r -u "$fedDest" "$fedout"; then
		echo "manifests/crds or manifests/federated is out of date: run 'make manifests'" >&2
		exit 1
	fi
	echo "manifests/crds and manifests/federated are up to date"
	exit 0
fi

mkdir -p "$dest" "$fedDest"
rm -f "$dest"/*.yaml "$fedDest"/*.yaml
cp "$out"/*.yaml "$dest"/
cp "$fedout"/*.yaml "$fedDest"/
echo "wrote ${#crds[@]} CRDs to manifests/crds and the federated shapes to manifests/federated"
