package federatedtypes

// Where the plane publishes how to reach its conversion webhook: a
// ConfigMap in the federation namespace, read by `cellfedctl enable` to
// point new federated CRDs at the plane.
const (
	// WebhookConfigMap is the name of the ConfigMap.
	WebhookConfigMap = "cellfed-webhook"
	// WebhookConfigMapURL is the key of the webhook's URL.
	WebhookConfigMapURL = "url"
	// WebhookConfigMapCA is the key of the PEM CA bundle that verifies it.
	WebhookConfigMapCA = "ca.crt"
)
