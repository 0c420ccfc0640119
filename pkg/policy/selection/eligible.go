package selection

// systemNamespaces hold the plane's own objects; no policy places them.
var systemNamespaces = map[string]bool{
	"kube-system": true, "kube-public": true, "kube-node-lease": true, "kube-federation-system": true,
}

// Ineligible says why no policy may place o ("" when one may): objects
// every member namespace already has of its own (the CA bundle
// kube-root-ca.crt, the default ServiceAccount, service-account token
// Secrets), objects another controller of the plane made (a controller
// owner reference), and objects of the system namespaces. A policy that
// selects them is not told: they are not candidates at all.
func Ineligible(o Object, secretType string, controlled bool) string {
	switch {
	case systemNamespaces[o.Namespace]:
		return "the plane's own namespace " + o.Namespace
	case o.APIVersion == "v1" && o.Kind == "ConfigMap" && o.Name == "kube-root-ca.crt":
		return "every namespace has its own CA bundle"
	case o.APIVersion == "v1" && o.Kind == "ServiceAccount" && o.Name == "default":
		return "every namespace has its own default ServiceAccount"
	case o.APIVersion == "v1" && o.Kind == "Secret" && secretType == "kubernetes.io/service-account-token":
		return "service account tokens are each cluster's own"
	case controlled:
		return "made by a controller of the plane (it has a controller owner reference)"
	}
	return ""
}
