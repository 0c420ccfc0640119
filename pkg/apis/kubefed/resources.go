// Package kubefed names the KubeFed API resources (core.kubefed.io,
// scheduling.kubefed.io) that cellfed serves and reads, declared once for
// every client in the tree.
// The types themselves are KubeFed's (sigs.k8s.io/kubefed/pkg/apis).
package kubefed

import "k8s.io/apimachinery/pkg/runtime/schema"

// GroupName is KubeFed's core API group.
const GroupName = "core.kubefed.io"

// SchedulingGroupName is KubeFed's scheduling API group
// (ReplicaSchedulingPreference).
const SchedulingGroupName = "scheduling.kubefed.io"

// The KubeFed resources, at the versions KubeFed serves them.
var (
	KubeFedClustersResource              = schema.GroupVersionResource{Group: GroupName, Version: "v1beta1", Resource: "kubefedclusters"}
	KubeFedConfigsResource               = schema.GroupVersionResource{Group: GroupName, Version: "v1beta1", Resource: "kubefedconfigs"}
	FederatedTypeConfigsResource         = schema.GroupVersionResource{Group: GroupName, Version: "v1beta1", Resource: "federatedtypeconfigs"}
	PropagatedVersionsResource           = schema.GroupVersionResource{Group: GroupName, Version: "v1alpha1", Resource: "propagatedversions"}
	ClusterPropagatedVersionsResource    = schema.GroupVersionResource{Group: GroupName, Version: "v1alpha1", Resource: "clusterpropagatedversions"}
	ReplicaSchedulingPreferencesResource = schema.GroupVersionResource{Group: SchedulingGroupName, Version: "v1alpha1", Resource: "replicaschedulingpreferences"}
)
