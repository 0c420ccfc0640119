package admission

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/pki"
)

// An addedField is a field of a federated object's v1beta2 spec that a
// release added: a client built against the types of an earlier release
// decodes the object without it, and its whole-object update (GET,
// change, PUT) leaves it out. Add a row when a release adds a spec field
// (CHANGELOG.md names it under the release's APIs).
type addedField struct {
	// name is the key under spec (v1beta2), or under the v1beta1
	// conversion stash (conversion.AnnotationV1beta2Spec).
	name string
	// since is the release that added it.
	since string
}

// addedFields are the spec fields of federated objects added since
// KubeFed's types and cellfed's first v1beta2 fields.
var addedFields = []addedField{
	{name: "replicaDivision", since: "v0.1.0"},
}

// droppedFieldErrors refuses a whole-object update (PUT) of a federated
// object that leaves out a field of addedFields the stored object has:
// the writer may be a client built before the field existed, which would
// drop it without knowing (a rolling upgrade's old clients, a controller
// not yet upgraded). Removing the field on purpose is a patch (kubectl
// patch, apply and edit send patches), which the error spells out.
// cellfed's own controllers (system:masters naming a cellfed- field
// manager) are exempt: they run under the skew policy and write
// whole objects from what they read. The plane's request info says
// whether a request is a PUT (Request.Replace); the admission webhook
// cannot tell, and does not apply the rule.
func droppedFieldErrors(r Request) field.ErrorList {
	if r.Operation != Update || !r.Replace || r.SubResource != "" || r.Object == nil || r.OldObject == nil || !r.isFederated() {
		return nil
	}
	if strings.HasPrefix(r.FieldManager, "cellfed-") && slices.Contains(r.Groups, pki.AdminGroup) {
		return nil
	}
	oldSpec, _ := addedSpec(r.OldObject)
	newSpec, path := addedSpec(r.Object)
	var errs field.ErrorList
	for _, f := range addedFields {
		if _, had := oldSpec[f.name]; !had {
			continue
		}
		if v, has := newSpec[f.name]; has && v != nil {
			continue
		}
		resource := r.Resource.Resource + "." + typesv1beta2.Version + "." + r.Resource.Group
		errs = append(errs, field.Required(path.Child(f.name), fmt.Sprintf(
			"the object has spec.%[1]s and this whole-object update (PUT) leaves it out: a client built before cellfed %[2]s does not know the field and would drop it without saying so. "+
				"Send the object with the field (read it again, change it, write it back), or remove the field on purpose with a patch: "+
				"kubectl patch %[3]s/%[4]s -n %[5]s --type=json -p '[{\"op\":\"remove\",\"path\":\"/spec/%[1]s\"}]'",
			f.name, f.since, resource, r.Name, r.Namespace)))
	}
	return errs
}

// addedSpec is where a federated object keeps the fields of addedFields:
// a v1beta2 object's spec, a v1beta1 object's conversion stash. The path
// is the one an error names.
func addedSpec(obj *unstructured.Unstructured) (map[string]any, *field.Path) {
	if obj.GetAPIVersion() == types.GroupName+"/"+typesv1beta2.Version {
		spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
		return spec, field.NewPath("spec")
	}
	path := field.NewPath("metadata", "annotations").Key(conversion.AnnotationV1beta2Spec)
	raw, ok := obj.GetAnnotations()[conversion.AnnotationV1beta2Spec]
	if !ok {
		return nil, path
	}
	var stash map[string]any
	if json.Unmarshal([]byte(raw), &stash) != nil {
		return nil, path // validateFederated refuses a stash it cannot read
	}
	return stash, path
}
