//go:build tools

// Package tools pins, in this module's go.mod and go.sum, KubeFed's core API
// packages: hack/manifests.sh has controller-gen (the tool directive in
// go.mod) generate their CRDs from this module, so the types come from the
// sigs.k8s.io/kubefed version required here, not from a copy.
package tools

import (
	_ "sigs.k8s.io/kubefed/pkg/apis/core/v1alpha1"
	_ "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"
	_ "sigs.k8s.io/kubefed/pkg/apis/scheduling/v1alpha1"
)
