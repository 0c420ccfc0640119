// Package v1alpha1 is policy.cellfed.io/v1alpha1: PropagationPolicies
// (namespaced, for app teams) and ClusterPropagationPolicies (for
// platform admins and cluster-scoped kinds) that federate native objects
// (a Deployment, a ConfigMap, a ClusterRole) served by the plane: a policy
// selects them by apiVersion/kind and name or labels and says where they
// go, the way a v1beta2 federated object does; cellfed turns each
// selected object into a federated object of its kind.
//
// +k8s:deepcopy-gen=package
// +groupName=policy.cellfed.io
package v1alpha1
