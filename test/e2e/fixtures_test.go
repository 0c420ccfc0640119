// Fixtures the e2e tests share: the resources they read (each declared
// once here, or in pkg/apis for cellfed's and KubeFed's own), and the
// objects they apply.

package e2e

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	fedtypes "github.com/cellfed/cellfed/pkg/apis/types"
	"github.com/cellfed/cellfed/test/framework"
)

// webDeployment is a v1beta2 FederatedDeployment shop/web placed on cells
// rz00a and rz10a; tests append more spec fields.
var webDeployment = webDeploymentOn("rz00a", "rz10a")

// webDeploymentOn is the FederatedDeployment shop/web (2 replicas of
// nginx:1.27) placed on the cells named.
func webDeploymentOn(cells ...string) string {
	tops := make([]string, len(cells))
	for i, c := range cells {
		tops[i] = "{name: " + c + "}"
	}
	return `
apiVersion: types.kubefed.io/v1beta2
kind: FederatedDeployment
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.27"}]}
  placement:
    topologies: [` + strings.Join(tops, ", ") + `]
`
}

const (
	fdV1beta1 = "federateddeployments.v1beta1.types.kubefed.io"
	fdV1beta2 = "federateddeployments.v1beta2.types.kubefed.io"
)

// deployment is a v1beta2 FederatedDeployment on cells (2 replicas of
// image); extra is appended to its spec.
func deployment(ns, name, image string, cells []string, extra string) string {
	return `apiVersion: types.kubefed.io/v1beta2
kind: FederatedDeployment
metadata: {name: ` + name + `, namespace: ` + ns + `}
spec:
  placement: ` + framework.CellPlacement(cells...) + `
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      replicas: 2
      selector: {matchLabels: {app: ` + name + `}}
      template:
        metadata: {labels: {app: ` + name + `}}
        spec: {containers: [{name: app, image: "` + image + `"}]}
` + extra
}

// configMap is a v1beta2 FederatedConfigMap on cells with data; metaExtra
// is appended to its metadata.
func configMap(ns, name, data string, cells []string, metaExtra string) string {
	return `apiVersion: types.kubefed.io/v1beta2
kind: FederatedConfigMap
metadata:
  name: ` + name + `
  namespace: ` + ns + `
` + metaExtra + `
spec:
  placement: ` + framework.CellPlacement(cells...) + `
  template:
    data: {` + data + `}
`
}

// ctlMemberCRD is the example type widgets.example.com (resource
// widgets), installed in members to enable it from there.
const ctlMemberCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          description: A widget.
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              properties:
                size: {type: integer, minimum: 1, description: How big.}
                color: {type: string}
            status:
              type: object
              properties:
                ready: {type: boolean}
`

// The built-in (and example) resources the tests read in members and the
// plane. cellfed's own resources are cellv1alpha1.CellsResource and its
// siblings; KubeFed's are kubefed.KubeFedClustersResource and its siblings.
var (
	configmaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	services    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	jobs        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	crds        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	// widgets are the example type of ctlMemberCRD.
	widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// fedResource is the resource of a federated type (plural
// "federatedconfigmaps", ...) in version "v1beta1" (KubeFed's) or
// "v1beta2" (cellfed's).
func fedResource(plural, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: fedtypes.GroupName, Version: version, Resource: plural}
}

// The federated resources the tests read.
var (
	fedCMV1          = fedResource("federatedconfigmaps", "v1beta1")
	fedCMV2          = fedResource("federatedconfigmaps", "v1beta2")
	fedDeployV1      = fedResource("federateddeployments", "v1beta1")
	fedDeployV2      = fedResource("federateddeployments", "v1beta2")
	fedSecretV2      = fedResource("federatedsecrets", "v1beta2")
	fedServiceV2     = fedResource("federatedservices", "v1beta2")
	fedJobV2         = fedResource("federatedjobs", "v1beta2")
	fedWidgetV1      = fedResource("federatedwidgets", "v1beta1")
	fedWidgetV2      = fedResource("federatedwidgets", "v1beta2")
	fedClusterRoleV1 = fedResource("federatedclusterroles", "v1beta1")
)
