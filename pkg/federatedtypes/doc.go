// Package federatedtypes builds what enabling a federated type creates: the
// FederatedTypeConfig (KubeFed's API) and the federated CRD in
// types.kubefed.io with two versions of the same shape around the target's
// template, v1beta1 (KubeFed's community shape) and v1beta2 (the
// multi-topology shape, the storage version), converted by cellfed's
// conversion webhook. The template schema comes from the OpenAPI of
// Kubernetes' built-in types, or from a member cluster's CRD.
package federatedtypes
