// Command cellfedctl manages a cellfed plane: federated types and cells.
// Installed as kubectl-cellfed on PATH it is the kubectl plugin `kubectl
// cellfed`. The logic is in pkg/cellfedctl.
package main

import (
	"os"

	"github.com/cellfed/cellfed/pkg/cellfedctl"
	_ "github.com/cellfed/cellfed/pkg/version" // a version kubectl parses, also without the Makefile's -ldflags
)

func main() {
	os.Exit(cellfedctl.Main())
}
