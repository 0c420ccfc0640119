// Package propagation is cellfed-controller's sync controller: for one
// federated type it keeps every member cluster's copy of each federated
// object as the placement, template and overrides say, with KubeFed's
// semantics (managed label, adoption, orphaning, retained member fields,
// per-cluster status) and without KubeFed's failure modes: a cluster that
// is down blocks nothing else, deletion reaches every cluster an object
// was ever propagated to, and an unchanged object costs no write.
package propagation

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	"github.com/cellfed/cellfed/pkg/annotationrules"
	fedtypes "github.com/cellfed/cellfed/pkg/apis/types"
	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1b2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/placement/division"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// KubeFed's names, kept so either controller can take over from the other.
const (
	Finalizer              = "kubefed.io/sync-controller"
	OrphanAnnotation       = "kubefed.io/orphan"
	DeleteOptionAnnotation = "kubefed.io/deleteoption"
	PropagationCondition   = "Propagation"
)

// Type is one federated type, from its FederatedTypeConfig.
type Type struct {
	// Name is the FederatedTypeConfig's name, e.g. deployments.apps.
	Name       string
	Target     schema.GroupVersionResource
	TargetKind string
	// Federated is the federated resource in its v1beta1 version,
	// KubeFed's: the version of the records' owner references, events
	// and KubeFed's view of an object.
	Federated schema.GroupVersionResource
	// Stored is the version the controller reads and writes: the
	// plane's storage version, v1beta2, for types.kubefed.io types
	// (whose v1beta1 is served through the conversion webhook);
	// Federated for a federated type of another group.
	Stored        schema.GroupVersionResource
	FederatedKind string
	Namespaced    bool
	// PropagatingAnnotations are the FederatedTypeConfig's
	// spec.propagatingAnnotations patterns, comma-joined; AnnotationRules
	// says the field is set (an empty list propagates no annotation).
	PropagatingAnnotations string
	AnnotationRules        bool
	// ReplicasPath is where the target type keeps its replicas (the
	// FederatedTypeConfig's spec.replicasPath); "" is /spec/replicas.
	ReplicasPath string
}

// replicasPath is the type's replicas path, defaulted.
func (t *Type) replicasPath() string {
	if t.ReplicasPath == "" {
		return division.DefaultReplicasPath
	}
	return t.ReplicasPath
}

// annotationPatterns are the type's annotation propagation rules; ok is
// false when it has none (every template annotation is propagated and
// none is ever removed, as in KubeFed).
func (t *Type) annotationPatterns() (patterns []string, ok bool) {
	if !t.AnnotationRules {
		return nil, false
	}
	if t.PropagatingAnnotations == "" {
		return []string{}, true
	}
	return strings.Split(t.PropagatingAnnotations, ","), true
}

// IsNamespace reports whether the target is the Namespace itself: a
// FederatedNamespace lives in the namespace it federates.
func (t *Type) IsNamespace() bool { return t.Target.Group == "" && t.Target.Resource == "namespaces" }

// TypeFor reads a FederatedTypeConfig. ok is false when propagation is
// disabled.
func TypeFor(u *unstructured.Unstructured) (t *Type, ok bool, err error) {
	var ftc fedv1b1.FederatedTypeConfig
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ftc); err != nil {
		return nil, false, fmt.Errorf("decoding FederatedTypeConfig %s: %w", u.GetName(), err)
	}
	if ftc.Spec.Propagation != fedv1b1.PropagationEnabled {
		return nil, false, nil
	}
	tt, ft := ftc.Spec.TargetType, ftc.Spec.FederatedType
	if tt.PluralName == "" || tt.Kind == "" || tt.Version == "" || ft.PluralName == "" || ft.Group == "" {
		return nil, false, fmt.Errorf("FederatedTypeConfig %s: targetType and federatedType need kind, version and pluralName", u.GetName())
	}
	patterns, rules, err := unstructured.NestedStringSlice(u.Object, "spec", annotationrules.Field)
	if err != nil {
		return nil, false, fmt.Errorf("FederatedTypeConfig %s: spec.%s: %w", u.GetName(), annotationrules.Field, err)
	}
	replicasPath, _, err := unstructured.NestedString(u.Object, "spec", division.ReplicasPathField)
	if err != nil {
		return nil, false, fmt.Errorf("FederatedTypeConfig %s: spec.%s: %w", u.GetName(), division.ReplicasPathField, err)
	}
	// A replicas path that is not valid does not stop the type: its
	// objects without a division propagate as ever, and divide refuses
	// each divided one with a status message naming the path.
	return &Type{
		ReplicasPath:           replicasPath,
		PropagatingAnnotations: strings.Join(patterns, ","),
		AnnotationRules:        rules,
		Name:                   u.GetName(),
		Target:                 schema.GroupVersionResource{Group: tt.Group, Version: tt.Version, Resource: tt.PluralName},
		TargetKind:             tt.Kind,
		Federated:              schema.GroupVersionResource{Group: ft.Group, Version: typesv1b1.Version, Resource: ft.PluralName},
		Stored:                 storedVersion(ft.Group, ft.PluralName),
		FederatedKind:          ft.Kind,
		Namespaced:             tt.Scope == "Namespaced" || (tt.Group == "" && tt.PluralName == "namespaces"),
	}, true, nil
}

// storedVersion is the resource the controller reads and writes a
// federated type in: v1beta2 for the plane's own group, which stores it
// so, and KubeFed's v1beta1 otherwise.
func storedVersion(group, plural string) schema.GroupVersionResource {
	if group == fedtypes.GroupName {
		return schema.GroupVersionResource{Group: group, Version: typesv1b2.Version, Resource: plural}
	}
	return schema.GroupVersionResource{Group: group, Version: typesv1b1.Version, Resource: plural}
}

// Policy is how member objects of one target type are written: the
// fields a member sets on its own and that a write must keep. Later rules
// per type (annotation propagation) belong here too.
type Policy struct {
	// RetainSpec are spec fields the member fills in (kept when the
	// template leaves them unset).
	RetainSpec []string
	// RetainNodePorts keeps spec.ports[].nodePort the member allocated.
	RetainNodePorts bool
	// RetainTop are top-level fields the member fills in.
	RetainTop []string
	// Ready is the member object's readiness; nil for kinds that are
	// ready once they are there.
	Ready Readiness
	// ReadySpec are the spec fields Ready reads: the member cache keeps
	// them, and no other spec field.
	ReadySpec []string
}

// CachedSpec are the spec fields the member cache keeps: those readiness
// reads and those a write keeps from the member (so an update can be
// built from the cached object), replicas always (retainReplicas).
func (p Policy) CachedSpec() []string {
	fields := append([]string{"replicas"}, p.ReadySpec...)
	fields = append(fields, p.RetainSpec...)
	if p.RetainNodePorts {
		fields = append(fields, "ports")
	}
	slices.Sort(fields)
	return slices.Compact(fields)
}

// UpdatesFromCache reports whether an update can be built from a cached
// (lean) member object: everything a write keeps from the member is in
// the cache. Types keeping top-level fields read the member first.
func (p Policy) UpdatesFromCache() bool { return len(p.RetainTop) == 0 }

// PolicyFor is the policy of a target type. Every type keeps the
// member's resourceVersion, finalizers, owner references and the labels
// and annotations the member added; the rest is per kind, as KubeFed
// retains it.
func PolicyFor(t *Type) Policy {
	switch {
	case t.Target.Group == "" && t.TargetKind == "Service":
		return Policy{RetainSpec: []string{"clusterIP", "clusterIPs", "healthCheckNodePort", "ipFamilies", "ipFamilyPolicy"}, RetainNodePorts: true}
	case t.Target.Group == "" && t.TargetKind == "ServiceAccount":
		return Policy{RetainTop: []string{"secrets"}}
	}
	ready, spec := readinessFor(t.Target.Group, t.TargetKind)
	return Policy{Ready: ready, ReadySpec: spec}
}

// Options tune one type's controller.
type Options struct {
	// Workers reconcile objects of the type in parallel.
	Workers int
	// AdoptExisting adopts member objects that exist without the managed
	// label; otherwise they are reported AlreadyExists and left alone.
	AdoptExisting bool
	// ClusterTimeout bounds the work on one cluster for one object.
	ClusterTimeout time.Duration
	// WriteWait bounds how long a reconcile waits for its members'
	// writes. A member that has not answered by then (a link gone
	// silent) is reported WriteInProgress and its write goes on in the
	// background, up to ClusterTimeout; the status shows the other
	// members' progress meanwhile, and the object's worker moves on. 0
	// waits for every write.
	WriteWait time.Duration
	// RetryMax caps the back-off of an object that keeps failing.
	RetryMax time.Duration
	// StatusInterval is the least time between two status writes of one
	// object: the first change after a quiet spell is written at once,
	// later ones together at the end of the interval, so member status
	// churning in many clusters costs the plane at most one write per
	// object per interval.
	StatusInterval time.Duration
	// PodSecurityLevel is the Pod Security level member namespaces
	// enforce unless a platform admin labels their plane namespace with
	// another (tenancy.LabelPodSecurity).
	PodSecurityLevel string
	// Tracer traces reconciles, member writes and status writes
	// (tracing.go); nil traces nothing.
	Tracer trace.Tracer
}

// DefaultOptions are the controller's defaults.
func DefaultOptions() Options {
	return Options{Workers: 8, AdoptExisting: true, ClusterTimeout: 30 * time.Second, WriteWait: 2 * time.Second, RetryMax: 30 * time.Second, StatusInterval: time.Second,
		PodSecurityLevel: tenancy.DefaultPodSecurityLevel}
}
