package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/test/framework"
)

// BenchmarkMySQLRevisionOrderCost measures what the plane pays on MySQL
// for kine_ordered_id, the trigger that makes kine's revisions commit in
// the order they are handed out (pkg/storage/mysql.go): every insert
// holds one row lock until it commits, so inserts are serialized. It
// starts a plane on a throwaway MariaDB database, creates config maps
// from 16 concurrent writers and reports creates per second; then drops
// the trigger under the running plane (unsafe: informers may miss events,
// done here only to compare) and creates as many again. Reported:
// creates/s with and without the trigger, and their ratio.
func BenchmarkMySQLRevisionOrderCost(b *testing.B) {
	const writers, perWriter = 16, 100
	for range b.N {
		endpoint := framework.NewDatabase(b)
		plane := framework.StartPlane(b, framework.PlaneOptions{Endpoint: endpoint})
		c := plane.Client(b)
		// Warm up (the plane's own start-up writes, connections).
		createConcurrently(b, c, "warm", 4, 25)
		with := createConcurrently(b, c, "ordered", writers, perWriter)
		db := openEndpoint(b, endpoint)
		if _, err := db.Exec("DROP TRIGGER kine_ordered_id"); err != nil {
			b.Fatalf("dropping the trigger: %v", err)
		}
		without := createConcurrently(b, c, "unordered", writers, perWriter)
		plane.Stop(10 * time.Second)
		b.ReportMetric(with, "creates/s-ordered")
		b.ReportMetric(without, "creates/s-unordered")
		b.ReportMetric(with/without, "ordered/unordered")
		fmt.Printf("MariaDB, %d writers × %d config maps: %.0f creates/s with kine_ordered_id, %.0f without (%.2f×)\n",
			writers, perWriter, with, without, with/without)
	}
}

// createConcurrently creates writers × perWriter config maps in namespace
// default, named <prefix>-<writer>-<n>, and returns creates per second.
func createConcurrently(b *testing.B, c kubernetes.Interface, prefix string, writers, perWriter int) float64 {
	b.Helper()
	data := map[string]string{"payload": strings.Repeat("x", 512)}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				_, err := c.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%02d-%03d", prefix, w, i)}, Data: data,
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- fmt.Errorf("creating %s-%02d-%03d: %w", prefix, w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return float64(writers*perWriter) / elapsed.Seconds()
}

// openEndpoint opens the database of a mysql:// endpoint of the
// framework's.
func openEndpoint(b *testing.B, endpoint string) *sql.DB {
	b.Helper()
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(endpoint, "mysql://"))
	if err != nil {
		b.Fatalf("parsing %s: %v", endpoint, err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		b.Fatalf("opening %s: %v", endpoint, err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}
