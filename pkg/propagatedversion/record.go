// Package propagatedversion is KubeFed's propagation record
// (PropagatedVersion and ClusterPropagatedVersion, core.kubefed.io/v1alpha1)
// as cellfed keeps it: cellfed-controller writes the record into the v1beta2
// status of the federated object (status.record), in the same write as the
// rest of the status, and the plane serves it back as a PropagatedVersion
// in KubeFed's format, a view computed from that status. KubeFed's own
// controller still stores PropagatedVersions as objects; a stored one
// takes precedence over a view of the same name (see Merge).
//
// Everything here is a pure function of its arguments: the plane's
// handler and the controllers do the I/O.
package propagatedversion

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	fedtypes "github.com/cellfed/cellfed/pkg/apis/types"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// ViewLabel marks a PropagatedVersion the plane computed from a federated
// object's status rather than read from storage. Its value is
// ViewFromStatus. A client that wants only the stored ones lists with the
// selector "!propagatedversion.cellfed.io/view".
const (
	ViewLabel      = "propagatedversion.cellfed.io/view"
	ViewFromStatus = "status"
	// StoredOnly is the label selector of the stored PropagatedVersions.
	StoredOnly = "!" + ViewLabel
)

// Kinds of the two record resources.
const (
	Kind        = "PropagatedVersion"
	ClusterKind = "ClusterPropagatedVersion"
)

// Name is the record's name for the federated object name of a type whose
// target kind is targetKind: KubeFed's <lowercase kind>-<name>.
func Name(targetKind, name string) string {
	return strings.ToLower(targetKind) + "-" + name
}

// Versions is a record in memory: the template and overrides versions and
// each cluster's member object version ("" while unknown).
type Versions struct {
	TemplateVersion, OverridesVersion string
	Clusters                          map[string]string
}

// Empty reports whether v names no cluster: such a record is not kept in
// a status (and a missing one reads as empty).
func (v Versions) Empty() bool { return len(v.Clusters) == 0 }

// Equal compares two records by content; two empty records are equal
// whatever their template and overrides versions.
func (v Versions) Equal(o Versions) bool {
	if v.Empty() && o.Empty() {
		return true
	}
	return v.TemplateVersion == o.TemplateVersion && v.OverridesVersion == o.OverridesVersion && maps.Equal(v.Clusters, o.Clusters)
}

// Record is v as the typed status field, clusters in name order; nil for
// an empty record.
func (v Versions) Record() *typesv1beta2.PropagationRecord {
	if v.Empty() {
		return nil
	}
	r := &typesv1beta2.PropagationRecord{TemplateVersion: v.TemplateVersion, OverridesVersion: v.OverridesVersion}
	for _, n := range slices.Sorted(maps.Keys(v.Clusters)) {
		r.ClusterVersions = append(r.ClusterVersions, typesv1beta2.ClusterObjectVersion{ClusterName: n, Version: v.Clusters[n]})
	}
	return r
}

// Content is v as unstructured content, the shape of status.record and of
// a PropagatedVersion's status; nil for an empty record.
func (v Versions) Content() map[string]any {
	if v.Empty() {
		return nil
	}
	names := slices.Sorted(maps.Keys(v.Clusters))
	cvs := make([]any, 0, len(names))
	for _, n := range names {
		cvs = append(cvs, map[string]any{"clusterName": n, "version": v.Clusters[n]})
	}
	return map[string]any{"templateVersion": v.TemplateVersion, "overridesVersion": v.OverridesVersion, "clusterVersions": cvs}
}

// FromContent reads a record from content in the shape Content writes (a
// status.record, or a PropagatedVersion's status).
func FromContent(content map[string]any) Versions {
	v := Versions{Clusters: map[string]string{}}
	if content == nil {
		return v
	}
	v.TemplateVersion, _ = content["templateVersion"].(string)
	v.OverridesVersion, _ = content["overridesVersion"].(string)
	cvs, _ := content["clusterVersions"].([]any)
	for _, cv := range cvs {
		m, _ := cv.(map[string]any)
		name, _ := m["clusterName"].(string)
		version, _ := m["version"].(string)
		if name != "" {
			v.Clusters[name] = version
		}
	}
	return v
}

// InStatus reads the record a federated object (in v1beta2) carries in
// status.record; ok is false when it carries none.
func InStatus(obj map[string]any) (v Versions, ok bool) {
	content, found, err := unstructured.NestedMap(obj, "status", "record")
	if err != nil || !found {
		return FromContent(nil), false
	}
	return FromContent(content), true
}

// OfStored reads the record of a stored PropagatedVersion (its status).
func OfStored(pv *unstructured.Unstructured) Versions {
	content, _, _ := unstructured.NestedMap(pv.Object, "status")
	return FromContent(content)
}

// Type is what the view of one federated type needs: its target kind (the
// records' name prefix), its federated kind and KubeFed's apiVersion of it
// (the records' owner), and whether its objects are namespaced (records
// are then PropagatedVersions in the object's namespace, otherwise
// ClusterPropagatedVersions).
type Type struct {
	TargetKind        string
	FederatedKind     string
	FederatedAPIGroup string
	// FederatedPlural is the federated type's resource name.
	FederatedPlural string
	Namespaced      bool
}

// View is the PropagatedVersion (or ClusterPropagatedVersion) the plane
// serves for fed, a federated object of type t as stored (v1beta2): KubeFed's
// format, named <kind>-<name>, owned by fed as KubeFed's controller would
// own it (apiVersion v1beta1), labelled ViewLabel, carrying fed's
// resourceVersion and creation time. ok is false when fed has no record.
func View(t Type, fed *unstructured.Unstructured) (view *unstructured.Unstructured, ok bool) {
	content, found, err := unstructured.NestedMap(fed.Object, "status", "record")
	if err != nil || !found {
		return nil, false
	}
	status := FromContent(content).Content()
	if status == nil {
		status = map[string]any{"templateVersion": content["templateVersion"], "overridesVersion": content["overridesVersion"], "clusterVersions": []any{}}
	}
	kind := ClusterKind
	if t.Namespaced {
		kind = Kind
	}
	md := map[string]any{
		"name":            Name(t.TargetKind, fed.GetName()),
		"labels":          map[string]any{ViewLabel: ViewFromStatus},
		"resourceVersion": fed.GetResourceVersion(),
		"ownerReferences": []any{map[string]any{
			"apiVersion": t.FederatedAPIGroup + "/v1beta1", "kind": t.FederatedKind, "name": fed.GetName(), "uid": string(fed.GetUID()),
		}},
	}
	if ts := fed.GetCreationTimestamp(); !ts.IsZero() {
		md["creationTimestamp"] = ts.UTC().Format(time.RFC3339)
	}
	if t.Namespaced {
		md["namespace"] = fed.GetNamespace()
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kubefed.PropagatedVersionsResource.GroupVersion().String(),
		"kind":       kind,
		"metadata":   md,
		"status":     status,
	}}, true
}

// IsView reports whether pv is a view computed by the plane.
func IsView(pv *unstructured.Unstructured) bool {
	return pv.GetLabels()[ViewLabel] == ViewFromStatus
}

// Merge is what a list of records shows: every stored record, and every
// view whose name no stored record has in its namespace (KubeFed's
// controller, when it runs, writes the stored one; cellfed-controller
// removes a stored one when it writes its own record), in namespace and
// name order.
func Merge(stored, views []unstructured.Unstructured) []unstructured.Unstructured {
	key := func(u *unstructured.Unstructured) string { return u.GetNamespace() + "/" + u.GetName() }
	have := make(map[string]bool, len(stored))
	out := make([]unstructured.Unstructured, 0, len(stored)+len(views))
	for i := range stored {
		have[key(&stored[i])] = true
		out = append(out, stored[i])
	}
	for i := range views {
		if !have[key(&views[i])] {
			out = append(out, views[i])
		}
	}
	slices.SortStableFunc(out, func(a, b unstructured.Unstructured) int { return strings.Compare(key(&a), key(&b)) })
	return out
}

// TypeOf reads the view's Type from a FederatedTypeConfig; ok is false for
// a federated type outside types.kubefed.io (the plane stores no v1beta2
// status, so no record, for those) or one that does not say its kinds.
func TypeOf(ftc *unstructured.Unstructured) (t Type, ok bool) {
	kind, _, _ := unstructured.NestedString(ftc.Object, "spec", "targetType", "kind")
	scope, _, _ := unstructured.NestedString(ftc.Object, "spec", "targetType", "scope")
	group, _, _ := unstructured.NestedString(ftc.Object, "spec", "targetType", "group")
	plural, _, _ := unstructured.NestedString(ftc.Object, "spec", "targetType", "pluralName")
	fedGroup, _, _ := unstructured.NestedString(ftc.Object, "spec", "federatedType", "group")
	fedKind, _, _ := unstructured.NestedString(ftc.Object, "spec", "federatedType", "kind")
	fedPlural, _, _ := unstructured.NestedString(ftc.Object, "spec", "federatedType", "pluralName")
	if kind == "" || fedKind == "" || fedPlural == "" || fedGroup != fedtypes.GroupName {
		return Type{}, false
	}
	// A FederatedNamespace lives in the namespace it federates.
	namespaced := scope == "Namespaced" || (group == "" && plural == "namespaces")
	return Type{TargetKind: kind, FederatedKind: fedKind, FederatedAPIGroup: fedGroup, FederatedPlural: fedPlural, Namespaced: namespaced}, true
}

// Owners are the types whose record could be named name: those whose
// <kind>- prefix it has, of the scope asked for.
func Owners(types []Type, name string, namespaced bool) []Type {
	var out []Type
	for _, t := range types {
		if t.Namespaced == namespaced && strings.HasPrefix(name, strings.ToLower(t.TargetKind)+"-") && len(name) > len(t.TargetKind)+1 {
			out = append(out, t)
		}
	}
	return out
}

// Selected keeps the views a list's label and field selectors select (the
// fields a PropagatedVersion can be selected by: metadata.name and
// metadata.namespace).
func Selected(views []unstructured.Unstructured, labelSel labels.Selector, fieldSel fields.Selector) []unstructured.Unstructured {
	out := views[:0:0]
	for _, v := range views {
		if labelSel != nil && !labelSel.Matches(labels.Set(v.GetLabels())) {
			continue
		}
		if fieldSel != nil && !fieldSel.Matches(fields.Set{"metadata.name": v.GetName(), "metadata.namespace": v.GetNamespace()}) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// SelectsViews reports whether a list with label selector sel can hold
// views: not when sel requires the view label to be absent (StoredOnly)
// or to hold another value, so such a list is answered from storage alone,
// without reading any federated object.
func SelectsViews(sel labels.Selector) bool {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return false
	}
	for _, r := range reqs {
		if r.Key() == ViewLabel && !r.Matches(labels.Set{ViewLabel: ViewFromStatus}) {
			return false
		}
	}
	return true
}

// TableRow is view's row in a table of the given columns, as the API
// server prints a custom resource without printer columns: its name and
// its age; any other column is left empty. object is what the row
// carries of the view ("Metadata", the default, "Object" or "None").
func TableRow(view *unstructured.Unstructured, columns []metav1.TableColumnDefinition, object string, now time.Time) (metav1.TableRow, error) {
	row := metav1.TableRow{Cells: make([]any, len(columns))}
	for i, col := range columns {
		switch {
		case col.Name == "Name":
			row.Cells[i] = view.GetName()
		case col.Name == "Age" || col.Type == "date":
			if ts := view.GetCreationTimestamp(); !ts.IsZero() {
				row.Cells[i] = duration.HumanDuration(now.Sub(ts.Time))
			} else {
				row.Cells[i] = "<unknown>"
			}
		}
	}
	var content any
	switch object {
	case "None":
		return row, nil
	case "Object":
		content = view.Object
	default:
		md, _ := view.Object["metadata"].(map[string]any)
		content = map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": md}
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return row, fmt.Errorf("encoding the row of %s: %w", view.GetName(), err)
	}
	row.Object.Raw = raw
	return row, nil
}
