package propagation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cellfed/cellfed/pkg/tenancy"
)

// withPodSecurity gives a Namespace template the Pod Security labels of
// the platform's level for namespace (Env.PodSecurity), in place of any
// the template holds: tenants do not choose it. Other types' templates
// are returned as they are.
func (c *Controller) withPodSecurity(namespace string, template map[string]any) (map[string]any, error) {
	if !c.typ.IsNamespace() || c.env.PodSecurity == nil {
		return template, nil
	}
	level, err := c.env.PodSecurity(namespace)
	if err != nil {
		return nil, fmt.Errorf("the Pod Security level of namespace %s: %w", namespace, err)
	}
	if level == "" {
		return template, nil
	}
	out := map[string]any{}
	for k, v := range template {
		out[k] = v
	}
	obj := &unstructured.Unstructured{Object: out}
	md, _ := out["metadata"].(map[string]any)
	mdCopy := map[string]any{}
	for k, v := range md {
		mdCopy[k] = v
	}
	out["metadata"] = mdCopy
	obj.SetLabels(tenancy.WithPodSecurity(obj.GetLabels(), level))
	return out, nil
}

// keepPlatformLabels puts back on a member Namespace the platform labels
// of its template after overrides ran: an override cannot change them
// (admission refuses such overrides; this guards older objects).
func keepPlatformLabels(template map[string]any, labels map[string]string) {
	tmpl := &unstructured.Unstructured{Object: template}
	own := tmpl.GetLabels()
	hasOwn := false
	for k := range own {
		if tenancy.IsPlatformLabel(k) {
			hasOwn = true
		}
	}
	if !hasOwn {
		return
	}
	for k := range labels {
		if tenancy.IsPlatformLabel(k) {
			delete(labels, k)
		}
	}
	for k, v := range own {
		if tenancy.IsPlatformLabel(k) {
			labels[k] = v
		}
	}
}

// namespaceLabels are the labels of a member namespace the controller
// creates on demand for the objects of namespace.
func (c *Controller) namespaceLabels(namespace string) (map[string]string, error) {
	if c.env.PodSecurity == nil {
		return nil, nil
	}
	level, err := c.env.PodSecurity(namespace)
	if err != nil || level == "" {
		return nil, err
	}
	return tenancy.WithPodSecurity(nil, level), nil
}
