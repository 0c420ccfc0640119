package federatedtypes

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	"github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
)

// DefaultNamespace is where KubeFed keeps FederatedTypeConfigs and
// KubeFedClusters.
const DefaultNamespace = "kube-federation-system"

// DefaultTypes are enabled by the plane on first start.
var DefaultTypes = []string{
	"namespaces", "configmaps", "secrets", "services", "serviceaccounts",
	"deployments.apps", "statefulsets.apps", "daemonsets.apps", "jobs.batch",
	"ingresses.networking.k8s.io",
}

// TypeConfig is the FederatedTypeConfig that enables propagation of t. Its
// name is t.Resource(), as KubeFed requires. The federated type is named
// in its community version, v1beta1, the version KubeFed controllers read.
func TypeConfig(t Target, namespace string) *fedv1beta1.FederatedTypeConfig {
	scope := func(namespaced bool) apiextensionsv1.ResourceScope {
		if namespaced {
			return apiextensionsv1.NamespaceScoped
		}
		return apiextensionsv1.ClusterScoped
	}
	return &fedv1beta1.FederatedTypeConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: fedv1beta1.SchemeGroupVersion.String(), Kind: "FederatedTypeConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: t.Resource(), Namespace: namespace},
		Spec: fedv1beta1.FederatedTypeConfigSpec{
			TargetType: fedv1beta1.APIResource{
				Group: t.Group, Version: t.Version, Kind: t.Kind, PluralName: t.Plural,
				Scope: scope(t.Namespaced),
			},
			Propagation: fedv1beta1.PropagationEnabled,
			FederatedType: fedv1beta1.APIResource{
				Group: types.GroupName, Version: typesv1beta1.Version, Kind: t.FederatedKind(), PluralName: t.FederatedPlural(),
				Scope: scope(t.FederatedNamespaced()),
			},
		},
	}
}
