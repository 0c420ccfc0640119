//go:build tools

// Package kubefed pins upstream KubeFed v0.10.0's controller-manager, which
// `make kubefed` builds as bin/kubefed-controller-manager: a peer controller
// the e2e tests run against cellfed-apiserver. Nothing from KubeFed is
// copied here; see go.mod.
package kubefed

import _ "sigs.k8s.io/kubefed/cmd/controller-manager"
