package framework

import (
	"fmt"
	"maps"
	"testing"
)

// Backend is a storage set-up the plane runs on in tests and benchmarks.
type Backend struct {
	Name string
	// Endpoint returns the plane's --datastore-endpoint ("" = SQLite).
	Endpoint func(testing.TB) string
}

// Backends are the storage set-ups every plane test runs on: the embedded
// SQLite default and a throwaway database on the shared MariaDB and on the
// shared PostgreSQL.
var Backends = []Backend{
	{Name: "sqlite", Endpoint: func(testing.TB) string { return "" }},
	{Name: "mariadb", Endpoint: NewDatabase},
	{Name: "postgres", Endpoint: NewPostgresDatabase},
}

// DiffViews compares a client's view (key → value) with the server's and
// returns "" when they are equal, else how many keys are missing, extra
// (a missed delete) or stale (a missed update), with a few examples.
func DiffViews(got, want map[string]string) string {
	if maps.Equal(got, want) {
		return ""
	}
	var missing, extra, stale []string
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case g != v:
			stale = append(stale, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	return fmt.Sprintf("%d missing %v, %d extra %v, %d stale %v of %d",
		len(missing), head(missing), len(extra), head(extra), len(stale), head(stale), len(want))
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}
