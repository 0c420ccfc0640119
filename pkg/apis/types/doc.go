// Package types names the API group of the federated types.
package types

// GroupName is the API group of every federated type (FederatedDeployment,
// FederatedService, ...), as in KubeFed.
const GroupName = "types.kubefed.io"
