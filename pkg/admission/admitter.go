package admission

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// Admitter applies cellfed's admission rules.
type Admitter struct {
	Lookup Lookup
	// FederationNamespace is where physical KubeFedClusters live.
	FederationNamespace string
}

// Mutate initialises the object of r in place: Cells and federated objects
// get their namespace's tenant and workspace labels.
func (a *Admitter) Mutate(r Request) error {
	if r.Object == nil || r.SubResource != "" || r.Namespace == "" || !(r.isCell() || r.isFederated()) {
		return nil
	}
	if r.Operation != Create && r.Operation != Update {
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
	for _, key := range []string{cellv1alpha1.LabelTenant, cellv1alpha1.LabelWorkspace} {
		path := field.NewPath("metadata", "labels").Key(key)
		want := ns.Labels[key]
		have, set := lbls[key]
		switch {
		case want == "" && set:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("namespace %s is not a tenant workspace (it has no %s label); remove this label, or label the namespace", r.Namespace, key)))
		case want != "" && set && have != want:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("objects in namespace %s belong to %s %q, not %q; remove this label, it is set from the namespace", r.Namespace, key, want, have)))
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
	if r.Object == nil || r.SubResource != "" || (r.Operation != Create && r.Operation != Update) {
		return nil
	}
	var errs field.ErrorList
	var err error
	switch {
	case r.isFederated():
		errs, err = a.validateFederated(r)
	case r.isCell():
		errs, err = a.validateCell(r)
	case r.isCluster():
		errs = a.validateCluster(r)
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
	for _, e := range errs {
		if e.Type == field.ErrorTypeForbidden {
			return apierrors.NewForbidden(resourceOf(r), r.Name, errs.ToAggregate())
		}
	}
	return apierrors.NewInvalid(r.Kind.GroupKind(), r.Name, errs)
}

func resourceOf(r Request) schema.GroupResource { return r.Resource }

// decodeContent converts unstructured content to a typed object.
func decodeContent(content map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(content, into)
}
