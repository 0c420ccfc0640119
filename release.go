// Package cellfed names the release this tree builds: the VERSION file
// beside this file, embedded so that a binary built without the
// Makefile (go build, go install) reports it too. pkg/version puts it
// into the version every binary reports.
package cellfed

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var release string

// Release is the content of VERSION: v<major>.<minor>.<patch>, with an
// optional pre-release without dots (v0.2.0-rc1).
func Release() string { return strings.TrimSpace(release) }
