package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/propagatedversion"
	"github.com/cellfed/cellfed/test/framework"
)

const (
	fedCMPrefix = "/registry/types.kubefed.io/federatedconfigmaps/"
	leasePrefix = "/registry/leases/"
)

// TestDatastoreOverride splits the FederatedConfigMaps
// (types.kubefed.io/federatedconfigmaps, a CRD: each release's one plane
// write, its status with the propagation record) and the Leases (built
// in) off the plane's SQLite onto databases of their own with
// --datastore-override, runs releases, and reads the databases directly:
// every federated object and lease is in its own database, none in the
// main one, and the API serves exactly what is there (and a propagation
// record for each), before and after a restart. The federated objects'
// database is SQLite or MariaDB.
func TestDatastoreOverride(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "mariadb"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pvDir := filepath.Join(dir, "federatedconfigmaps")
			pvEndpoint := "sqlite://" + filepath.Join(pvDir, "db", "state.db")
			pvRaw := "" // OpenRawDatabase: the SQLite file in pvDir
			if backend == "mariadb" {
				pvEndpoint = framework.NewDatabase(t)
				pvRaw = pvEndpoint
			}
			leaseDir := filepath.Join(dir, "leases")
			plane := framework.PlaneOptions{Args: []string{
				"--datastore-override=types.kubefed.io/federatedconfigmaps=" + pvEndpoint,
				"--datastore-override=coordination.k8s.io/leases=sqlite://" + filepath.Join(leaseDir, "db", "state.db"),
			}}
			f := startFederationWith(t, 2, plane)
			ctx := context.Background()

			const releases = 12
			for i := range releases {
				cells := []string{"rz00a"}
				if i%2 == 1 {
					cells = []string{"rz00a", "rz10a"}
				}
				f.kubectl.MustRun(t, configMap("shop", fmt.Sprintf("split-%02d", i), fmt.Sprintf("v: %q", "1"), cells, ""), "apply", "-f", "-")
			}
			// A second release of every object: the records are updated.
			for i := range releases {
				f.kubectl.MustRun(t, configMap("shop", fmt.Sprintf("split-%02d", i), fmt.Sprintf("v: %q", "2"), []string{"rz00a"}, ""), "apply", "-f", "-")
			}
			for i := range releases {
				name := fmt.Sprintf("split-%02d", i)
				eventually(t, "configmap "+name+" released to member-0", func() (bool, string) {
					cm, err := f.memberKube[0].CoreV1().ConfigMaps("shop").Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return false, err.Error()
					}
					return cm.Data["v"] == "2", fmt.Sprint(cm.Data)
				})
			}
			wantRecords := func(t *testing.T) []string {
				var names []string
				eventually(t, "a propagation record per released object", func() (bool, string) {
					l, err := f.dyn.Resource(kubefed.PropagatedVersionsResource).Namespace("shop").List(ctx, metav1.ListOptions{})
					if err != nil {
						return false, err.Error()
					}
					names = names[:0]
					for _, pv := range l.Items {
						if name, ok := strings.CutPrefix(pv.GetName(), "configmap-"); ok && strings.HasPrefix(name, "split-") {
							names = append(names, "shop/"+name)
						}
					}
					return len(names) == releases, strings.Join(names, " ")
				})
				slices.Sort(names)
				return names
			}
			checkRows := func(t *testing.T, apiNames []string) {
				mainDB := framework.OpenRawDatabase(t, f.plane.DataDir, "")
				if rows := framework.RawRows(t, mainDB, fedCMPrefix); len(rows) != 0 {
					t.Errorf("the main database holds %d FederatedConfigMap rows (first %s), want none", len(rows), rows[0].Name)
				}
				if rows := framework.RawRows(t, mainDB, leasePrefix); len(rows) != 0 {
					t.Errorf("the main database holds %d lease rows (first %s), want none", len(rows), rows[0].Name)
				}
				pvDB := framework.OpenRawDatabase(t, pvDir, pvRaw)
				if got := liveNames(t, pvDB, fedCMPrefix, "split-"); !slices.Equal(got, apiNames) {
					t.Errorf("FederatedConfigMaps in their own database %v, the API serves records of %v", got, apiNames)
				}
				leaseDB := framework.OpenRawDatabase(t, leaseDir, "")
				if got := liveNames(t, leaseDB, leasePrefix, ""); !slices.Contains(got, "kube-system/cellfed-core-controllers") {
					t.Errorf("leases in their own database %v, want the core controllers' lease", got)
				}
			}

			// Each cell counts the objects whose record lists its
			// cluster: records kept in the federated status, served as
			// views.
			checkCellCounts := func(t *testing.T) {
				for _, cell := range []string{"rz00a", "rz10a"} {
					eventually(t, "cell "+cell+" counts the records listing it", func() (bool, string) {
						l, err := f.dyn.Resource(kubefed.PropagatedVersionsResource).Namespace("shop").List(ctx, metav1.ListOptions{})
						if err != nil {
							return false, err.Error()
						}
						want := 0
						for _, pv := range l.Items {
							if slices.Contains(slices.Collect(maps.Keys(propagatedversion.OfStored(&pv).Clusters)), "shop."+cell) {
								want++
							}
						}
						c, err := f.dyn.Resource(cellv1alpha1.CellsResource).Namespace("shop").Get(ctx, cell, metav1.GetOptions{})
						if err != nil {
							return false, err.Error()
						}
						got, _, _ := unstructured.NestedInt64(c.Object, "status", "objects")
						if cell == "rz00a" && want < releases {
							return false, fmt.Sprintf("%d records list %s, want at least %d", want, cell, releases)
						}
						return got == int64(want), fmt.Sprintf("status.objects %d, %d records list it", got, want)
					})
				}
			}
			checkCellCounts(t)

			before := wantRecords(t)
			checkRows(t, before)

			f.plane.Stop(30 * time.Second)
			f.plane.RestartAndWait(t)
			after := wantRecords(t)
			if !slices.Equal(before, after) {
				t.Fatalf("propagation records after a restart %v, before %v", after, before)
			}
			checkRows(t, after)
		})
	}
}

// liveNames are the namespace/name of the keys under prefix whose newest
// row is not a deletion, limited to names starting with namePrefix.
func liveNames(t *testing.T, db *sql.DB, prefix, namePrefix string) []string {
	t.Helper()
	var out []string
	for key := range framework.LatestRawRows(framework.RawRows(t, db, prefix)) {
		nsName := strings.TrimPrefix(key, prefix)
		_, name, _ := strings.Cut(nsName, "/")
		if strings.HasPrefix(name, namePrefix) {
			out = append(out, nsName)
		}
	}
	slices.Sort(out)
	return out
}
