package admission

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/placement/division"
)

// divisionBound is an integer field of spec.replicaDivision and the
// range admission accepts.
type divisionBound struct {
	name     string
	min, max int64
	hint     string
}

var (
	topologyBounds = []divisionBound{
		{"weight", 0, division.MaxWeight, "0 gives the topology only its minReplicas"},
		{"minReplicas", 0, division.MaxReplicas, ""},
		{"maxReplicas", 0, division.MaxReplicas, ""},
	}
	divisionBounds = []divisionBound{
		{"maxSurge", 1, division.MaxReplicas, "or leave it out (1)"},
		{"failoverAfterSeconds", 0, math.MaxInt32, "or leave it out (300)"},
	}
)

// divisionRangeErrors checks the integers of a v1beta2 object's
// spec.replicaDivision before the CRD's schema does: the schema refuses
// a number outside int32 with "<nil>: Invalid value: \"\"", naming no
// field, so Mutate (which runs first) refuses it here with the field's
// path and the range. Only numbers a typed decode could not hold are
// refused here; the others are validateDivision's. A v1beta1 object's
// conversion stash is checked the same way, since its typed decode would
// otherwise answer in Go's terms.
func divisionRangeErrors(content map[string]any) field.ErrorList {
	var d map[string]any
	var path *field.Path
	if content["apiVersion"] == types.GroupName+"/"+typesv1beta2.Version {
		d, _, _ = unstructured.NestedMap(content, "spec", "replicaDivision")
		path = field.NewPath("spec", "replicaDivision")
	} else if raw, ok, _ := unstructured.NestedString(content, "metadata", "annotations", conversion.AnnotationV1beta2Spec); ok {
		var stash map[string]any
		if json.Unmarshal([]byte(raw), &stash) != nil {
			return nil // validateFederated says so
		}
		d, _ = stash["replicaDivision"].(map[string]any)
		path = field.NewPath("metadata", "annotations").Key(conversion.AnnotationV1beta2Spec).Child("replicaDivision")
	}
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	check := func(m map[string]any, b divisionBound, p *field.Path) {
		v, present := m[b.name]
		if !present || v == nil {
			return
		}
		n, whole := asNumber(v)
		switch {
		case !whole:
			return // not a number, or a fraction: the schema names the field
		case n < math.MinInt32 || n > math.MaxInt32:
			if f, ok := v.(float64); ok && math.Abs(f) < 1e18 {
				v = int64(f) // shown as written, not as 3e+09
			}
			errs = append(errs, boundError(p.Child(b.name), v, b))
		}
	}
	for _, b := range divisionBounds {
		check(d, b, path)
	}
	tops, _ := d["topologies"].([]any)
	if len(tops) > MaxTopologies {
		return field.ErrorList{field.TooMany(path.Child("topologies"), len(tops), MaxTopologies)}
	}
	for i, t := range tops {
		m, ok := t.(map[string]any)
		if !ok {
			continue
		}
		for _, b := range topologyBounds {
			check(m, b, path.Child("topologies").Index(i))
		}
	}
	return errs
}

// boundError says a division field is out of its range.
func boundError(p *field.Path, v any, b divisionBound) *field.Error {
	msg := fmt.Sprintf("must be from %d to %d", b.min, b.max)
	if b.max == division.MaxReplicas || b.max == division.MaxWeight {
		msg += " (a division's limit)"
	}
	if b.hint != "" {
		msg += "; " + b.hint
	}
	return field.Invalid(p, v, msg)
}

// asNumber reads an integer as JSON decoding gives it (int64, or a
// float64 without a fraction); whole is false for anything else.
func asNumber(v any) (n float64, whole bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case float64:
		return x, x == math.Trunc(x)
	}
	return 0, false
}

// divisionLimitErrors checks a decoded division against the bounds of
// package division (past the negative numbers validateDivision refuses):
// a tenant cannot ask a division for more than these.
func divisionLimitErrors(d *typesv1beta2.ReplicaDivision, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	over := func(p *field.Path, v, max int64, b divisionBound) {
		if v > max {
			errs = append(errs, boundError(p, v, b))
		}
	}
	if len(d.Topologies) > MaxTopologies {
		return field.ErrorList{field.TooMany(path.Child("topologies"), len(d.Topologies), MaxTopologies)}
	}
	if d.MaxSurge != nil {
		over(path.Child("maxSurge"), int64(*d.MaxSurge), division.MaxReplicas, divisionBounds[0])
	}
	for i, t := range d.Topologies {
		tp := path.Child("topologies").Index(i)
		if t.Weight != nil {
			over(tp.Child("weight"), int64(*t.Weight), division.MaxWeight, topologyBounds[0])
		}
		over(tp.Child("minReplicas"), int64(t.MinReplicas), division.MaxReplicas, topologyBounds[1])
		if t.MaxReplicas != nil {
			over(tp.Child("maxReplicas"), int64(*t.MaxReplicas), division.MaxReplicas, topologyBounds[2])
		}
	}
	return errs
}

// dividedReplicasErrors checks the template's replicas of an object whose
// replicas are divided (mode Divide, in v1beta2 or in the v1beta1 stash):
// at the type's replicas path they must be an integer from 0 to
// division.MaxReplicas. Without the check, replicas: -5 was admitted and
// only the object's status said the division failed, with no field.
func dividedReplicasErrors(r Request, t federatedtypes.Target, replicasPath string) field.ErrorList {
	if !templateChanged(r) || !divides(r.Object.Object) {
		return nil
	}
	if replicasPath == "" {
		replicasPath = division.DefaultReplicasPath
	}
	modePath := "spec.replicaDivision.mode"
	if r.Object.Object["apiVersion"] != types.GroupName+"/"+typesv1beta2.Version {
		modePath = "the replicaDivision.mode of " + field.NewPath("metadata", "annotations").Key(conversion.AnnotationV1beta2Spec).String()
	}
	tmplPath := field.NewPath("spec", "template")
	segs, err := division.ReplicasPathSegments(replicasPath)
	if err != nil {
		return field.ErrorList{field.Invalid(tmplPath, field.OmitValueType{}, fmt.Sprintf("cannot be divided: the replicasPath of %s's FederatedTypeConfig is not valid (%v); fix it there, or use mode Duplicate", t.Resource(), err))}
	}
	p := tmplPath.Child(segs[0], segs[1:]...)
	tmpl, _, _ := unstructured.NestedMap(r.Object.Object, "spec", "template")
	v, found, err := unstructured.NestedFieldNoCopy(tmpl, segs...)
	if err != nil {
		return field.ErrorList{field.Invalid(p, field.OmitValueType{}, fmt.Sprintf("does not lead to a field (%v): a divided %s keeps its replicas at %s", err, t.Kind, replicasPath))}
	}
	if !found || v == nil {
		return nil // the workloads' default, 1
	}
	n, whole := asNumber(v)
	switch {
	case !whole:
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("must be an integer when %s is Divide", modePath))}
	case n < 0:
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("must be >= 0 when %s is Divide", modePath))}
	case n > division.MaxReplicas:
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("must be at most %d when %s is Divide (a division's limit); lower it, or use mode Duplicate", division.MaxReplicas, modePath))}
	}
	return nil
}

// divides says whether an object's replicas are divided: mode Divide in
// its v1beta2 spec, or in the v1beta2 spec a v1beta1 object stashes.
func divides(content map[string]any) bool {
	spec, _ := content["spec"].(map[string]any)
	if !strings.HasSuffix(fmt.Sprint(content["apiVersion"]), "/"+typesv1beta2.Version) {
		spec, _ = conversion.StashedV1beta2Spec(content)
	}
	mode, _, _ := unstructured.NestedString(spec, "replicaDivision", "mode")
	return mode == string(typesv1beta2.DivisionDivide)
}

// ReplicasPaths is what a Lookup may also offer: the replicas path of a
// federated kind's target (its FederatedTypeConfig's spec.replicasPath;
// "" for /spec/replicas).
type ReplicasPaths interface {
	ReplicasPath(federatedKind string) (string, error)
}

// replicasPathOf is the replicas path of a federated kind's target, when
// the Lookup knows it.
func (a *Admitter) replicasPathOf(federatedKind string) (string, error) {
	if rp, ok := a.Lookup.(ReplicasPaths); ok {
		return rp.ReplicasPath(federatedKind)
	}
	return "", nil
}

// ReplicasPath reads spec.replicasPath of the FederatedTypeConfig of a
// federated kind from the cache.
func (i *Informers) ReplicasPath(federatedKind string) (string, error) {
	list, err := i.typeConfigs.ByNamespace(i.federationNamespace).List(labels.Everything())
	if err != nil {
		return "", err
	}
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if kind, _, _ := unstructured.NestedString(u.Object, "spec", "federatedType", "kind"); kind == federatedKind {
			p, _, _ := unstructured.NestedString(u.Object, "spec", division.ReplicasPathField)
			return p, nil
		}
	}
	return "", nil
}
