// Package v1alpha1 is core.cellfed.io/v1alpha1: Cells (deployment units),
// the tenancy labels and the naming rule for per-cell KubeFedClusters.
//
// +k8s:deepcopy-gen=package
// +groupName=core.cellfed.io
package v1alpha1
