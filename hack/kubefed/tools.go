//go:build tools

// Package kubefed pins upstream KubeFed v0.10.0's controller-manager and
// its CLI, which `make kubefed` builds as bin/kubefed-controller-manager
// (a peer controller the e2e tests run against cellfed-apiserver) and
// bin/kubefedctl (join, unjoin, enable, disable, federate against the
// plane). Nothing from KubeFed is copied here; see go.mod.
package kubefed

import (
	_ "sigs.k8s.io/kubefed/cmd/controller-manager"
	_ "sigs.k8s.io/kubefed/cmd/kubefedctl"
)
