// Package apis holds cellfed's API contract: the core.cellfed.io types
// (Cell, the tenancy labels and the per-cell cluster naming rule) and the
// two shapes of the federated types in types.kubefed.io (v1beta1, KubeFed's
// community shape, and v1beta2, the multi-topology shape). These packages
// import apimachinery only.
package apis
