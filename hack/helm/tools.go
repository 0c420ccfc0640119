//go:build tools

// Package tools pins Helm's command for `go build` in this module.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
