package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// Override puts one resource on its own kine and database
// (--datastore-override GROUP/RESOURCE=DSN).
type Override struct {
	// Resource is the API resource stored apart: its group ("" for the
	// core group) and plural resource name.
	Resource schema.GroupResource
	// Endpoint is its database, as --datastore-endpoint takes it.
	Endpoint string
}

// String is the flag form, with the group written "core" for "".
func (ov Override) String() string {
	return GroupResourceString(ov.Resource) + "=" + RedactEndpoint(ov.Endpoint)
}

// GroupResourceString writes a group/resource the way the flag takes it.
func GroupResourceString(gr schema.GroupResource) string {
	if gr.Group == "" {
		return "core/" + gr.Resource
	}
	return gr.Group + "/" + gr.Resource
}

// RedactEndpoint hides a password in a mysql:// or postgres:// endpoint.
func RedactEndpoint(endpoint string) string {
	scheme, rest, ok := strings.Cut(endpoint, "://")
	if !ok {
		return endpoint
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return endpoint
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return endpoint
	}
	return scheme + "://" + user + ":***" + rest[at:]
}

// ParseOverride reads GROUP/RESOURCE=DSN. The core group is written
// "core/events", "/events" or just "events".
func ParseOverride(s string) (Override, error) {
	res, endpoint, ok := strings.Cut(s, "=")
	if !ok || res == "" || endpoint == "" {
		return Override{}, fmt.Errorf("--datastore-override %q: want GROUP/RESOURCE=DSN, e.g. core.kubefed.io/propagatedversions=sqlite:///var/lib/cellfed/pv.db or coordination.k8s.io/leases=mysql://user:pass@tcp(db:3306)/cellfed_leases", RedactEndpoint(s))
	}
	group, resource, hasGroup := strings.Cut(res, "/")
	if !hasGroup {
		group, resource = "", res
	}
	if group == "core" {
		group = ""
	}
	if resource == "" || strings.ContainsAny(resource, "/.# ") || resource != strings.ToLower(resource) {
		return Override{}, fmt.Errorf("--datastore-override %q: %q is not a plural resource name (lowercase, e.g. events, leases, propagatedversions)", RedactEndpoint(s), resource)
	}
	if strings.ContainsAny(group, "/# ") {
		return Override{}, fmt.Errorf("--datastore-override %q: %q is not an API group", RedactEndpoint(s), group)
	}
	if !strings.HasPrefix(endpoint, "sqlite://") && !strings.HasPrefix(endpoint, "mysql://") &&
		!strings.HasPrefix(endpoint, "postgres://") && !strings.HasPrefix(endpoint, "postgresql://") {
		scheme, _, _ := strings.Cut(endpoint, "://")
		return Override{}, fmt.Errorf("--datastore-override %s: unsupported scheme %q: use sqlite:///path/file.db, mysql://user:pass@tcp(host:3306)/db or postgres://user:pass@host:5432/db", GroupResourceString(schema.GroupResource{Group: group, Resource: resource}), scheme)
	}
	if endpoint == "sqlite://" {
		return Override{}, fmt.Errorf("--datastore-override %s: sqlite:// needs a file path (sqlite:///var/lib/cellfed/%s.db)", res, resource)
	}
	return Override{Resource: schema.GroupResource{Group: group, Resource: resource}, Endpoint: endpoint}, nil
}

// ParseOverrides parses every --datastore-override and refuses a resource
// named twice or a database shared with the main store or another
// override: kine's revisions are per database, so two stores in one
// table would hand out the same revisions to both.
func ParseOverrides(flags []string, main string, mainSQLitePath string) ([]Override, []error) {
	var out []Override
	var errs []error
	seen := map[schema.GroupResource]bool{}
	dbs := map[string]string{}
	mainKey := databaseKey(main, mainSQLitePath)
	for _, f := range flags {
		ov, err := ParseOverride(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[ov.Resource] {
			errs = append(errs, fmt.Errorf("--datastore-override: %s is given more than once", GroupResourceString(ov.Resource)))
			continue
		}
		seen[ov.Resource] = true
		key := databaseKey(ov.Endpoint, "")
		if key == mainKey {
			errs = append(errs, fmt.Errorf("--datastore-override %s: %s is the plane's main database; give the resource a database of its own", GroupResourceString(ov.Resource), RedactEndpoint(ov.Endpoint)))
			continue
		}
		if other, ok := dbs[key]; ok {
			errs = append(errs, fmt.Errorf("--datastore-override %s: %s is already the database of %s; each overridden resource needs a database of its own", GroupResourceString(ov.Resource), RedactEndpoint(ov.Endpoint), other))
			continue
		}
		dbs[key] = GroupResourceString(ov.Resource)
		out = append(out, ov)
	}
	return out, errs
}

// databaseKey identifies a database for the sharing check: the SQLite
// file, or the endpoint without parameters.
func databaseKey(endpoint, sqlitePath string) string {
	if sqlitePath != "" {
		return "sqlite://" + sqlitePath
	}
	e, _, _ := strings.Cut(endpoint, "?")
	return e
}

// OverrideBackend is a running kine of an overridden resource.
type OverrideBackend struct {
	Override
	*Backend
}

// Overrides parses the options' --datastore-override flags against the
// main database.
func (o *Options) Overrides() ([]Override, error) {
	mainPath := ""
	if o.Kind() == KindSQLite && (o.Endpoint != "" || o.DataDir != "") {
		mainPath = o.sqlitePath()
	}
	ovs, errs := ParseOverrides(o.OverrideFlags, o.Endpoint, mainPath)
	return ovs, errors.Join(errs...)
}

// StartOverrides starts one kine per --datastore-override, each checked
// as the main database is (MySQL and PostgreSQL safety settings, a
// writable SQLite directory) and serving on its own unix socket in the
// data dir. They stop with ctx.
func StartOverrides(ctx context.Context, main *Options) ([]OverrideBackend, error) {
	overrides, err := main.Overrides()
	if err != nil {
		return nil, err
	}
	var out []OverrideBackend
	for i, ov := range overrides {
		o := *main
		o.Endpoint = ov.Endpoint
		b, err := start(ctx, &o, fmt.Sprintf("kine-override-%d.sock", i), GroupResourceString(ov.Resource))
		if err != nil {
			return nil, fmt.Errorf("--datastore-override %s: %w", GroupResourceString(ov.Resource), err)
		}
		klog.InfoS("Resource stored apart", "resource", GroupResourceString(ov.Resource), "backend", b.Description, "etcd", b.Endpoints)
		out = append(out, OverrideBackend{Override: ov, Backend: b})
	}
	return out, nil
}

// EtcdServersOverrides are the API server's --etcd-servers-overrides for
// the running overrides (group/resource#server), which its storage
// factory applies to the built-in resources.
func EtcdServersOverrides(backends []OverrideBackend) []string {
	var out []string
	for _, b := range backends {
		out = append(out, b.Resource.Group+"/"+b.Resource.Resource+"#"+strings.Join(b.Endpoints, ";"))
	}
	return out
}
