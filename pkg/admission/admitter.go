package admission

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cellfed/cellfed/pkg/apis"
	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/tenancy"
)

// Admitter applies cellfed's admission rules.
type Admitter struct {
	Lookup Lookup
	// FederationNamespace is where physical KubeFedClusters live.
	FederationNamespace string
}

// Mutate initialises the object of r in place: Cells and federated objects
// get their namespace's tenant and workspace labels, a v1beta1 cluster
// selector that names no cellfed.io/ label is pinned to physical
// clusters, a v1beta1 update that changes the spec only through the
// conversion stash is marked so that it bumps the generation, a created federated object of a type a controller propagates
// gets the sync controller's finalizer, and a KubeFedConfig gets KubeFed's
// defaults.
func (a *Admitter) Mutate(r Request) error {
	if r.Object == nil || r.SubResource != "" || (r.Operation != Create && r.Operation != Update) {
		return nil
	}
	if r.isKubeFedConfig() {
		if _, err := defaultKubeFedConfig(r.Object.Object); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("KubeFedConfig %s: %v", r.Name, err))
		}
		return nil
	}
	if !(r.isCell() || r.isFederated()) {
		return nil
	}
	if r.isFederated() {
		// Before the CRD's schema, which names no field for these.
		if errs := divisionRangeErrors(r.Object.Object); len(errs) > 0 {
			return toStatus(r, errs)
		}
		pinPhysicalSelector(r.Object.Object)
		if r.Operation == Update && r.OldObject != nil && conversion.StashChanged(r.OldObject.Object, r.Object.Object) {
			// A mask moved through the v1beta1 stash is a spec change:
			// let the generation count it (see FieldStashChanged).
			r.Object.Object[conversion.FieldStashChanged] = true
		}
		if err := a.addSyncFinalizer(r); err != nil {
			return err
		}
	}
	if r.Namespace == "" {
		return nil
	}
	ns, err := a.Lookup.Namespace(r.Namespace)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reading namespace %s: %w", r.Namespace, err))
	}
	if ns == nil {
		return nil // the namespace lifecycle plugin rejects the request
	}
	var errs field.ErrorList
	lbls := r.Object.GetLabels()
	if lbls == nil {
		lbls = map[string]string{}
	}
	for _, key := range tenancy.Labels {
		path := field.NewPath("metadata", "labels").Key(key)
		want := ns.Labels[key]
		have, set := lbls[key]
		if r.Operation == Update && r.OldObject != nil {
			// Never strand an object: an update that leaves its tenancy
			// labels as they were (a status or finalizer change, the
			// last steps of a deletion) goes through whatever the
			// namespace says now.
			if old, oldSet := r.OldObject.GetLabels()[key]; oldSet == set && old == have {
				continue
			}
		}
		switch reason := tenancy.LabelReason(r.Namespace, key, want, have); {
		case set && reason != "":
			errs = append(errs, field.Forbidden(path, reason))
		case want != "":
			lbls[key] = want
		}
	}
	if len(errs) > 0 {
		return apierrors.NewForbidden(resourceOf(r), r.Name, errs.ToAggregate())
	}
	if len(lbls) > 0 {
		r.Object.SetLabels(lbls)
	}
	return nil
}

// Validate checks the object of r.
func (a *Admitter) Validate(r Request) error {
	if r.Operation == Delete && r.isCell() && r.SubResource == "" {
		errs, err := a.validateCellDeletion(r)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		return toStatus(r, errs)
	}
	if r.Object == nil || r.SubResource != "" || (r.Operation != Create && r.Operation != Update) {
		return nil
	}
	var errs field.ErrorList
	var err error
	switch {
	case r.isFederated():
		if errs = droppedFieldErrors(r); len(errs) == 0 {
			errs = policyOwnedErrors(r)
		}
		if len(errs) == 0 {
			errs, err = a.validateFederated(r)
		}
	case r.isCell():
		errs, err = a.validateCell(r)
	case r.isCluster():
		errs = a.validateCluster(r)
		if len(errs) == 0 {
			errs, err = a.validateDedication(r)
		}
	case r.isNamespace():
		errs = validateNamespacePodSecurity(r)
		if len(errs) == 0 {
			errs, err = a.validateNamespaceTenancy(r)
		}
	case r.isTypeConfig():
		errs = validateTypeConfig(r)
		if len(errs) == 0 {
			errs, err = a.validateReplicasPathSchema(r)
		}
	case r.isKubeFedConfig():
		errs = validateKubeFedConfig(r)
	default:
		return nil
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	return toStatus(r, errs)
}

// toStatus turns field errors into one API error: Forbidden when any error
// is about permission, Invalid otherwise.
func toStatus(r Request, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	forbidden := false
	for _, e := range errs {
		forbidden = forbidden || e.Type == field.ErrorTypeForbidden
	}
	errs = firstErrors(errs)
	if forbidden {
		return apierrors.NewForbidden(resourceOf(r), r.Name, errs.ToAggregate())
	}
	return apierrors.NewInvalid(r.Kind.GroupKind(), r.Name, errs)
}

// maxErrors bounds the errors one answer lists: past a few, more of the
// same help nobody, and a list as long as a hostile object costs the
// plane memory and a megabyte-sized answer.
const maxErrors = 10

// firstErrors keeps the first maxErrors errors and says how many more
// there were.
func firstErrors(errs field.ErrorList) field.ErrorList {
	if len(errs) <= maxErrors {
		return errs
	}
	more := errs[maxErrors]
	out := append(field.ErrorList{}, errs[:maxErrors]...)
	return append(out, &field.Error{
		Type:     field.ErrorTypeInvalid,
		Field:    more.Field,
		BadValue: field.OmitValueType{},
		Detail:   fmt.Sprintf("and %d more errors from here on, not shown: fix the ones above and try again", len(errs)-maxErrors),
	})
}

func resourceOf(r Request) schema.GroupResource { return r.Resource }

// decodeContent converts unstructured content to a typed object.
func decodeContent(content map[string]any, into any) error {
	return apis.Decode(content, into)
}

// decodeErrors reports an object that does not decode: at the field that
// holds the wrong kind of value when it is known, otherwise at spec.
func decodeErrors(err error) field.ErrorList {
	var te *apis.FieldTypeError
	if errors.As(err, &te) {
		parts := strings.Split(te.Field, ".")
		return field.ErrorList{field.Invalid(field.NewPath(parts[0], parts[1:]...), field.OmitValueType{}, te.Detail())}
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{}, "does not decode: "+err.Error())}
}

// pinPhysicalSelector gives KubeFed's selectors their cellfed meaning: a
// v1beta1 clusterSelector that names no cellfed.io/ label (KubeFed's
// "all clusters" {} among them) selects physical clusters only, never the
// per-cell clusters of any namespace, so it reaches each member once —
// for cellfed-controller and for KubeFed's own controller alike. The pin
// is the one conversion adds to a v1beta2 topologyType: cluster selector,
// so the object reads back in v1beta2 as that selector. It reports
// whether it changed the object.
func pinPhysicalSelector(obj map[string]any) bool {
	if obj["apiVersion"] != types.GroupName+"/"+typesv1beta1.Version {
		return false
	}
	sel, ok, err := unstructured.NestedMap(obj, "spec", "placement", "clusterSelector")
	if err != nil || !ok {
		return false
	}
	if labels, ok := sel["matchLabels"].(map[string]any); ok {
		for k := range labels {
			if strings.HasPrefix(k, placement.ReservedPrefix) {
				return false
			}
		}
	}
	exprs, _ := sel["matchExpressions"].([]any)
	for _, e := range exprs {
		if m, ok := e.(map[string]any); ok {
			if k, _ := m["key"].(string); strings.HasPrefix(k, placement.ReservedPrefix) {
				return false
			}
		}
	}
	sel["matchExpressions"] = append(exprs, map[string]any{"key": cellv1alpha1.LabelTopologyType, "operator": "DoesNotExist"})
	return unstructured.SetNestedMap(obj, sel, "spec", "placement", "clusterSelector") == nil
}
