package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/test/framework"
)

// TestStoredObjectsMoveToTheStorageVersion stores federated objects in
// v1beta1, as a release whose storage version that was would have, and
// restarts the plane: the plane, whose release stores v1beta2, must
// create a StorageVersionMigration for the CRD, its storage version
// migrator must rewrite every object in v1beta2 without changing it, and
// then trim the CRD's status.storedVersions to v1beta2. A further restart
// starts no migration.
func TestStoredObjectsMoveToTheStorageVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plane := framework.StartPlane(t, framework.PlaneOptions{Args: []string{"--default-federated-types=configmaps"}})
	cfg := plane.RESTConfig(t)
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	const name = "federatedconfigmaps.types.kubefed.io"
	get := func() *apiextensionsv1.CustomResourceDefinition {
		t.Helper()
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading CRD %s: %v", name, err)
		}
		return crd
	}

	// An older release's storage version: v1beta1.
	crd := get()
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == "v1beta1"
	}
	if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("making v1beta1 the storage version of %s: %v", name, err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "svm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The CRD's new storage version reaches the API server's handler a
	// moment after the update: objects written before then are stored
	// in v1beta2 already, and their migration writes nothing. Wait until
	// a write is stored in v1beta1 (read from the SQLite store).
	state := filepath.Join(plane.DataDir, "db", "state.db")
	probe := func(i int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("probe-%d", i), "namespace": "svm"},
			"spec":     map[string]any{"template": map[string]any{}, "placement": map[string]any{"clusters": []any{}}},
		}}
	}
	tries := 0
	err := framework.Poll(ctx, 200*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		p := probe(tries)
		tries++
		if _, err := dyn.Resource(fedCMV1).Namespace("svm").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return false, nil
		}
		return strings.Contains(storedValue(t, state, "/registry/types.kubefed.io/federatedconfigmaps/svm/"+p.GetName()), `"apiVersion":"types.kubefed.io/v1beta1"`), nil
	})
	if err != nil {
		t.Fatalf("no FederatedConfigMap was stored in v1beta1 within a minute of making it the storage version: %v", err)
	}
	const n = 20
	before := map[string]string{} // name → resourceVersion
	for i := range n {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%02d", i), "namespace": "svm"},
			"spec": map[string]any{
				"template":  map[string]any{"data": map[string]any{"key": fmt.Sprintf("value-%d", i)}},
				"placement": map[string]any{"clusters": []any{}},
			},
		}}
		created, err := dyn.Resource(fedCMV1).Namespace("svm").Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
		before[created.GetName()] = created.GetResourceVersion()
	}
	if got := get().Status.StoredVersions; !slices.Contains(got, "v1beta1") {
		t.Fatalf("status.storedVersions of %s is %v after writes in v1beta1, want it to list v1beta1", name, got)
	}

	// The plane of this release: its CRD stores v1beta2 again, and the
	// objects stored in v1beta1 are migrated.
	plane.Stop(30 * time.Second)
	plane.RestartAndWait(t)
	var last string
	err = framework.Poll(ctx, 500*time.Millisecond, 3*time.Minute, func(ctx context.Context) (bool, error) {
		crd := get()
		m, err := kube.StoragemigrationV1beta1().StorageVersionMigrations().Get(ctx, federatedtypes.MigrationName(crd), metav1.GetOptions{})
		if err != nil {
			last = fmt.Sprintf("storage version %s, storedVersions %v, migration: %v", federatedtypes.StorageVersionOf(crd), crd.Status.StoredVersions, err)
			return false, nil
		}
		last = fmt.Sprintf("storage version %s, storedVersions %v, migration %s conditions %v", federatedtypes.StorageVersionOf(crd), crd.Status.StoredVersions, m.Name, m.Status.Conditions)
		return slices.Equal(crd.Status.StoredVersions, []string{"v1beta2"}) &&
			apimeta.IsStatusConditionTrue(m.Status.Conditions, string(svmv1beta1.MigrationSucceeded)), nil
	})
	if err != nil {
		t.Fatalf("the objects stored in v1beta1 were not migrated to v1beta2 within 3 min: %v; last seen: %s", err, last)
	}
	t.Logf("migrated: %s", last)
	list, err := dyn.Resource(fedCMV1).Namespace("svm").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	migrated := 0
	for _, obj := range list.Items {
		if strings.HasPrefix(obj.GetName(), "probe-") {
			continue
		}
		migrated++
		if obj.GetResourceVersion() == before[obj.GetName()] {
			t.Errorf("%s was not rewritten: resourceVersion %s as before the migration", obj.GetName(), obj.GetResourceVersion())
		}
		var i int
		if _, err := fmt.Sscanf(obj.GetName(), "cm-%d", &i); err != nil {
			t.Fatal(err)
		}
		if v, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "data", "key"); v != fmt.Sprintf("value-%d", i) {
			t.Errorf("%s's template data changed in the migration: key=%q, want value-%d", obj.GetName(), v, i)
		}
	}

	if migrated != n {
		t.Fatalf("%d objects after the migration, want %d", migrated, n)
	}

	// A restart with nothing left to migrate starts no migration.
	plane.Stop(30 * time.Second)
	plane.RestartAndWait(t)
	ms, err := kube.StoragemigrationV1beta1().StorageVersionMigrations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms.Items) != 1 {
		t.Errorf("%d storage version migrations after a restart with nothing to migrate, want the one: %v", len(ms.Items), ms.Items)
	}
}

// storedValue is the newest value kine's SQLite store at path holds for
// key ("" when none), read while the plane runs.
func storedValue(t *testing.T, path, key string) string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v []byte
	if err := db.QueryRow(`SELECT value FROM kine WHERE name = ? ORDER BY id DESC LIMIT 1`, key).Scan(&v); err != nil {
		return ""
	}
	return string(v)
}
