package cellfedctl

import (
	"bytes"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	fedcommon "sigs.k8s.io/kubefed/pkg/apis/core/common"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

func TestClusterReady(t *testing.T) {
	cond := func(typ fedcommon.ClusterConditionType, status corev1.ConditionStatus, reason string) fedv1beta1.ClusterCondition {
		c := fedv1beta1.ClusterCondition{Type: typ, Status: status}
		if reason != "" {
			c.Reason = ptr.To(reason)
		}
		return c
	}
	tests := []struct {
		name                   string
		conds                  []fedv1beta1.ClusterCondition
		wantStatus, wantReason string
	}{
		{"no status", nil, "Unknown", ""},
		{"ready", []fedv1beta1.ClusterCondition{cond(fedcommon.ClusterReady, corev1.ConditionTrue, "ClusterReady")}, "True", "ClusterReady"},
		{"not ready", []fedv1beta1.ClusterCondition{cond(fedcommon.ClusterReady, corev1.ConditionFalse, "ClusterNotReady")}, "False", "ClusterNotReady"},
		{"offline alone", []fedv1beta1.ClusterCondition{cond(fedcommon.ClusterOffline, corev1.ConditionTrue, "")}, "False", "Offline"},
		{"offline with a reason", []fedv1beta1.ClusterCondition{cond(fedcommon.ClusterOffline, corev1.ConditionTrue, "ClusterNotReachable")}, "False", "ClusterNotReachable"},
		{"Ready wins over Offline", []fedv1beta1.ClusterCondition{cond(fedcommon.ClusterOffline, corev1.ConditionTrue, ""), cond(fedcommon.ClusterReady, corev1.ConditionUnknown, "")}, "Unknown", ""},
		{"not offline", []fedv1beta1.ClusterCondition{cond(fedcommon.ClusterOffline, corev1.ConditionFalse, "")}, "Unknown", ""},
	}
	for _, tc := range tests {
		status, reason, _ := clusterReady(tc.conds)
		if status != tc.wantStatus || reason != tc.wantReason {
			t.Errorf("%s: clusterReady = %q %q, want %q %q", tc.name, status, reason, tc.wantStatus, tc.wantReason)
		}
	}
}

func statusFixture() ([]fedv1beta1.KubeFedCluster, []cellv1alpha1.Cell) {
	cluster := func(name, endpoint string, labels map[string]string, status fedv1beta1.KubeFedClusterStatus) fedv1beta1.KubeFedCluster {
		return fedv1beta1.KubeFedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: fedv1beta1.KubeFedClusterSpec{APIEndpoint: endpoint}, Status: status}
	}
	ready := fedv1beta1.KubeFedClusterStatus{KubernetesVersion: "v1.36.4", Conditions: []fedv1beta1.ClusterCondition{{Type: fedcommon.ClusterReady, Status: corev1.ConditionTrue}}}
	clusters := []fedv1beta1.KubeFedCluster{
		cluster("m2", "https://10.0.0.2:6443", nil, fedv1beta1.KubeFedClusterStatus{}),
		cluster("m1", "https://10.0.0.1:6443", nil, ready),
		cluster("shop.rz00a", "https://10.0.0.1:6443", map[string]string{cellv1alpha1.LabelTopologyType: "cell"}, ready),
	}
	cell := func(ns, name, cluster, kfc string, conds ...metav1.Condition) cellv1alpha1.Cell {
		return cellv1alpha1.Cell{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: cellv1alpha1.CellSpec{Cluster: cluster},
			Status: cellv1alpha1.CellStatus{KubeFedCluster: kfc, Conditions: conds}}
	}
	cells := []cellv1alpha1.Cell{
		cell("shop", "rz00b", "m1", ""),
		cell("shop", "rz00a", "m1", "shop.rz00a",
			metav1.Condition{Type: cellv1alpha1.CellClusterFound, Status: metav1.ConditionTrue},
			metav1.Condition{Type: cellv1alpha1.CellReady, Status: metav1.ConditionTrue, Reason: "ClusterReady"}),
		cell("acme", "z", "gone", "", metav1.Condition{Type: cellv1alpha1.CellReady, Status: metav1.ConditionFalse, Reason: "ClusterNotFound"}),
	}
	return clusters, cells
}

func TestBuildStatus(t *testing.T) {
	clusters, cells := statusFixture()
	got := BuildStatus(clusters, cells)
	want := Status{
		Clusters: []ClusterStatus{
			{Name: "m1", Endpoint: "https://10.0.0.1:6443", Ready: "True", KubernetesVersion: "v1.36.4", Cells: 2},
			{Name: "m2", Endpoint: "https://10.0.0.2:6443", Ready: "Unknown", Cells: 0},
		},
		Cells: []CellStatus{
			{Namespace: "acme", Name: "z", Cluster: "gone", Ready: "False", Reason: "ClusterNotFound", PerCellCluster: "acme.z"},
			{Namespace: "shop", Name: "rz00a", Cluster: "m1", Ready: "True", Reason: "ClusterReady", PerCellCluster: "shop.rz00a"},
			{Namespace: "shop", Name: "rz00b", Cluster: "m1", Ready: "Unknown", PerCellCluster: "shop.rz00b"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BuildStatus =\n%+v\nwant\n%+v", got, want)
	}
	if empty := BuildStatus(nil, nil); empty.Clusters == nil || empty.Cells == nil {
		t.Errorf("BuildStatus(nil, nil) = %+v, want empty lists (they print as [] in JSON)", empty)
	}
}

func TestPrintStatus(t *testing.T) {
	clusters, cells := statusFixture()
	full := BuildStatus(clusters, cells)
	tests := []struct {
		name string
		st   Status
		want string
	}{
		{"both", full, `NAME   ENDPOINT                READY     VERSION     CELLS
m1     https://10.0.0.1:6443   True      v1.36.4     2
m2     https://10.0.0.2:6443   Unknown   <unknown>   0

NAMESPACE   CELL    CLUSTER   READY     PER-CELL CLUSTER
acme        z       gone      False     acme.z
shop        rz00a   m1        True      shop.rz00a
shop        rz00b   m1        Unknown   shop.rz00b
`},
		{"no cells", Status{Clusters: full.Clusters[1:]}, `NAME   ENDPOINT                READY     VERSION     CELLS
m2     https://10.0.0.2:6443   Unknown   <unknown>   0
`},
		{"no clusters", Status{Cells: full.Cells[:1]}, `NAMESPACE   CELL   CLUSTER   READY   PER-CELL CLUSTER
acme        z      gone      False   acme.z
`},
		{"nothing", Status{}, ""},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		if err := PrintStatus(&b, tc.st); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s: PrintStatus =\n%s\nwant\n%s", tc.name, b.String(), tc.want)
		}
	}
}
