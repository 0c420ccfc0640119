package propagation

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1b1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
)

// The fixture: two physical clusters, m1 and m2; shop has cells a and b
// on m1 and c on m2; other has cell a on m1; m3 is broken.
func fixture() []Candidate {
	cell := func(ns, name, member string) Candidate {
		return Candidate{Name: cellv1alpha1.CellClusterName(ns, name), Member: member, Ready: true, Labels: map[string]string{
			cellv1alpha1.LabelTopologyType: cellv1alpha1.TopologyTypeCell, cellv1alpha1.LabelNamespace: ns, cellv1alpha1.LabelCell: name, "zone": name,
		}}
	}
	return []Candidate{
		{Name: "m1", Member: "M1", Ready: true, Labels: map[string]string{"region": "east"}},
		{Name: "m2", Member: "M2", Ready: true, Labels: map[string]string{"region": "west"}},
		{Name: "m3", ConfigError: errors.New("no token")},
		cell("shop", "a", "M1"), cell("shop", "b", "M1"), cell("shop", "c", "M2"), cell("other", "a", "M1"),
	}
}

func names(n ...string) []typesv1b1.ClusterReference {
	out := []typesv1b1.ClusterReference{}
	for _, s := range n {
		out = append(out, typesv1b1.ClusterReference{Name: s})
	}
	return out
}

func TestPlan(t *testing.T) {
	everything := &metav1.LabelSelector{}
	notReady := func(member string) func([]Candidate) {
		return func(cs []Candidate) {
			for i := range cs {
				if cs[i].Member == member {
					cs[i].Ready = false
				}
			}
		}
	}
	holds := func(member string) func([]Candidate) {
		return func(cs []Candidate) {
			for i := range cs {
				if cs[i].Member == member {
					cs[i].Holds = true
				}
			}
		}
	}
	dedicate := func(cluster, tenant string) func([]Candidate) {
		return func(cs []Candidate) {
			for i := range cs {
				if cs[i].Name == cluster {
					cs[i].Labels[cellv1alpha1.LabelTenant] = tenant
				}
			}
		}
	}
	drain := func(cluster string) func([]Candidate) {
		return func(cs []Candidate) {
			for i := range cs {
				if cs[i].Name == cluster {
					cs[i].Labels[cellv1alpha1.LabelDraining] = "true"
				}
			}
		}
	}
	tests := []struct {
		name   string
		in     Input
		change []func([]Candidate)
		want   []Intent
		notFed bool
	}{
		{
			name: "placement by name ensures exactly those clusters",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("m1", "shop.c")}},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"m1"}, Writer: "m1", Report: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Report: true},
			},
		},
		{
			name: "a name that is not a cluster is not selected",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("gone")}},
		},
		{
			name: "an explicit empty list selects nothing and removes what is there",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names()}, Recorded: sets.New("m2")},
			want: []Intent{{Verb: Remove, Member: "M2", Clusters: []string{"m2"}}},
		},
		{
			name: "the empty selector selects every physical cluster once, never a cell",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{ClusterSelector: everything}},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"m1"}, Writer: "m1", Report: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{"m2"}, Writer: "m2", Report: true},
				{Verb: Leave, Clusters: []string{"m3"}, Status: StatusConfigMalformed, Report: true},
			},
		},
		{
			name: "a selector without cellfed labels matches physical clusters by their labels",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "west"}}}},
			want: []Intent{{Verb: Ensure, Member: "M2", Clusters: []string{"m2"}, Writer: "m2", Report: true}},
		},
		{
			name: "a selector pinned to the namespace's cells selects cells",
			in: Input{Namespace: "shop", Placement: typesv1b1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				cellv1alpha1.LabelTopologyType: cellv1alpha1.TopologyTypeCell, cellv1alpha1.LabelNamespace: "shop", "zone": "c"}}}},
			want: []Intent{{Verb: Ensure, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Report: true}},
		},
		{
			name: "two selected cells of one member: the first is written, the other is a named conflict",
			in: Input{Namespace: "shop", Placement: typesv1b1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				cellv1alpha1.LabelTopologyType: cellv1alpha1.TopologyTypeCell, cellv1alpha1.LabelNamespace: "shop"}}}},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Leave, Member: "M1", Clusters: []string{"shop.b"}, Writer: "shop.a", Status: StatusPlacementConflict, Report: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Report: true},
			},
		},
		{
			name: "a physical cluster and its cell: the cluster's name sorts first and wins",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.a", "m1")}},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"m1"}, Writer: "m1", Report: true},
				{Verb: Leave, Member: "M1", Clusters: []string{"shop.a"}, Writer: "m1", Status: StatusPlacementConflict, Report: true},
			},
		},
		{
			name: "moving between two cells of one member rewrites in place, nothing is removed",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.b")}, Recorded: sets.New("shop.a")},
			want: []Intent{{Verb: Ensure, Member: "M1", Clusters: []string{"shop.b"}, Writer: "shop.b", Report: true}},
		},
		{
			name:   "an unready selected member is reported, not written",
			in:     Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("m1")}},
			change: []func([]Candidate){notReady("M1")},
			want:   []Intent{{Verb: Ensure, Member: "M1", Clusters: []string{"m1"}, Writer: "m1", Status: StatusClusterNotReady, Report: true}},
		},
		{
			name:   "an object left behind on an unselected member is removed",
			in:     Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("m1")}},
			change: []func([]Candidate){holds("M2")},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"m1"}, Writer: "m1", Report: true},
				{Verb: Remove, Member: "M2", Clusters: []string{"m2"}},
			},
		},
		{
			name:   "removal from an unready member waits and is reported",
			in:     Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names()}, Recorded: sets.New("shop.c")},
			change: []func([]Candidate){notReady("M2")},
			want:   []Intent{{Verb: Remove, Member: "M2", Clusters: []string{"shop.c"}, Status: StatusWaitingForRemoval, Report: true}},
		},
		{
			name: "deletion removes from every recorded or holding member, whatever the placement",
			in: Input{Namespace: "shop", Deleting: true, Placement: typesv1b1.Placement{ClusterSelector: everything},
				Recorded: sets.New("shop.a", "shop.b")},
			change: []func([]Candidate){holds("M2")},
			want: []Intent{
				{Verb: Remove, Member: "M2", Clusters: []string{"m2"}},
				{Verb: Remove, Member: "M1", Clusters: []string{"shop.a", "shop.b"}},
			},
		},
		{
			name: "a mask acts on placement ∩ mask only; placed clusters outside it are held back",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.a", "shop.c")}, Mask: sets.New("shop.a")},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Leave, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Status: StatusHeldBack, Report: true},
			},
		},
		{
			name:   "a held back cluster back from an outage is still held back",
			in:     Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.a", "shop.c")}, Mask: sets.New("shop.a"), Recorded: sets.New("shop.c")},
			change: []func([]Candidate){holds("M2")},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Leave, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Status: StatusHeldBack, Report: true, Holds: true},
			},
		},
		{
			name:   "a masked-out cluster that is down is held back, not waited for",
			in:     Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.a", "shop.c")}, Mask: sets.New("shop.a"), Recorded: sets.New("shop.a", "shop.c")},
			change: []func([]Candidate){notReady("M2")},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Leave, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Status: StatusHeldBack, Report: true},
			},
		},
		{
			name:   "a cluster removed from the placement but outside the mask keeps its object",
			in:     Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.a")}, Mask: sets.New("shop.a"), Recorded: sets.New("shop.a", "shop.c")},
			change: []func([]Candidate){holds("M2")},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Leave, Member: "M2", Clusters: []string{"shop.c"}, Status: StatusHeldBack, Report: true},
			},
		},
		{
			name: "an empty mask holds everything back",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.a")}, Mask: sets.New[string]()},
			want: []Intent{{Verb: Leave, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Status: StatusHeldBack, Report: true}},
		},
		{
			name: "deletion ignores the mask",
			in: Input{Namespace: "shop", Deleting: true, Placement: typesv1b1.Placement{Clusters: names("shop.a", "shop.c")},
				Mask: sets.New("shop.a"), Recorded: sets.New("shop.a", "shop.c")},
			want: []Intent{
				{Verb: Remove, Member: "M1", Clusters: []string{"shop.a"}},
				{Verb: Remove, Member: "M2", Clusters: []string{"shop.c"}},
			},
		},
		{
			name: "deletion visits a placed cluster neither the record nor the cache lists",
			in:   Input{Namespace: "shop", Deleting: true, Placement: typesv1b1.Placement{Clusters: names("shop.a", "shop.c")}, Recorded: sets.New("shop.a")},
			want: []Intent{
				{Verb: Remove, Member: "M1", Clusters: []string{"shop.a"}},
				{Verb: Remove, Member: "M2", Clusters: []string{"shop.c"}},
			},
		},
		{
			name:   "deletion waits for an unready member of a placed cluster it knows nothing of",
			in:     Input{Namespace: "shop", Deleting: true, Placement: typesv1b1.Placement{Clusters: names("shop.c")}},
			change: []func([]Candidate){notReady("M2")},
			want:   []Intent{{Verb: Remove, Member: "M2", Clusters: []string{"shop.c"}, Status: StatusWaitingForRemoval, Report: true}},
		},
		{
			name: "deletion visits only the placed member when nothing is recorded or held",
			in:   Input{Namespace: "shop", Deleting: true, Placement: typesv1b1.Placement{Clusters: names("shop.a")}},
			want: []Intent{{Verb: Remove, Member: "M1", Clusters: []string{"shop.a"}}},
		},
		{
			name:   "another namespace's cell is never written, read or removed: reported instead",
			in:     Input{Namespace: "shop", Tenant: "acme", Placement: typesv1b1.Placement{Clusters: names("other.a", "shop.c")}, Recorded: sets.New("other.a")},
			change: []func([]Candidate){holds("M1")},
			want: []Intent{
				{Verb: Remove, Member: "M1", Clusters: []string{"m1"}},
				{Verb: Leave, Clusters: []string{"other.a"}, Status: StatusOutsideWorkspace, Report: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Report: true},
			},
		},
		{
			name:   "a physical cluster dedicated to another tenant is outside the workspace",
			in:     Input{Namespace: "shop", Tenant: "acme", Placement: typesv1b1.Placement{Clusters: names("m2")}},
			change: []func([]Candidate){dedicate("m2", "globex")},
			want:   []Intent{{Verb: Leave, Clusters: []string{"m2"}, Status: StatusOutsideWorkspace, Report: true}},
		},
		{
			name:   "a physical cluster dedicated to the object's tenant is in its workspace",
			in:     Input{Namespace: "shop", Tenant: "acme", Placement: typesv1b1.Placement{Clusters: names("m2")}},
			change: []func([]Candidate){dedicate("m2", "acme")},
			want:   []Intent{{Verb: Ensure, Member: "M2", Clusters: []string{"m2"}, Writer: "m2", Report: true}},
		},
		{
			name:   "deleting forgets a recorded cluster outside the workspace without touching it",
			in:     Input{Namespace: "shop", Tenant: "acme", Deleting: true, Recorded: sets.New("m2", "shop.a")},
			change: []func([]Candidate){dedicate("m2", "globex")},
			want:   []Intent{{Verb: Remove, Member: "M1", Clusters: []string{"shop.a"}}},
		},
		{
			name:   "a cluster-scoped object reaches every cluster",
			in:     Input{Placement: typesv1b1.Placement{Clusters: names("m2")}},
			change: []func([]Candidate){dedicate("m2", "globex")},
			want:   []Intent{{Verb: Ensure, Member: "M2", Clusters: []string{"m2"}, Writer: "m2", Report: true}},
		},
		{
			name: "a misconfigured selected or recorded cluster is reported",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("m3")}},
			want: []Intent{{Verb: Leave, Clusters: []string{"m3"}, Status: StatusConfigMalformed, Report: true}},
		},
		{
			name:   "namespace not federated: physical clusters are not selected, cells imply their namespace",
			in:     Input{Namespace: "shop", NamespaceRule: true, Placement: typesv1b1.Placement{Clusters: names("m1", "shop.c")}},
			want:   []Intent{{Verb: Ensure, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Report: true}},
			notFed: true,
		},
		{
			name: "the FederatedNamespace's placement intersects physical clusters",
			in: Input{Namespace: "shop", NamespaceRule: true, NamespacePlacement: &typesv1b1.Placement{Clusters: names("m2")},
				Placement: typesv1b1.Placement{ClusterSelector: everything}},
			change: []func([]Candidate){holds("M1")},
			want: []Intent{
				{Verb: Release, Member: "M1", Clusters: []string{"m1"}},
				{Verb: Ensure, Member: "M2", Clusters: []string{"m2"}, Writer: "m2", Report: true},
			},
		},
		{
			name: "a placed cell that does not exist is reported CellNotFound; another namespace's name is not a cell here",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.c", "shop.gone", "other.gone")}},
			want: []Intent{
				{Verb: Ensure, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Report: true},
				{Verb: Leave, Clusters: []string{"shop.gone"}, Status: StatusCellNotFound, Report: true},
			},
		},
		{
			name:   "a draining cell is never written and what it holds is removed, outside the mask too",
			in:     Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.a", "shop.c")}, Mask: sets.New("shop.c")},
			change: []func([]Candidate){drain("shop.a")},
			want: []Intent{
				{Verb: Remove, Member: "M1", Clusters: []string{"shop.a"}},
				{Verb: Ensure, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Report: true},
			},
		},
		{
			name:   "a draining cell's member that is down: the removal waits for it",
			in:     Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.c")}, Recorded: sets.New("shop.c")},
			change: []func([]Candidate){drain("shop.c"), notReady("M2")},
			want:   []Intent{{Verb: Remove, Member: "M2", Clusters: []string{"shop.c"}, Status: StatusWaitingForRemoval, Report: true}},
		},
		{
			name: "without the namespace rule, physical clusters need no FederatedNamespace",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("m1")}},
			want: []Intent{{Verb: Ensure, Member: "M1", Clusters: []string{"m1"}, Writer: "m1", Report: true}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := planOn(t, tc.in, fixture(), tc.change, tc.want)
			if got.NamespaceNotFederated != tc.notFed {
				t.Errorf("NamespaceNotFederated = %v, want %v", got.NamespaceNotFederated, tc.notFed)
			}
		})
	}
}

func TestPlanRejectsBadSelector(t *testing.T) {
	_, err := Plan(Input{Candidates: fixture(), Placement: typesv1b1.Placement{ClusterSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Near"}}}}})
	if err == nil {
		t.Fatal("a selector with an unknown operator was accepted")
	}
}

func TestNextRecord(t *testing.T) {
	w := work{templateVersion: "t2", overridesVersion: "o"}
	rec := &propagated{templateVersion: "t1", overridesVersion: "o", clusters: map[string]string{"shop.a": "gen:3", "m2": "gen:5", "m3": "rv:9"}}
	in := Input{Candidates: fixture()}
	tests := []struct {
		name    string
		intents []Intent
		results []result
		want    map[string]string
	}{
		{
			name:    "a written cluster records the member's version; a move drops the old cell",
			intents: []Intent{{Verb: Ensure, Member: "M1", Clusters: []string{"shop.b"}, Writer: "shop.b"}},
			results: []result{{status: StatusOK, version: "gen:4"}},
			want:    map[string]string{"shop.b": "gen:4"},
		},
		{
			name:    "an unready member keeps its recorded clusters, with versions voided by the new template",
			intents: []Intent{{Verb: Ensure, Member: "M1", Clusters: []string{"shop.b"}, Writer: "shop.b", Status: StatusClusterNotReady}},
			results: []result{{status: StatusClusterNotReady, unknown: true}},
			want:    map[string]string{"shop.a": ""},
		},
		{
			name:    "a create that timed out may have landed: the cluster is recorded",
			intents: []Intent{{Verb: Ensure, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c"}},
			results: []result{{status: StatusCreationTimedOut, unknown: true, present: true}},
			want:    map[string]string{"m2": "", "shop.c": ""},
		},
		{
			name:    "a removal done forgets the cluster; a failed one keeps it",
			intents: []Intent{{Verb: Remove, Member: "M1", Clusters: []string{"shop.a"}}, {Verb: Remove, Member: "M2", Clusters: []string{"m2"}}},
			results: []result{{status: StatusOK}, {status: StatusDeletionFailed, unknown: true, present: true}},
			want:    map[string]string{"m2": ""},
		},
		{
			name: "a held-back cluster its member holds is recorded, recorded before or not",
			intents: []Intent{
				{Verb: Leave, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Status: StatusHeldBack, Holds: true},
				{Verb: Leave, Member: "M3", Clusters: []string{"m3"}, Writer: "m3", Status: StatusHeldBack},
			},
			want: map[string]string{"m2": "", "shop.c": "", "m3": ""},
		},
		{
			name:    "a misconfigured cluster stays recorded; a conflict records nothing",
			intents: []Intent{{Verb: Leave, Clusters: []string{"m3"}, Status: StatusConfigMalformed}, {Verb: Leave, Member: "M1", Clusters: []string{"shop.b"}, Status: StatusPlacementConflict}},
			results: []result{{status: StatusConfigMalformed, unknown: true}, {status: StatusPlacementConflict, unknown: true}},
			want:    map[string]string{"m3": ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			results := tc.results
			if results == nil { // outcomes the plan knows
				for _, it := range tc.intents {
					results = append(results, knownOutcome(it))
				}
			}
			got := nextRecord(rec, w, in, tc.intents, results)
			if got.templateVersion != "t2" || got.overridesVersion != "o" {
				t.Errorf("versions = %q/%q, want t2/o", got.templateVersion, got.overridesVersion)
			}
			if !reflect.DeepEqual(got.clusters, tc.want) {
				t.Errorf("clusters = %v, want %v", got.clusters, tc.want)
			}
		})
	}
}

// TestKubeFedVersions checks our template and override versions against
// KubeFed's own, computed by KubeFed v0.10.0's code in hack/kubefed
// (TestVersionsAreKubeFeds there proves the file holds KubeFed's values).
func TestKubeFedVersions(t *testing.T) {
	raw, err := os.ReadFile("testdata/kubefed-versions.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		Name            string          `json:"name"`
		Object          json.RawMessage `json:"object"`
		TemplateVersion string          `json:"templateVersion"`
		OverrideVersion string          `json:"overrideVersion"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(v.Object); err != nil {
				t.Fatal(err)
			}
			tv, err := templateVersion(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			ov, err := overridesVersion(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			if tv != v.TemplateVersion || ov != v.OverrideVersion {
				t.Errorf("template %q override %q, KubeFed's are %q %q", tv, ov, v.TemplateVersion, v.OverrideVersion)
			}
		})
	}
}

func TestObjectVersion(t *testing.T) {
	for _, tc := range []struct {
		obj  map[string]any
		want string
	}{
		{map[string]any{"metadata": map[string]any{"generation": int64(4), "resourceVersion": "77"}}, "gen:4"},
		{map[string]any{"metadata": map[string]any{"resourceVersion": "77"}}, "rv:77"},
	} {
		if got := objectVersion(&unstructured.Unstructured{Object: tc.obj}); got != tc.want {
			t.Errorf("objectVersion(%v) = %q, want %q", tc.obj, got, tc.want)
		}
	}
}

// TestPlanMoves: cell shop.a moves from member M1 to M2 through its move
// cluster shop.a.move.
func TestPlanMoves(t *testing.T) {
	moveCluster := func(mode string) Candidate {
		return Candidate{Name: cellv1alpha1.MoveClusterName("shop", "a"), Member: "M2", Ready: true, Labels: map[string]string{
			cellv1alpha1.LabelTopologyType: cellv1alpha1.TopologyTypeCell, cellv1alpha1.LabelNamespace: "shop", cellv1alpha1.LabelCell: "a", "zone": "a",
			cellv1alpha1.LabelMove: mode,
		}}
	}
	holdsReady := func(member string, ready bool) func([]Candidate) {
		return func(cs []Candidate) {
			for i := range cs {
				if cs[i].Member == member {
					cs[i].Holds, cs[i].ObjectReady = true, ready
				}
			}
		}
	}
	onA := typesv1b1.Placement{Clusters: names("shop.a")}
	admitted := sets.New("shop.a")
	move := "shop.a.move"
	tests := []struct {
		name   string
		in     Input
		mode   string
		change []func([]Candidate)
		want   []Intent
	}{
		{
			name: "not admitted yet: only the cell's own copy",
			in:   Input{Namespace: "shop", Placement: onA},
			mode: cellv1alpha1.MoveCopy,
			want: []Intent{{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true}},
		},
		{
			name: "admitted: copied to the move cluster with the cell's overrides, the cell's copy kept",
			in:   Input{Namespace: "shop", Placement: onA, MoveAdmitted: admitted},
			mode: cellv1alpha1.MoveCopy,
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", Report: true},
			},
		},
		{
			name:   "copied but not ready there: both kept, admitted or not",
			in:     Input{Namespace: "shop", Placement: onA, Recorded: sets.New("shop.a", move)},
			mode:   cellv1alpha1.MoveCopy,
			change: []func([]Candidate){holdsReady("M2", false)},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", Report: true},
			},
		},
		{
			name:   "ready there: the cell's copy is removed, whatever the mask says",
			in:     Input{Namespace: "shop", Placement: onA, Recorded: sets.New("shop.a", move), Mask: sets.New("shop.a")},
			mode:   cellv1alpha1.MoveCopy,
			change: []func([]Candidate){holdsReady("M2", true)},
			want: []Intent{
				{Verb: Remove, Member: "M1", Clusters: []string{"shop.a"}},
				{Verb: Ensure, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", Report: true},
			},
		},
		{
			name: "held back on the cell: held back on the move cluster, nothing removed",
			in:   Input{Namespace: "shop", Placement: onA, MoveAdmitted: admitted, Recorded: sets.New("shop.a"), Mask: sets.New("shop.c")},
			mode: cellv1alpha1.MoveCopy,
			want: []Intent{
				{Verb: Leave, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Status: StatusHeldBack, Report: true},
				{Verb: Leave, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", Status: StatusHeldBack, Report: true},
			},
		},
		{
			name:   "held back on the cell, holding a copy: that copy moves as it is",
			in:     Input{Namespace: "shop", Placement: onA, MoveAdmitted: admitted, Recorded: sets.New("shop.a"), Mask: sets.New("shop.c")},
			mode:   cellv1alpha1.MoveCopy,
			change: []func([]Candidate){holdsReady("M1", true)},
			want: []Intent{
				{Verb: Leave, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Status: StatusHeldBack, Report: true, Holds: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", CopyFrom: "M1", Report: true},
			},
		},
		{
			name:   "held back, the held-back copy ready on the move cluster: the cell's copy goes",
			in:     Input{Namespace: "shop", Placement: onA, Recorded: sets.New("shop.a", move), Mask: sets.New("shop.c")},
			mode:   cellv1alpha1.MoveCopy,
			change: []func([]Candidate){holdsReady("M1", true), holdsReady("M2", true)},
			want: []Intent{
				{Verb: Remove, Member: "M1", Clusters: []string{"shop.a"}},
				{Verb: Leave, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", Status: StatusHeldBack, Report: true, Holds: true},
			},
		},
		{
			// A controller killed after copying, before its record was
			// written: the copy on the move cluster is what the member's
			// cache shows, and it stays in the record (Holds) while the
			// cell's own copy goes.
			name:   "held back, the copy ready on the move cluster but not recorded: it is kept as recorded",
			in:     Input{Namespace: "shop", Placement: onA, Recorded: sets.New("shop.a"), Mask: sets.New("shop.c")},
			mode:   cellv1alpha1.MoveCopy,
			change: []func([]Candidate){holdsReady("M1", true), holdsReady("M2", true)},
			want: []Intent{
				{Verb: Remove, Member: "M1", Clusters: []string{"shop.a"}},
				{Verb: Leave, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", Status: StatusHeldBack, Report: true, Holds: true},
			},
		},
		{
			name:   "held back and moved: the move cluster keeps its copy as the cell would",
			in:     Input{Namespace: "shop", Placement: onA, Recorded: sets.New(move), Mask: sets.New("shop.c")},
			mode:   cellv1alpha1.MoveCopy,
			change: []func([]Candidate){holdsReady("M2", true)},
			want: []Intent{
				{Verb: Leave, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", Status: StatusHeldBack, Report: true, Holds: true},
			},
		},
		{
			name: "a selector matching the cell's labels never selects its move cluster by itself",
			in: Input{Namespace: "shop", Placement: typesv1b1.Placement{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				cellv1alpha1.LabelTopologyType: cellv1alpha1.TopologyTypeCell, cellv1alpha1.LabelNamespace: "shop", "zone": "a"}}}},
			mode: cellv1alpha1.MoveCopy,
			want: []Intent{{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true}},
		},
		{
			name: "another cell of the new member is written first; the move is its conflict",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.a", "shop.c")}, MoveAdmitted: admitted},
			mode: cellv1alpha1.MoveCopy,
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Leave, Member: "M2", Clusters: []string{move}, Writer: "shop.c", Status: StatusPlacementConflict, Report: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{"shop.c"}, Writer: "shop.c", Report: true},
			},
		},
		{
			name: "the cell not placed: nothing moves, a stray copy is removed",
			in:   Input{Namespace: "shop", Placement: typesv1b1.Placement{Clusters: names("shop.b")}, MoveAdmitted: admitted, Recorded: sets.New(move)},
			mode: cellv1alpha1.MoveCopy,
			want: []Intent{
				{Verb: Remove, Member: "M2", Clusters: []string{move}},
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.b"}, Writer: "shop.b", Report: true},
			},
		},
		{
			name: "undo, nothing copied: only the cell's copy",
			in:   Input{Namespace: "shop", Placement: onA, MoveAdmitted: admitted},
			mode: cellv1alpha1.MoveUndo,
			want: []Intent{{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true}},
		},
		{
			name:   "undo of a moved object: ensured on the cell again, the copy kept until that is ready",
			in:     Input{Namespace: "shop", Placement: onA, Recorded: sets.New(move)},
			mode:   cellv1alpha1.MoveUndo,
			change: []func([]Candidate){holdsReady("M2", true)},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Ensure, Member: "M2", Clusters: []string{move}, Writer: move, OverridesOf: "shop.a", Report: true},
			},
		},
		{
			name:   "undo once the cell's copy is ready: the move cluster's copy goes",
			in:     Input{Namespace: "shop", Placement: onA, Recorded: sets.New("shop.a", move)},
			mode:   cellv1alpha1.MoveUndo,
			change: []func([]Candidate){holdsReady("M1", true), holdsReady("M2", true)},
			want: []Intent{
				{Verb: Ensure, Member: "M1", Clusters: []string{"shop.a"}, Writer: "shop.a", Report: true},
				{Verb: Remove, Member: "M2", Clusters: []string{move}},
			},
		},
		{
			name: "deleted: the move cluster's copy goes too",
			in:   Input{Namespace: "shop", Placement: onA, Deleting: true, Recorded: sets.New("shop.a", move)},
			mode: cellv1alpha1.MoveCopy,
			want: []Intent{
				{Verb: Remove, Member: "M1", Clusters: []string{"shop.a"}},
				{Verb: Remove, Member: "M2", Clusters: []string{move}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			planOn(t, tc.in, append(fixture(), moveCluster(tc.mode)), tc.change, tc.want)
		})
	}
}

// planOn plans in on candidates, changed by change, and checks the
// intents against want.
func planOn(t *testing.T, in Input, candidates []Candidate, change []func([]Candidate), want []Intent) Decision {
	t.Helper()
	in.Candidates = candidates
	for _, ch := range change {
		ch(in.Candidates)
	}
	if in.Recorded == nil {
		in.Recorded = sets.New[string]()
	}
	got, err := Plan(in)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if !reflect.DeepEqual(got.Intents, want) {
		t.Errorf("intents:\n got %+v\nwant %+v", got.Intents, want)
	}
	return got
}
