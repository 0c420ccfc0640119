package federatedtypes

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/apis/types"
	"github.com/cellfed/cellfed/pkg/version"
)

// AnnotationSchemaRelease records, on every CRD the plane owns, the cellfed
// release whose schema the CRD holds. A release never writes over a CRD
// that a newer release wrote: during a rolling upgrade the older replica
// leaves the newer schema in place, so fields the newer release added
// are not pruned.
const AnnotationSchemaRelease = "cellfed.io/schema-release"

// CRDAction is what PlanCRD decided.
type CRDAction string

const (
	// CRDCreate: there is no CRD; create it.
	CRDCreate CRDAction = "create"
	// CRDUpdate: the CRD holds an older (or this release's, differing)
	// schema; update it.
	CRDUpdate CRDAction = "update"
	// CRDUpToDate: the CRD holds this release's schema already.
	CRDUpToDate CRDAction = "up-to-date"
	// CRDNewer: a newer release wrote the CRD; leave it alone.
	CRDNewer CRDAction = "newer"
)

// PlanCRD decides what release writes for the CRD it wants, given the
// stored one (nil if there is none), and returns the object to write
// (nil for CRDUpToDate and CRDNewer).
//
// The release owns the CRD's spec — except shortNames and categories
// when it sets none — and the labels and annotations it sets; it stamps
// AnnotationSchemaRelease. Everything else an admin set (other labels and
// annotations, shortNames, categories) is kept. A stored CRD stamped by a
// newer release is left alone; one with no stamp, or one that cannot be
// parsed, was written before releases stamped CRDs and is older. Two
// replicas of one release want the same object, so the second finds it
// up to date: they never fight.
func PlanCRD(stored, wanted *apiextensionsv1.CustomResourceDefinition, release *utilversion.Version) (*apiextensionsv1.CustomResourceDefinition, CRDAction) {
	stamp := "v" + release.String()
	if stored == nil {
		out := wanted.DeepCopy()
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[AnnotationSchemaRelease] = stamp
		return out, CRDCreate
	}
	if s, err := utilversion.ParseSemantic(stored.Annotations[AnnotationSchemaRelease]); err == nil && s.GreaterThan(release) {
		return nil, CRDNewer
	}
	out := stored.DeepCopy()
	out.Spec = *wanted.Spec.DeepCopy()
	defaultSpec(&out.Spec)
	if len(out.Spec.Names.ShortNames) == 0 {
		out.Spec.Names.ShortNames = stored.Spec.Names.ShortNames
	}
	if len(out.Spec.Names.Categories) == 0 {
		out.Spec.Names.Categories = stored.Spec.Names.Categories
	}
	out.Labels = merge(out.Labels, wanted.Labels)
	out.Annotations = merge(out.Annotations, wanted.Annotations)
	out.Annotations[AnnotationSchemaRelease] = stamp
	if equality.Semantic.DeepEqual(out.Spec, stored.Spec) && equality.Semantic.DeepEqual(out.Labels, stored.Labels) &&
		equality.Semantic.DeepEqual(out.Annotations, stored.Annotations) {
		return nil, CRDUpToDate
	}
	return out, CRDUpdate
}

// defaultSpec fills in what the API server defaults in a stored CRD's
// spec, so that a wanted spec compares equal to the stored one it became.
func defaultSpec(s *apiextensionsv1.CustomResourceDefinitionSpec) {
	if s.Conversion == nil {
		s.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	}
	if s.Names.Singular == "" {
		s.Names.Singular = strings.ToLower(s.Names.Kind)
	}
	if s.Names.ListKind == "" && s.Names.Kind != "" {
		s.Names.ListKind = s.Names.Kind + "List"
	}
}

func merge(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}

// TemplateOf is the template schema a federated CRD was built with: the
// stored version's spec.template, without the description CRD gives it
// (CRD(t, TemplateOf(CRD(t, x))) is CRD(t, x)). ok
// is false when the CRD is not in the plane's shape (no v1beta2, as
// `kubefedctl enable` writes it).
func TemplateOf(crd *apiextensionsv1.CustomResourceDefinition) (tmpl *apiextensionsv1.JSONSchemaProps, ok bool) {
	for _, v := range crd.Spec.Versions {
		if v.Name != StorageVersion {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, true
		}
		spec, found := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if !found {
			return nil, true
		}
		t, found := spec.Properties["template"]
		if !found {
			return nil, true
		}
		tmpl = t.DeepCopy()
		if gen := shapeSchemas()[StorageVersion]; gen != nil && tmpl.Description == gen.Properties["spec"].Properties["template"].Description {
			tmpl.Description = "" // CRD's, not the template's
		}
		return tmpl, true
	}
	return nil, false
}

// UpgradeEnabled brings the federated CRD of every type enabled in
// namespace (every FederatedTypeConfig whose federated type is a
// types.kubefed.io CRD in the plane's shape) up to this release's
// schema, as ApplyCRD does: placement, overrides, replica division,
// status, columns and descriptions are the release's; the template
// schema stays the one the type was enabled with (`cellfedctl enable`
// sets it). Federated objects are not rewritten. A CRD a newer release
// wrote is left alone.
func UpgradeEnabled(ctx context.Context, c Clients, namespace string, conversion *apiextensionsv1.WebhookClientConfig) error {
	list, err := c.Dynamic.Resource(kubefed.FederatedTypeConfigsResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing FederatedTypeConfigs in %s: %w", namespace, err)
	}
	counts := map[CRDAction]int{}
	for i := range list.Items {
		var ftc fedv1beta1.FederatedTypeConfig
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &ftc); err != nil {
			return fmt.Errorf("decoding FederatedTypeConfig %s/%s: %w", namespace, list.Items[i].GetName(), err)
		}
		tt := ftc.Spec.TargetType
		t := Target{Group: tt.Group, Version: tt.Version, Kind: tt.Kind, Plural: tt.PluralName, Namespaced: tt.Scope == apiextensionsv1.NamespaceScoped}
		ft := ftc.Spec.FederatedType
		if ft.Group != types.GroupName || ft.PluralName+"."+ft.Group != t.CRDName() {
			continue // not named the plane's way: not the plane's to shape
		}
		stored, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, t.CRDName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading CRD %s: %w", t.CRDName(), err)
		}
		tmpl, ok := TemplateOf(stored)
		if !ok {
			continue // KubeFed's shape: admission converts it when it is written
		}
		action, err := applyCRD(ctx, c.CRDs, CRD(t, tmpl, conversion), version.Own())
		if err != nil {
			return err
		}
		counts[action]++
	}
	klog.InfoS("Federated CRDs checked against this release's schema", "namespace", namespace,
		"updated", counts[CRDUpdate], "upToDate", counts[CRDUpToDate], "newer", counts[CRDNewer])
	return nil
}
