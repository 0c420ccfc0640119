// Package dependencies finds what a workload's pod template needs in its
// namespace: the ConfigMaps, Secrets, ServiceAccount and
// PersistentVolumeClaims it references, which a propagation policy places
// where the workload goes. It is pure: it reads the object it is given
// and nothing else.
package dependencies

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kinds of dependencies (all in the core group, version v1).
const (
	ConfigMap             = "ConfigMap"
	Secret                = "Secret"
	ServiceAccount        = "ServiceAccount"
	PersistentVolumeClaim = "PersistentVolumeClaim"
)

// Dependency is one object of the workload's namespace its pods
// reference.
type Dependency struct {
	// Kind is ConfigMap, Secret, ServiceAccount or PersistentVolumeClaim.
	Kind string
	Name string
	// Optional is true when every reference to it is marked optional
	// (the pods start without it).
	Optional bool
}

func (d Dependency) String() string { return d.Kind + "/" + d.Name }

// podSpecPaths are where each workload kind keeps its pod spec.
var podSpecPaths = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}:  {"spec", "template", "spec"},
	{Group: "apps", Kind: "StatefulSet"}: {"spec", "template", "spec"},
	{Group: "apps", Kind: "DaemonSet"}:   {"spec", "template", "spec"},
	{Group: "apps", Kind: "ReplicaSet"}:  {"spec", "template", "spec"},
	{Group: "batch", Kind: "Job"}:        {"spec", "template", "spec"},
	{Group: "batch", Kind: "CronJob"}:    {"spec", "jobTemplate", "spec", "template", "spec"},
	{Group: "", Kind: "Pod"}:             {"spec"},
}

// PodSpecPath returns where objects of gk keep their pod spec, and false
// for a kind that has none.
func PodSpecPath(gk schema.GroupKind) ([]string, bool) {
	p, ok := podSpecPaths[gk]
	return p, ok
}

// Discover lists the dependencies of obj's pod template, sorted by kind
// and name, each once. A kind without a pod template has none. It looks
// at volumes (configMap, secret, projected sources, persistentVolumeClaim,
// the CSI node-publish secret), the env and envFrom of every container,
// init container and ephemeral container, imagePullSecrets, and the
// service account unless it is "default" (which every namespace has).
// A StatefulSet's volumeClaimTemplates are not dependencies: the
// StatefulSet makes those claims in each member itself.
func Discover(obj *unstructured.Unstructured) ([]Dependency, error) {
	path, ok := PodSpecPath(obj.GroupVersionKind().GroupKind())
	if !ok {
		return nil, nil
	}
	raw, found, err := unstructured.NestedMap(obj.Object, path...)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the pod spec: %w", obj.GetKind(), obj.GetName(), err)
	}
	if !found {
		return nil, nil
	}
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return nil, fmt.Errorf("%s %s: decoding the pod spec: %w", obj.GetKind(), obj.GetName(), err)
	}
	return FromPodSpec(&spec), nil
}

// FromPodSpec lists the dependencies of a pod spec; see Discover.
func FromPodSpec(spec *corev1.PodSpec) []Dependency {
	c := collector{}
	if sa := spec.ServiceAccountName; sa != "" && sa != "default" {
		c.add(ServiceAccount, sa, false)
	} else if sa := spec.DeprecatedServiceAccount; sa != "" && sa != "default" && spec.ServiceAccountName == "" {
		c.add(ServiceAccount, sa, false)
	}
	for _, s := range spec.ImagePullSecrets {
		c.add(Secret, s.Name, false)
	}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			c.add(ConfigMap, v.ConfigMap.Name, isTrue(v.ConfigMap.Optional))
		case v.Secret != nil:
			c.add(Secret, v.Secret.SecretName, isTrue(v.Secret.Optional))
		case v.PersistentVolumeClaim != nil:
			c.add(PersistentVolumeClaim, v.PersistentVolumeClaim.ClaimName, false)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					c.add(ConfigMap, src.ConfigMap.Name, isTrue(src.ConfigMap.Optional))
				}
				if src.Secret != nil {
					c.add(Secret, src.Secret.Name, isTrue(src.Secret.Optional))
				}
			}
		case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			c.add(Secret, v.CSI.NodePublishSecretRef.Name, false)
		}
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, ec := range spec.EphemeralContainers {
		containers = append(containers, corev1.Container{Env: ec.Env, EnvFrom: ec.EnvFrom})
	}
	for _, ctr := range containers {
		for _, e := range ctr.EnvFrom {
			if e.ConfigMapRef != nil {
				c.add(ConfigMap, e.ConfigMapRef.Name, isTrue(e.ConfigMapRef.Optional))
			}
			if e.SecretRef != nil {
				c.add(Secret, e.SecretRef.Name, isTrue(e.SecretRef.Optional))
			}
		}
		for _, e := range ctr.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				c.add(ConfigMap, r.Name, isTrue(r.Optional))
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				c.add(Secret, r.Name, isTrue(r.Optional))
			}
		}
	}
	return c.list()
}

func isTrue(b *bool) bool { return b != nil && *b }

type collector map[Dependency]bool // key with Optional false -> optional everywhere so far

func (c collector) add(kind, name string, optional bool) {
	if name == "" {
		return
	}
	k := Dependency{Kind: kind, Name: name}
	if prev, seen := c[k]; seen {
		c[k] = prev && optional
		return
	}
	c[k] = optional
}

func (c collector) list() []Dependency {
	out := make([]Dependency, 0, len(c))
	for k, optional := range c {
		k.Optional = optional
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}
