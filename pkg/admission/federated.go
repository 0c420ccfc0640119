package admission

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/placement"
)

// ForbiddenOverridePaths cannot be overridden: they identify the object.
var ForbiddenOverridePaths = []string{"/metadata/name", "/metadata/namespace", "/metadata/generateName", "/kind", "/apiVersion"}

// name is a topology or cluster name with where it was written.
type name struct {
	value string
	path  *field.Path
}

// placed is a federated object's placement in either version, in terms
// admission checks: which cells (of this namespace) and which clusters.
type placed struct {
	cells, clusters []name // placed by name
	namesPath       *field.Path
	selector        *metav1.LabelSelector
	selectorPath    *field.Path
	selectsCells    bool // the selector is over this namespace's cells
	mask            []name
	maskCells       bool // the mask names cells (else clusters)
	overrides       []override
	errs            field.ErrorList
}

type override struct {
	name name
	ops  []typesv1beta2.ClusterOverride
	path *field.Path
}

func (a *Admitter) validateFederated(r Request) (field.ErrorList, error) {
	p, errs := readPlacement(r.Namespace, r.Object.Object)
	if errs != nil {
		return errs, nil
	}
	errs = append(errs, p.errs...)
	errs = append(errs, validateOverrides(p.overrides)...)
	tErrs, err := a.validateTemplate(r)
	if err != nil {
		return nil, err
	}
	errs = append(errs, tErrs...)
	pErrs, err := a.validatePlatformLabels(r, p.overrides)
	if err != nil {
		return nil, err
	}
	errs = append(errs, pErrs...)
	if len(errs) > 0 {
		return errs, nil
	}
	if r.Object.GetDeletionTimestamp() != nil {
		return nil, nil // an object being deleted may refer to cells that are gone
	}
	var old *placed
	if r.Operation == Update && r.OldObject != nil {
		o, oErrs := readPlacement(r.Namespace, r.OldObject.Object)
		if oErrs == nil {
			old = &o
		}
	}
	return a.validateCellsExist(r.Namespace, p, old)
}

// readPlacement decodes the version-specific placement of an object.
func readPlacement(ns string, content map[string]any) (placed, field.ErrorList) {
	spec := field.NewPath("spec")
	apiVersion, _ := content["apiVersion"].(string)
	gv, _ := schema.ParseGroupVersion(apiVersion)
	var p placed
	switch gv.Version {
	case typesv1beta2.Version:
		var o typesv1beta2.FederatedObject
		if err := decodeContent(content, &o); err != nil {
			return p, decodeErrors(err)
		}
		var mask int
		if o.Spec.PlacementMask != nil {
			mask = len(o.Spec.PlacementMask.Topologies)
		}
		if errs := tooLong(
			listLen{spec.Child("placement", "topologies"), len(o.Spec.Placement.Topologies)},
			listLen{spec.Child("placementMask", "topologies"), mask},
			listLen{spec.Child("overrides"), len(o.Spec.Overrides)},
		); errs != nil {
			return p, errs
		}
		typ := placement.TopologyType(o.Spec.Placement)
		pp := spec.Child("placement")
		p.namesPath = pp.Child("topologies")
		for i, t := range o.Spec.Placement.Topologies {
			n := name{t.Name, p.namesPath.Index(i).Child("name")}
			switch cell, ownCell := cellv1alpha1.CellOfNamespace(ns, t.Name); {
			case typ == typesv1beta2.TopologyCell:
				p.cells = append(p.cells, n)
			case ownCell:
				// The stored form of a v1beta1 placement on physical
				// clusters and cells of this namespace: as in v1beta1,
				// the name is the cell's.
				p.cells = append(p.cells, name{cell, n.path})
			default:
				p.clusters = append(p.clusters, n)
			}
		}
		p.selector, p.selectorPath = o.Spec.Placement.TopologySelector, pp.Child("topologySelector")
		p.selectsCells = typ == typesv1beta2.TopologyCell
		if p.selector != nil {
			for _, key := range placement.ReservedKeys(p.selector) {
				p.errs = append(p.errs, field.Invalid(p.selectorPath, key, "cellfed.io/ labels are reserved: they pin the selector to this namespace's cells and are added for you; select on the Cells' own labels"))
			}
		}
		if o.Spec.PlacementMask != nil {
			for i, t := range o.Spec.PlacementMask.Topologies {
				p.mask = append(p.mask, name{t.Name, spec.Child("placementMask", "topologies").Index(i).Child("name")})
			}
		}
		p.maskCells = typ == typesv1beta2.TopologyCell
		p.errs = append(p.errs, validateDivision(o.Spec, spec.Child("replicaDivision"))...)
		for i, ov := range o.Spec.Overrides {
			path := spec.Child("overrides").Index(i)
			p.overrides = append(p.overrides, override{name{ov.TopologyName, path.Child("topologyName")}, ov.ClusterOverrides, path})
		}
		validNames(&p, ns, typ, p.cells, p.clusters, p.mask)
		var names []name
		for _, ov := range p.overrides {
			names = append(names, ov.name)
		}
		validNames(&p, ns, typ, names)
	case typesv1beta1.Version:
		var o typesv1beta1.FederatedObject
		if err := decodeContent(content, &o); err != nil {
			return p, decodeErrors(err)
		}
		if errs := tooLong(
			listLen{spec.Child("placement", "clusters"), len(o.Spec.Placement.Clusters)},
			listLen{spec.Child("overrides"), len(o.Spec.Overrides)},
		); errs != nil {
			return p, errs
		}
		pp := spec.Child("placement")
		p.namesPath = pp.Child("clusters")
		var all []name
		for i, c := range o.Spec.Placement.Clusters {
			n := name{c.Name, p.namesPath.Index(i).Child("name")}
			all = append(all, n)
			if cell, ok := cellv1alpha1.CellOfNamespace(ns, c.Name); ok {
				p.cells = append(p.cells, name{cell, n.path})
			} else {
				p.clusters = append(p.clusters, n)
			}
		}
		p.selector, p.selectorPath = o.Spec.Placement.ClusterSelector, pp.Child("clusterSelector")
		if p.selector != nil {
			p.errs = append(p.errs, communitySelectorErrors(ns, p.selector, p.selectorPath)...)
		}
		for i, ov := range o.Spec.Overrides {
			path := spec.Child("overrides").Index(i)
			ops := make([]typesv1beta2.ClusterOverride, len(ov.ClusterOverrides))
			for j, c := range ov.ClusterOverrides {
				ops[j] = typesv1beta2.ClusterOverride(c)
			}
			p.overrides = append(p.overrides, override{name{ov.ClusterName, path.Child("clusterName")}, ops, path})
		}
		var names []name
		for _, ov := range p.overrides {
			names = append(names, ov.name)
		}
		p.errs = append(p.errs, clusterNameErrors(ns, p.clusters)...)
		p.errs = append(p.errs, clusterNameErrors(ns, names)...)
		stashedMask(ns, content, &p)
		p.errs = append(p.errs, duplicates(all)...)
		p.errs = append(p.errs, duplicates(names)...)
	default:
		return p, field.ErrorList{field.Invalid(field.NewPath("apiVersion"), apiVersion, "unknown version of a federated type; use v1beta1 or v1beta2")}
	}
	if p.selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(p.selector); err != nil {
			p.errs = append(p.errs, selectorErrors(p.selector, p.selectorPath, err)...)
		}
	}
	return p, nil
}

// stashedMask reads the placement mask a v1beta1 object carries in the
// conversion annotation, when its v1beta2 view shows it (the stash
// still matches the placement), and checks it as a v1beta2 mask: a
// mask is valid however it is written.
func stashedMask(ns string, content map[string]any, p *placed) {
	annPath := field.NewPath("metadata", "annotations").Key(conversion.AnnotationV1beta2Spec)
	if raw, present := stashAnnotation(content); present {
		// The stash is the v1beta2 spec: it must parse as one, or the
		// mask in it would be dropped silently and a held-back cell
		// would get the new template.
		var stash map[string]any
		if err := json.Unmarshal([]byte(raw), &stash); err != nil || stash == nil {
			p.errs = append(p.errs, field.Invalid(annPath, field.OmitValueType{}, "must be the JSON object of the v1beta2 spec (placement, placementMask, overrides, replicaDivision) that conversion wrote; remove the annotation, or write the object in v1beta2"))
			return
		}
		var o typesv1beta2.FederatedObject
		if err := decodeContent(map[string]any{"spec": stash}, &o); err != nil {
			for _, e := range decodeErrors(err) {
				e.Field = annPath.String() + "." + e.Field
				p.errs = append(p.errs, e)
			}
			return
		}
		// Conversion writes only fields it knows: anything else is a
		// hand-made stash a cellfedctl would refuse to read.
		dec := json.NewDecoder(strings.NewReader(`{"spec":` + raw + `}`))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&typesv1beta2.FederatedObject{}); err != nil {
			p.errs = append(p.errs, field.Invalid(annPath, field.OmitValueType{}, fmt.Sprintf("is not a v1beta2 spec: %v; remove the annotation, or write the object in v1beta2", strings.TrimPrefix(err.Error(), "json: "))))
			return
		}
	}
	v2, ok := conversion.StashedV1beta2Spec(content)
	if !ok {
		return
	}
	var o typesv1beta2.FederatedObject
	if err := decodeContent(map[string]any{"spec": v2}, &o); err != nil {
		return
	}
	// A division written through the stash is checked as in v1beta2.
	p.errs = append(p.errs, validateDivision(o.Spec, annPath.Child("replicaDivision"))...)
	if o.Spec.PlacementMask == nil {
		return
	}
	typ := placement.TopologyType(o.Spec.Placement)
	path := field.NewPath("metadata", "annotations").Key(conversion.AnnotationV1beta2Spec).Child("placementMask", "topologies")
	if errs := tooLong(listLen{path, len(o.Spec.PlacementMask.Topologies)}); errs != nil {
		p.errs = append(p.errs, errs...)
		return
	}
	for i, t := range o.Spec.PlacementMask.Topologies {
		p.mask = append(p.mask, name{t.Name, path.Index(i).Child("name")})
	}
	p.maskCells = typ == typesv1beta2.TopologyCell
	validNames(p, ns, typ, p.mask)
}

// MaxTopologies bounds each list of names in a federated object: the
// placement, the mask and the overrides. Admission checks every entry
// against the plane's caches, so the bound keeps the cost of one request
// (and of one tenant) small; a thousand cells by name is already more
// than anyone writes by hand, and a topologySelector over the cells'
// labels places on any number.
const MaxTopologies = 1000

type listLen struct {
	path *field.Path
	n    int
}

// tooLong refuses lists longer than MaxTopologies before anything looks
// at their entries.
func tooLong(lists ...listLen) field.ErrorList {
	var errs field.ErrorList
	for _, l := range lists {
		if l.n > MaxTopologies {
			errs = append(errs, field.TooMany(l.path, l.n, MaxTopologies))
			errs[len(errs)-1].Detail = fmt.Sprintf("at most %d entries are allowed; to place on many cells select them by label with spec.placement.topologySelector", MaxTopologies)
		}
	}
	return errs
}

// stashAnnotation is the raw conversion stash of a v1beta1 object, and
// whether it has one.
func stashAnnotation(content map[string]any) (string, bool) {
	md, _ := content["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	v, ok := ann[conversion.AnnotationV1beta2Spec]
	if !ok {
		return "", false
	}
	s, _ := v.(string)
	return s, true
}

// validNames checks v1beta2 topology names and their uniqueness in each
// list. A cluster topology may name the per-cell clusters of the object's
// own namespace (<namespace>.<cell>): conversion stores so a v1beta1
// placement on physical clusters and cells, which v1beta2 must accept
// back.
func validNames(p *placed, ns string, typ typesv1beta2.TopologyType, lists ...[]name) {
	for _, list := range lists {
		for _, n := range list {
			_, ownCell := cellv1alpha1.CellOfNamespace(ns, n.value)
			switch {
			case typ == typesv1beta2.TopologyCluster && ownCell:
			case n.value == "":
				p.errs = append(p.errs, field.Required(n.path, "name the "+string(typ)))
			case !cellv1alpha1.IsDNSLabel(n.value):
				msg := fmt.Sprintf("%s names are DNS labels: lowercase letters, digits and '-', at most 63 characters", typ)
				if otherNS, cell, ok := cellv1alpha1.ParseCellClusterName(n.value); ok && typ == typesv1beta2.TopologyCluster {
					msg = fmt.Sprintf("is cell %q of namespace %q; an object in namespace %q can only be placed on its own namespace's cells (with topologyType: cell, by cell name)", cell, otherNS, ns)
				} else if typ == typesv1beta2.TopologyCluster && strings.Contains(n.value, ".") {
					msg = "names with a dot are per-cell clusters; to place on cells use topologyType: cell with the cell names"
				}
				p.errs = append(p.errs, field.Invalid(n.path, n.value, msg))
			}
		}
		p.errs = append(p.errs, duplicates(list)...)
	}
}

// clusterNameErrors checks v1beta1 cluster names: physical clusters or
// cells of this namespace, never another namespace's cells.
func clusterNameErrors(ns string, names []name) field.ErrorList {
	var errs field.ErrorList
	for _, n := range names {
		if n.value == "" {
			errs = append(errs, field.Required(n.path, "name the cluster"))
			continue
		}
		if cellv1alpha1.IsDNSLabel(n.value) {
			continue
		}
		if otherNS, cell, ok := cellv1alpha1.ParseCellClusterName(n.value); ok {
			if otherNS != ns {
				errs = append(errs, field.Forbidden(n.path, fmt.Sprintf("%q is cell %q of namespace %q; an object in namespace %q can only be placed on its own namespace's cells", n.value, cell, otherNS, ns)))
			}
			continue
		}
		errs = append(errs, field.Invalid(n.path, n.value, "not a cluster name: use a physical cluster's name (a DNS label) or a cell of this namespace (<namespace>.<cell>)"))
	}
	return errs
}

// duplicates reports names that appear twice in one list.
func duplicates(list []name) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for _, n := range list {
		if seen.Has(n.value) {
			errs = append(errs, field.Duplicate(n.path, n.value))
		}
		seen.Insert(n.value)
	}
	return errs
}

func validateOverrides(overrides []override) field.ErrorList {
	var errs field.ErrorList
	for _, ov := range overrides {
		for j, op := range ov.ops {
			path := ov.path.Child("clusterOverrides").Index(j)
			switch op.Op {
			case "", "add", "replace":
				if op.Value == nil {
					errs = append(errs, field.Required(path.Child("value"), fmt.Sprintf("%q needs a value", opName(op.Op))))
				}
			case "remove":
			default:
				errs = append(errs, field.NotSupported(path.Child("op"), op.Op, []string{"add", "remove", "replace"}))
			}
			pathErrs := validateOverridePath(path.Child("path"), op.Path)
			errs = append(errs, pathErrs...)
			if len(pathErrs) == 0 && op.Op != "remove" && op.Value != nil {
				errs = append(errs, validateMetadataValue(path.Child("value"), op.Path, op.Value.Raw)...)
			}
		}
	}
	return errs
}

// validateMetadataValue checks what an override writes into a member
// object's labels or annotations: a member stores only strings there (a
// label value also has a syntax), and anything else would be dropped or
// refused at the member while the plane reported success.
func validateMetadataValue(path *field.Path, pointer string, raw []byte) field.ErrorList {
	var which string
	var whole bool
	switch {
	case pointer == "/metadata/labels" || pointer == "/metadata/annotations":
		which, whole = strings.TrimPrefix(pointer, "/metadata/"), true
	case strings.HasPrefix(pointer, "/metadata/labels/"):
		which = "labels"
	case strings.HasPrefix(pointer, "/metadata/annotations/"):
		which = "annotations"
	case pointer == "/metadata":
		which = "metadata"
	default:
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return field.ErrorList{field.Invalid(path, string(raw), "not JSON: "+err.Error())}
	}
	check := func(kind string, m any) field.ErrorList {
		if m == nil {
			return nil
		}
		mm, ok := m.(map[string]any)
		if !ok {
			return field.ErrorList{field.Invalid(path, string(raw), fmt.Sprintf("metadata.%s is a map of strings; give an object such as {\"key\": \"value\"}", kind))}
		}
		var errs field.ErrorList
		for _, k := range slices.Sorted(maps.Keys(mm)) {
			errs = append(errs, metadataEntry(path, kind, k, mm[k])...)
		}
		return errs
	}
	switch {
	case which == "metadata":
		md, ok := v.(map[string]any)
		if !ok {
			return field.ErrorList{field.Invalid(path, string(raw), "metadata is an object")}
		}
		return append(check("labels", md["labels"]), check("annotations", md["annotations"])...)
	case whole:
		return check(which, v)
	}
	key := unescapePointer(pointer[strings.LastIndex(pointer, "/")+1:])
	return metadataEntry(path, which, key, v)
}

func metadataEntry(path *field.Path, kind, key string, v any) field.ErrorList {
	s, ok := v.(string)
	if !ok {
		return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("metadata.%s[%q] must be a string: %s", kind, key, notAString(v)))}
	}
	if kind == "labels" {
		if msgs := validation.IsValidLabelValue(s); len(msgs) > 0 {
			return field.ErrorList{field.Invalid(path, s, fmt.Sprintf("label %q: %s", key, strings.Join(msgs, "; ")))}
		}
	}
	return nil
}

// notAString says how to write a non-string value as the string a member
// keeps in labels and annotations.
func notAString(v any) string {
	switch v.(type) {
	case map[string]any:
		return "it is an object; a member keeps only strings there (to keep structured data, write it as one string of JSON)"
	case []any:
		return "it is a list; a member keeps only strings there (to keep structured data, write it as one string of JSON)"
	case nil:
		return "it is null; give a string, or leave the key out"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "a member keeps only strings there"
	}
	return fmt.Sprintf("quote it, e.g. %q: a member keeps only strings there", string(raw))
}

// selectorErrors reports a label selector that does not parse, at the
// requirement that is wrong when apimachinery's validation finds it.
func selectorErrors(sel *metav1.LabelSelector, path *field.Path, err error) field.ErrorList {
	if errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path); len(errs) > 0 {
		return errs
	}
	return field.ErrorList{field.Invalid(path, placement.FormatSelector(sel), err.Error())}
}

// unescapePointer decodes one JSON-pointer token (RFC 6901).
func unescapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}

func opName(op string) string {
	if op == "" {
		return "replace"
	}
	return op
}

func validateOverridePath(path *field.Path, p string) field.ErrorList {
	if p == "" {
		return field.ErrorList{field.Required(path, "a JSON pointer such as /spec/replicas")}
	}
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.HasSuffix(p, "/") {
		return field.ErrorList{field.Invalid(path, p, "must be a JSON pointer such as /spec/replicas")}
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return field.ErrorList{field.Invalid(path, p, "invalid JSON-pointer escape: '~' must be followed by 0 (for '~') or 1 (for '/'), e.g. /metadata/annotations/example.com~1key")}
		}
	}
	for _, f := range ForbiddenOverridePaths {
		// The path, anything below it, and anything above it (replacing
		// /metadata would replace the name too) are forbidden.
		if p == f || strings.HasPrefix(p, f+"/") || strings.HasPrefix(f, p+"/") {
			return field.ErrorList{field.Invalid(path, p, fmt.Sprintf("%s identifies the object and cannot be overridden (forbidden: %s, and their parents)", f, strings.Join(ForbiddenOverridePaths, ", ")))}
		}
	}
	return nil
}

func (a *Admitter) validateTemplate(r Request) (field.ErrorList, error) {
	t, ok, err := a.Lookup.Target(r.Kind.Kind)
	if err != nil || !ok {
		return nil, err
	}
	path := field.NewPath("spec", "template")
	spec, _ := r.Object.Object["spec"].(map[string]any) // nil when the object has no spec
	tmpl, _ := spec["template"].(map[string]any)
	var errs field.ErrorList
	if tmpl == nil && templateChanged(r) && !(t.Group == "" && t.Kind == "Namespace") {
		// A member would get an empty object of the target kind (an
		// empty Namespace is what a FederatedNamespace usually is).
		errs = append(errs, field.Required(path, fmt.Sprintf("a %s propagates its template: give the %s to create in the members", r.Kind.Kind, t.Kind)))
	}
	if t.Group == "" && t.Kind == "Namespace" && r.Operation == Create && r.Name != r.Namespace {
		// KubeFed propagates the namespace the object is in, whatever the
		// object's name; a differently named one would report success while
		// doing nothing, and its deletion would remove that namespace from
		// the members.
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), r.Name, fmt.Sprintf("a %s must be named after its namespace: it federates the namespace it is in; use name: %s", r.Kind.Kind, r.Namespace)))
	}
	if raw, err := json.Marshal(spec); err == nil && len(raw) > MaxSpecBytes && templateChanged(r) {
		errs = append(errs, field.TooLong(field.NewPath("spec"), "", MaxSpecBytes))
		errs[len(errs)-1].Detail = fmt.Sprintf("template and overrides take %d bytes; members store objects in etcd, whose requests are limited to 1.5 MiB, so a federated object is limited to %d bytes of spec: split it", len(raw), MaxSpecBytes)
	}
	if md, ok := tmpl["metadata"].(map[string]any); ok {
		for _, kind := range []string{"labels", "annotations"} {
			m, present := md[kind]
			if !present || m == nil {
				continue
			}
			mm, ok := m.(map[string]any)
			if !ok {
				errs = append(errs, field.Invalid(path.Child("metadata", kind), m, "must be a map of strings, e.g. {\"key\": \"value\"}"))
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(mm)) {
				errs = append(errs, metadataEntry(path.Child("metadata", kind).Key(k), kind, k, mm[k])...)
			}
		}
	}
	if kind, ok := tmpl["kind"].(string); ok && kind != t.Kind {
		errs = append(errs, field.Invalid(path.Child("kind"), kind, fmt.Sprintf("a %s propagates %s objects: set kind %q or leave it out", r.Kind.Kind, t.Kind, t.Kind)))
	}
	want := schema.GroupVersion{Group: t.Group, Version: t.Version}.String()
	if av, ok := tmpl["apiVersion"].(string); ok && av != want {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), av, fmt.Sprintf("a %s propagates %s: set apiVersion %q or leave it out", r.Kind.Kind, want, want)))
	}
	replicasPath, err := a.replicasPathOf(r.Kind.Kind)
	if err != nil {
		return nil, err
	}
	return append(errs, dividedReplicasErrors(r, t, replicasPath)...), nil
}

// MaxSpecBytes bounds a federated object's spec (template and overrides)
// so that every member object stays below etcd's 1.5 MiB request limit
// with room for the metadata members add.
const MaxSpecBytes = 1 << 20

// templateChanged says whether the request sets the template: every
// create, and updates that change it. Objects admitted before a rule can
// still get status, finalizer and label updates, and be deleted.
func templateChanged(r Request) bool {
	if r.Operation != Update || r.OldObject == nil {
		return true
	}
	newSpec, _ := r.Object.Object["spec"].(map[string]any)
	oldSpec, _ := r.OldObject.Object["spec"].(map[string]any)
	return !reflect.DeepEqual(newSpec, oldSpec)
}

// validateCellsExist checks that placed cells exist in the namespace, and
// that no two placed cells share a physical cluster. On update only what
// changed is checked, so an object whose cell was removed can still be
// updated (status, finalizers) and deleted.
func (a *Admitter) validateCellsExist(ns string, p placed, old *placed) (field.ErrorList, error) {
	var errs field.ErrorList
	oldCells := sets.New[string]()
	if old != nil {
		oldCells.Insert(values(old.cells)...)
		if old.maskCells {
			oldCells.Insert(values(old.mask)...)
		}
	}
	placed := map[string]*cellv1alpha1.Cell{}
	var order []string
	check := func(list []name, record bool) error {
		for _, n := range list {
			cell, err := a.Lookup.Cell(ns, n.value)
			if err != nil {
				return fmt.Errorf("reading cell %s/%s: %w", ns, n.value, err)
			}
			if cell == nil {
				if !oldCells.Has(n.value) {
					errs = append(errs, field.Invalid(n.path, n.value, fmt.Sprintf("cell %q does not exist in namespace %s; create it first (cellfedctl cell create %s --cluster=<cluster> -n %s) or remove it from the placement", n.value, ns, n.value, ns)))
				}
				continue
			}
			if record {
				if _, dup := placed[cell.Name]; !dup {
					order = append(order, cell.Name)
				}
				placed[cell.Name] = cell
			}
		}
		return nil
	}
	if err := check(p.cells, true); err != nil {
		return nil, err
	}
	if p.selectsCells && p.selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.selector)
		if err == nil {
			cells, err := a.Lookup.Cells(ns, sel)
			if err != nil {
				return nil, fmt.Errorf("listing cells of %s: %w", ns, err)
			}
			sort.Slice(cells, func(i, j int) bool { return cells[i].Name < cells[j].Name })
			for _, c := range cells {
				if _, dup := placed[c.Name]; !dup {
					order = append(order, c.Name)
				}
				placed[c.Name] = c
			}
		}
	}
	if p.maskCells {
		if err := check(p.mask, false); err != nil {
			return nil, err
		}
	}
	if old == nil || !samePlacement(p, *old) || !slices.Equal(values(p.mask), values(old.mask)) || p.maskCells != old.maskCells {
		errs = append(errs, maskOutsidePlacement(p, placed)...)
	}
	if old != nil && samePlacement(p, *old) {
		return errs, nil
	}
	byCluster := map[string]string{}
	for _, c := range p.clusters {
		byCluster[c.value] = c.value
	}
	for _, cellName := range order {
		cell := placed[cellName]
		if first, ok := byCluster[cell.Spec.Cluster]; ok {
			what := fmt.Sprintf("cells %q and %q are both on cluster %q", first, cellName, cell.Spec.Cluster)
			if first == cell.Spec.Cluster {
				what = fmt.Sprintf("cell %q is on cluster %q, which is placed too", cellName, first)
			}
			errs = append(errs, field.Invalid(field.NewPath("spec", "placement"), cellName, what+": the member object would be written twice; place the object on only one of them"))
			continue
		}
		byCluster[cell.Spec.Cluster] = cellName
	}
	return errs, nil
}

// maskOutsidePlacement rejects mask entries the placement does not
// select: a mask only narrows a placement. placed are the cells placed
// by name or matched by the cell selector now; a cluster mask is checked
// against clusters placed by name (a cluster selector is evaluated by the
// controller, which acts on placement ∩ mask whatever the mask says).
func maskOutsidePlacement(p placed, placed map[string]*cellv1alpha1.Cell) field.ErrorList {
	var errs field.ErrorList
	clusters := sets.New(values(p.clusters)...)
	for _, n := range p.mask {
		switch {
		case p.maskCells:
			if _, ok := placed[n.value]; ok || !cellv1alpha1.IsDNSLabel(n.value) {
				continue
			}
			what := "is not in spec.placement.topologies"
			if p.selector != nil {
				what = "is not selected by the placement's selector"
			}
			errs = append(errs, field.Invalid(n.path, n.value, fmt.Sprintf("cell %q %s: a placement mask can only name placed cells; add the cell to the placement first or remove it from the mask", n.value, what)))
		case p.selector == nil && !clusters.Has(n.value):
			errs = append(errs, field.Invalid(n.path, n.value, fmt.Sprintf("cluster %q is not in the placement: a placement mask can only name placed clusters; add it to the placement first or remove it from the mask", n.value)))
		}
	}
	return errs
}

func values(list []name) []string {
	out := make([]string, len(list))
	for i, n := range list {
		out[i] = n.value
	}
	return out
}

func samePlacement(a, b placed) bool {
	names := func(p placed) string {
		var s []string
		for _, n := range p.cells {
			s = append(s, n.value)
		}
		return strings.Join(s, ",")
	}
	selector := func(p placed) string {
		if p.selector == nil {
			return ""
		}
		return p.selector.String()
	}
	return names(a) == names(b) && selector(a) == selector(b) && a.selectsCells == b.selectsCells
}

// communitySelectorErrors keeps v1beta1 cluster selectors inside their
// tenant: a selector must either be pinned to this namespace's cells (as
// conversion pins a v1beta2 cell selector) or exclude per-cell clusters,
// so it can never match another namespace's cells.
func communitySelectorErrors(ns string, sel *metav1.LabelSelector, path *field.Path) field.ErrorList {
	topologyIn, topologyAbsent, nsPinned := false, false, false
	var errs field.ErrorList
	if v, ok := sel.MatchLabels[cellv1alpha1.LabelNamespace]; ok {
		if v != ns {
			errs = append(errs, field.Forbidden(path.Child("matchLabels").Key(cellv1alpha1.LabelNamespace), fmt.Sprintf("an object in namespace %s can only select its own namespace's cells", ns)))
		}
		nsPinned = true
	}
	if v, ok := sel.MatchLabels[cellv1alpha1.LabelTopologyType]; ok && v == cellv1alpha1.TopologyTypeCell {
		topologyIn = true
	}
	for i, e := range sel.MatchExpressions {
		switch {
		case e.Key == cellv1alpha1.LabelNamespace:
			if e.Operator != metav1.LabelSelectorOpIn || len(e.Values) != 1 || e.Values[0] != ns {
				errs = append(errs, field.Forbidden(path.Child("matchExpressions").Index(i), fmt.Sprintf("an object in namespace %s can only select its own namespace's cells: use {key: %s, operator: In, values: [%s]}", ns, cellv1alpha1.LabelNamespace, ns)))
			}
			nsPinned = true
		case e.Key == cellv1alpha1.LabelTopologyType && e.Operator == metav1.LabelSelectorOpDoesNotExist:
			topologyAbsent = true
		case e.Key == cellv1alpha1.LabelTopologyType && e.Operator == metav1.LabelSelectorOpIn && len(e.Values) == 1 && e.Values[0] == cellv1alpha1.TopologyTypeCell:
			topologyIn = true
		}
	}
	if len(errs) == 0 && !topologyAbsent && !(topologyIn && nsPinned) {
		errs = append(errs, field.Invalid(path, placement.FormatSelector(sel), fmt.Sprintf("this selector could match other namespaces' cells (per-cell clusters carry their cells' labels); to select physical clusters add {key: %s, operator: DoesNotExist} to matchExpressions, or select cells with a v1beta2 topologySelector", cellv1alpha1.LabelTopologyType)))
	}
	return errs
}
