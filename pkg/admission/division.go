package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// validateDivision checks a v1beta2 spec.replicaDivision: known mode and
// dynamic weight, topologies named once and placed, limits that can hold.
// Each message says what is wrong and how to fix it.
func validateDivision(spec typesv1beta2.Spec, path *field.Path) field.ErrorList {
	d := spec.ReplicaDivision
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	switch d.Mode {
	case "", typesv1beta2.DivisionDivide, typesv1beta2.DivisionDuplicate:
	default:
		errs = append(errs, field.Invalid(path.Child("mode"), d.Mode, "unknown mode; use Divide to divide the replicas among the placed cells, or Duplicate to run all of them in each"))
	}
	switch d.Dynamic {
	case "", typesv1beta2.DynamicAvailableReplicas:
	default:
		errs = append(errs, field.Invalid(path.Child("dynamic"), d.Dynamic, "unknown dynamic weight; use AvailableReplicas, or leave it out for static weights"))
	}
	if d.Mode == typesv1beta2.DivisionDivide && spec.RetainReplicas != nil && *spec.RetainReplicas {
		errs = append(errs, field.Invalid(path.Child("mode"), d.Mode, "spec.retainReplicas leaves replicas to the members, so there is nothing to divide; set retainReplicas to false, or use mode Duplicate"))
	}
	if d.MaxSurge != nil && *d.MaxSurge < 1 {
		errs = append(errs, field.Invalid(path.Child("maxSurge"), *d.MaxSurge, "must be at least 1: without a surge, replicas could not move between cells without dropping availability; set 1 or more, or leave it out (1)"))
	}
	if d.FailoverAfterSeconds != nil && *d.FailoverAfterSeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("failoverAfterSeconds"), *d.FailoverAfterSeconds, "must not be negative; give the seconds a cell's replicas may stay unready before failover moves them, or leave it out (300)"))
	}
	errs = append(errs, divisionLimitErrors(d, path)...)
	var placed sets.Set[string]
	if spec.Placement.Topologies != nil {
		placed = sets.New[string]()
		for _, t := range spec.Placement.Topologies {
			placed.Insert(t.Name)
		}
	}
	kind := string(typesv1beta2.TopologyCell)
	if spec.Placement.TopologyType != "" {
		kind = string(spec.Placement.TopologyType)
	}
	seen := sets.New[string]()
	for i, t := range d.Topologies {
		tp := path.Child("topologies").Index(i)
		switch {
		case t.Name == "":
			errs = append(errs, field.Required(tp.Child("name"), "name the "+kind+" the weight and limits are for"))
		case seen.Has(t.Name):
			errs = append(errs, field.Duplicate(tp.Child("name"), t.Name))
		case placed != nil && !placed.Has(t.Name):
			errs = append(errs, field.Invalid(tp.Child("name"), t.Name, fmt.Sprintf("%s %q is not placed; add it to spec.placement.topologies, or remove it here", kind, t.Name)))
		}
		seen.Insert(t.Name)
		if t.Weight != nil && *t.Weight < 0 {
			errs = append(errs, field.Invalid(tp.Child("weight"), *t.Weight, "must not be negative; 0 gives the "+kind+" only its minReplicas"))
		}
		if t.MinReplicas < 0 {
			errs = append(errs, field.Invalid(tp.Child("minReplicas"), t.MinReplicas, "must not be negative"))
		}
		if t.MaxReplicas != nil && *t.MaxReplicas < t.MinReplicas {
			errs = append(errs, field.Invalid(tp.Child("maxReplicas"), *t.MaxReplicas, fmt.Sprintf("is below minReplicas %d; raise maxReplicas or lower minReplicas", t.MinReplicas)))
		}
	}
	return errs
}
