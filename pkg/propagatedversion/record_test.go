package propagatedversion

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestVersionsContent checks a record's way into a status and back: the
// content is KubeFed's PropagatedVersion status (clusters in name order,
// unknown versions kept as ""), the typed field encodes to the same
// content, and reading it back gives the record.
func TestVersionsContent(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Versions
		want map[string]any
	}{
		{"empty is no record", Versions{TemplateVersion: "t", Clusters: map[string]string{}}, nil},
		{"nil clusters is no record", Versions{TemplateVersion: "t"}, nil},
		{"clusters in name order", Versions{TemplateVersion: "t", OverridesVersion: "o", Clusters: map[string]string{"b": "gen:2", "a": "rv:7"}},
			map[string]any{"templateVersion": "t", "overridesVersion": "o", "clusterVersions": []any{
				map[string]any{"clusterName": "a", "version": "rv:7"}, map[string]any{"clusterName": "b", "version": "gen:2"}}}},
		{"an unknown version stays listed", Versions{TemplateVersion: "t", OverridesVersion: "o", Clusters: map[string]string{"down": ""}},
			map[string]any{"templateVersion": "t", "overridesVersion": "o", "clusterVersions": []any{
				map[string]any{"clusterName": "down", "version": ""}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.Content()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Content() = %v, want %v", got, tc.want)
			}
			typed := tc.in.Record()
			if (typed == nil) != (tc.want == nil) {
				t.Fatalf("Record() = %v, want nil %v", typed, tc.want == nil)
			}
			if typed != nil {
				m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
				if err != nil {
					t.Fatal(err)
				}
				if a, b := mustJSON(t, m), mustJSON(t, got); a != b {
					t.Errorf("typed record encodes as %s, content is %s", a, b)
				}
			}
			back := FromContent(got)
			if !back.Equal(tc.in) {
				t.Errorf("FromContent(Content()) = %+v, want %+v", back, tc.in)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestVersionsEqual(t *testing.T) {
	base := Versions{TemplateVersion: "t", OverridesVersion: "o", Clusters: map[string]string{"a": "gen:1"}}
	for _, tc := range []struct {
		name string
		a, b Versions
		want bool
	}{
		{"same", base, Versions{TemplateVersion: "t", OverridesVersion: "o", Clusters: map[string]string{"a": "gen:1"}}, true},
		{"other template", base, Versions{TemplateVersion: "x", OverridesVersion: "o", Clusters: map[string]string{"a": "gen:1"}}, false},
		{"other overrides", base, Versions{TemplateVersion: "t", OverridesVersion: "x", Clusters: map[string]string{"a": "gen:1"}}, false},
		{"other version", base, Versions{TemplateVersion: "t", OverridesVersion: "o", Clusters: map[string]string{"a": "gen:2"}}, false},
		{"another cluster", base, Versions{TemplateVersion: "t", OverridesVersion: "o", Clusters: map[string]string{"a": "gen:1", "b": ""}}, false},
		{"empty ones whatever their versions", Versions{TemplateVersion: "t"}, Versions{OverridesVersion: "o", Clusters: map[string]string{}}, true},
		{"empty and not", Versions{}, base, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Equal(tc.b); got != tc.want {
				t.Errorf("Equal = %v, want %v", got, tc.want)
			}
		})
	}
}

func fedObject(ns, name string, record map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta2", "kind": "FederatedConfigMap",
		"metadata": map[string]any{"name": name, "uid": "u-1", "resourceVersion": "42", "creationTimestamp": "2026-11-26T10:00:00Z"},
		"status":   map[string]any{"propagated": "1/1"},
	}}
	if ns != "" {
		u.SetNamespace(ns)
	}
	if record != nil {
		u.Object["status"].(map[string]any)["record"] = record
	}
	return u
}

// TestView checks the PropagatedVersion the plane serves for a federated
// object: KubeFed's name, kind, owner and status, marked as a view, and
// none without a record.
func TestView(t *testing.T) {
	cm := Type{TargetKind: "ConfigMap", FederatedKind: "FederatedConfigMap", FederatedAPIGroup: "types.kubefed.io", FederatedPlural: "federatedconfigmaps", Namespaced: true}
	cr := Type{TargetKind: "ClusterRole", FederatedKind: "FederatedClusterRole", FederatedAPIGroup: "types.kubefed.io", FederatedPlural: "federatedclusterroles"}
	rec := Versions{TemplateVersion: "t", OverridesVersion: "o", Clusters: map[string]string{"m1": "rv:9"}}.Content()
	for _, tc := range []struct {
		name   string
		typ    Type
		fed    *unstructured.Unstructured
		want   map[string]any
		wantOK bool
	}{
		{"no record, no view", cm, fedObject("shop", "web", nil), nil, false},
		{"namespaced", cm, fedObject("shop", "web", rec), map[string]any{
			"apiVersion": "core.kubefed.io/v1alpha1", "kind": "PropagatedVersion",
			"metadata": map[string]any{
				"name": "configmap-web", "namespace": "shop", "resourceVersion": "42", "creationTimestamp": "2026-11-26T10:00:00Z",
				"labels":          map[string]any{ViewLabel: ViewFromStatus},
				"ownerReferences": []any{map[string]any{"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedConfigMap", "name": "web", "uid": "u-1"}},
			},
			"status": rec,
		}, true},
		{"cluster-scoped", cr, fedObject("", "reader", rec), map[string]any{
			"apiVersion": "core.kubefed.io/v1alpha1", "kind": "ClusterPropagatedVersion",
			"metadata": map[string]any{
				"name": "clusterrole-reader", "resourceVersion": "42", "creationTimestamp": "2026-11-26T10:00:00Z",
				"labels":          map[string]any{ViewLabel: ViewFromStatus},
				"ownerReferences": []any{map[string]any{"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedClusterRole", "name": "reader", "uid": "u-1"}},
			},
			"status": rec,
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := View(tc.typ, tc.fed)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if a, b := mustJSON(t, got.Object), mustJSON(t, tc.want); a != b {
				t.Errorf("view\n%s\nwant\n%s", a, b)
			}
			if !IsView(got) {
				t.Error("IsView = false")
			}
		})
	}
}

func named(ns, name string, view bool) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"apiVersion": "core.kubefed.io/v1alpha1", "kind": Kind, "metadata": map[string]any{"name": name}}}
	if ns != "" {
		u.SetNamespace(ns)
	}
	if view {
		u.SetLabels(map[string]string{ViewLabel: ViewFromStatus})
	}
	return u
}

func keys(us []unstructured.Unstructured) []string {
	out := []string{}
	for _, u := range us {
		k := u.GetNamespace() + "/" + u.GetName()
		if IsView(&u) {
			k += " (view)"
		}
		out = append(out, k)
	}
	return out
}

// TestMerge checks that a stored record wins over a view of the same name
// in the same namespace, and that the list is in namespace and name order.
func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name          string
		stored, views []unstructured.Unstructured
		want          []string
	}{
		{"views only", nil, []unstructured.Unstructured{named("b", "x", true), named("a", "y", true)}, []string{"a/y (view)", "b/x (view)"}},
		{"stored only", []unstructured.Unstructured{named("a", "x", false)}, nil, []string{"a/x"}},
		{"stored wins", []unstructured.Unstructured{named("a", "x", false)}, []unstructured.Unstructured{named("a", "x", true), named("a", "w", true)},
			[]string{"a/w (view)", "a/x"}},
		{"same name, other namespace", []unstructured.Unstructured{named("a", "x", false)}, []unstructured.Unstructured{named("b", "x", true)},
			[]string{"a/x", "b/x (view)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := keys(Merge(tc.stored, tc.views)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Merge = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTypeOfAndOwners(t *testing.T) {
	ftc := func(kind, scope, group, plural, fedGroup string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"targetType":    map[string]any{"kind": kind, "scope": scope, "group": group, "pluralName": plural},
			"federatedType": map[string]any{"kind": "Federated" + kind, "group": fedGroup, "pluralName": "federated" + plural},
		}}}
	}
	for _, tc := range []struct {
		name   string
		ftc    *unstructured.Unstructured
		want   Type
		wantOK bool
	}{
		{"namespaced", ftc("ConfigMap", "Namespaced", "", "configmaps", "types.kubefed.io"),
			Type{TargetKind: "ConfigMap", FederatedKind: "FederatedConfigMap", FederatedAPIGroup: "types.kubefed.io", FederatedPlural: "federatedconfigmaps", Namespaced: true}, true},
		{"cluster-scoped", ftc("ClusterRole", "Cluster", "rbac.authorization.k8s.io", "clusterroles", "types.kubefed.io"),
			Type{TargetKind: "ClusterRole", FederatedKind: "FederatedClusterRole", FederatedAPIGroup: "types.kubefed.io", FederatedPlural: "federatedclusterroles"}, true},
		{"a FederatedNamespace is namespaced", ftc("Namespace", "Cluster", "", "namespaces", "types.kubefed.io"),
			Type{TargetKind: "Namespace", FederatedKind: "FederatedNamespace", FederatedAPIGroup: "types.kubefed.io", FederatedPlural: "federatednamespaces", Namespaced: true}, true},
		{"another group keeps stored records", ftc("Widget", "Namespaced", "example.com", "widgets", "example.com"), Type{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := TypeOf(tc.ftc)
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("TypeOf = %+v, %v; want %+v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
	cm := Type{TargetKind: "ConfigMap", Namespaced: true}
	cfg := Type{TargetKind: "Config", Namespaced: true}
	cr := Type{TargetKind: "ClusterRole"}
	types := []Type{cm, cfg, cr}
	for _, tc := range []struct {
		name       string
		record     string
		namespaced bool
		want       []Type
	}{
		{"by prefix", "configmap-web", true, []Type{cm}},
		{"prefix of another kind's prefix", "config-web", true, []Type{cfg}},
		{"scope", "clusterrole-reader", false, []Type{cr}},
		{"wrong scope", "clusterrole-reader", true, nil},
		{"no name after the prefix", "configmap-", true, nil},
		{"no kind", "web", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Owners(types, tc.record, tc.namespaced); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Owners = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSelectedAndTableRow(t *testing.T) {
	views := []unstructured.Unstructured{named("a", "configmap-x", true), named("b", "configmap-y", true)}
	for _, tc := range []struct {
		name         string
		label, field string
		want         []string
	}{
		{"everything", "", "", []string{"a/configmap-x (view)", "b/configmap-y (view)"}},
		{"stored only", StoredOnly, "", []string{}},
		{"views", ViewLabel + "=" + ViewFromStatus, "", []string{"a/configmap-x (view)", "b/configmap-y (view)"}},
		{"by name", "", "metadata.name=configmap-y", []string{"b/configmap-y (view)"}},
		{"by namespace", "", "metadata.namespace=a", []string{"a/configmap-x (view)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls, err := labels.Parse(tc.label)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := fields.ParseSelector(tc.field)
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(Selected(views, ls, fs)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Selected = %v, want %v", got, tc.want)
			}
		})
	}

	view := named("a", "configmap-x", true)
	view.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)))
	cols := []metav1.TableColumnDefinition{{Name: "Name"}, {Name: "Age", Type: "date"}, {Name: "Other"}}
	now := time.Date(2026, 11, 26, 10, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, object string
		wantKind     string
	}{
		{"metadata by default", "", "PartialObjectMetadata"},
		{"the object", "Object", ""},
		{"nothing", "None", "-"},
	} {
		t.Run("row: "+tc.name, func(t *testing.T) {
			row, err := TableRow(&view, cols, tc.object, now)
			if err != nil {
				t.Fatal(err)
			}
			if want := []any{"configmap-x", "5m", nil}; !reflect.DeepEqual(row.Cells, want) {
				t.Errorf("cells %v, want %v", row.Cells, want)
			}
			if tc.wantKind == "-" {
				if row.Object.Raw != nil {
					t.Errorf("object %s, want none", row.Object.Raw)
				}
				return
			}
			var got unstructured.Unstructured
			if err := got.UnmarshalJSON(row.Object.Raw); err != nil {
				t.Fatalf("row object %s: %v", row.Object.Raw, err)
			}
			if got.GetName() != "configmap-x" || got.GetNamespace() != "a" || (tc.wantKind != "" && got.GetKind() != tc.wantKind) {
				t.Errorf("row object %s", row.Object.Raw)
			}
		})
	}
}

func TestSelectsViews(t *testing.T) {
	for _, tc := range []struct {
		label string
		want  bool
	}{
		{"", true},
		{StoredOnly, false},
		{ViewLabel, true},
		{ViewLabel + "=" + ViewFromStatus, true},
		{ViewLabel + "!=" + ViewFromStatus, false},
		{ViewLabel + "=other", false},
		{ViewLabel + " in (" + ViewFromStatus + ",other)", true},
		{ViewLabel + " notin (other)", true},
		{"app=web", true},
		{"app=web," + StoredOnly, false},
	} {
		t.Run(tc.label, func(t *testing.T) {
			sel, err := labels.Parse(tc.label)
			if err != nil {
				t.Fatal(err)
			}
			got := SelectsViews(sel)
			if got != tc.want {
				t.Errorf("SelectsViews(%q) = %v, want %v", tc.label, got, tc.want)
			}
			// The shortcut never drops a view Selected would keep.
			view := named("a", "configmap-x", true)
			if !got && len(Selected([]unstructured.Unstructured{view}, sel, nil)) > 0 {
				t.Errorf("SelectsViews(%q) = false, but Selected keeps a view", tc.label)
			}
		})
	}
	if SelectsViews(labels.Nothing()) {
		t.Error("SelectsViews(Nothing) = true")
	}
}
