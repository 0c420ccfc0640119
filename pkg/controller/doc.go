// Package controller will hold cellfed-controller: the KubeFed-compatible
// sync controller that propagates federated objects to member clusters.
package controller
