package simfront

import (
	"fmt"
	"net/url"
	"strings"
)

// MemberLabel marks every object written through a logical member with
// the member's name: a cluster-wide list or watch of one logical member
// selects on it, so the real API server filters, and it is removed again
// from everything the member's client reads.
const MemberLabel = "sim.cellfed.io/member"

// namespaceNameLabel is the label a kube-apiserver sets on every
// Namespace to its name; its value is rewritten like the name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// mapper maps one logical member's names onto the real API server: a
// namespace ns is the real namespace <member>-<ns>, a cluster-scoped
// object n is <member>-n, and namespaced objects keep their names.
type mapper struct {
	member string // the logical member's name, e.g. "lm007"
	prefix string // member + "-"
}

func newMapper(member string) mapper { return mapper{member: member, prefix: member + "-"} }

func (m mapper) real(name string) string { return m.prefix + name }

// logical is the logical name of a real one; ok is false for a real name
// outside the member (never shown to it).
func (m mapper) logical(name string) (string, bool) {
	if !strings.HasPrefix(name, m.prefix) {
		return name, false
	}
	return strings.TrimPrefix(name, m.prefix), true
}

// request is what a resource request means, from its path.
type request struct {
	// path is the real path.
	path string
	// resource is the path's resource ("configmaps", "namespaces"), ""
	// for a path that is not a resource path (/readyz, /version, /api,
	// /apis/<group>/<version>, /openapi/...).
	resource string
	// namespaced is true for a path under /namespaces/<ns>/<resource>.
	namespaced bool
	// collection is true without an object name: list, watch, create,
	// delete collection.
	collection bool
	// clusterObject is true when the body is a cluster-scoped object
	// whose name the member maps (a Namespace, or any object of a
	// cluster-scoped resource).
	clusterObject bool
}

// mapPath rewrites a request path of the logical member to the real one.
func (m mapper) mapPath(p string) (request, error) {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	var gv int
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		gv = 2
	case len(segs) >= 3 && segs[0] == "apis":
		gv = 3
	default:
		return request{path: p}, nil // not a resource path: shared as it is
	}
	rest := segs[gv:]
	if len(rest) == 0 {
		return request{path: p}, nil // discovery of a group version
	}
	if rest[0] == "watch" {
		return request{}, fmt.Errorf("path %q: the legacy /watch/ paths are not served (use ?watch=true)", p)
	}
	for _, s := range rest {
		if s == "" || s == "." || s == ".." {
			return request{}, fmt.Errorf("path %q has an empty or relative segment", p)
		}
	}
	r := request{}
	switch {
	case rest[0] == "namespaces" && len(rest) >= 3:
		// /namespaces/<ns>/<resource>[/<name>[/<subresource>]], except
		// the namespace's own subresources status and finalize.
		rest[1] = m.real(rest[1])
		if len(rest) == 3 && (rest[2] == "status" || rest[2] == "finalize") {
			r.resource, r.clusterObject = "namespaces", true
		} else {
			r.resource, r.namespaced, r.collection = rest[2], true, len(rest) == 3
		}
	case rest[0] == "namespaces" && len(rest) == 2:
		rest[1] = m.real(rest[1])
		r.resource, r.clusterObject = "namespaces", true
	default:
		// /<resource>[/<name>[/<subresource>]]: a cluster-wide
		// collection, or a cluster-scoped object.
		r.resource = rest[0]
		r.collection = len(rest) == 1
		r.clusterObject = true
		if len(rest) >= 2 {
			rest[1] = m.real(rest[1])
		}
	}
	r.path = "/" + strings.Join(append(segs[:gv:gv], rest...), "/")
	return r, nil
}

// mapQuery rewrites a resource request's query: a collection is
// narrowed to the member's objects (its label), and field selectors on
// names the member maps are mapped.
func (m mapper) mapQuery(r request, q url.Values) (url.Values, error) {
	if r.resource == "" {
		return q, nil
	}
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	if r.collection {
		sel := MemberLabel + "=" + m.member
		if ls := strings.TrimSpace(q.Get("labelSelector")); ls != "" {
			sel = ls + "," + sel
		}
		out.Set("labelSelector", sel)
	}
	if fs := q.Get("fieldSelector"); fs != "" {
		mapped, err := m.mapFieldSelector(r, fs)
		if err != nil {
			return nil, err
		}
		out.Set("fieldSelector", mapped)
	}
	return out, nil
}

// mapFieldSelector maps metadata.namespace (and metadata.name of
// cluster-scoped resources) in a field selector.
func (m mapper) mapFieldSelector(r request, fs string) (string, error) {
	terms := strings.Split(fs, ",")
	for i, t := range terms {
		for _, op := range []string{"!=", "==", "="} {
			k, v, ok := strings.Cut(t, op)
			if !ok {
				continue
			}
			k = strings.TrimSpace(k)
			if k == "metadata.namespace" || (k == "metadata.name" && !r.namespaced) {
				terms[i] = k + op + m.real(strings.TrimSpace(v))
			}
			break
		}
	}
	return strings.Join(terms, ","), nil
}

// mapBody rewrites an object the member's client sends (create, update):
// its namespace, or its name when cluster-scoped, and the member label.
func (m mapper) mapBody(r request, obj map[string]any) error {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("the object has no metadata")
	}
	if r.clusterObject {
		if n, _ := md["name"].(string); n != "" {
			md["name"] = m.real(n)
		}
		if g, _ := md["generateName"].(string); g != "" {
			md["generateName"] = m.real(g)
		}
	} else if ns, _ := md["namespace"].(string); ns != "" {
		md["namespace"] = m.real(ns)
	}
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	labels[MemberLabel] = m.member
	if v, ok := labels[namespaceNameLabel].(string); ok && r.resource == "namespaces" {
		labels[namespaceNameLabel] = m.real(v)
	}
	return nil
}

// unmapObject rewrites an object the real server returns to what the
// member shows: a List's items, a watch event's object, a Status's
// message and details, any other object's namespace or name and labels.
func (m mapper) unmapObject(obj map[string]any) {
	if items, ok := obj["items"].([]any); ok {
		for _, it := range items {
			if o, ok := it.(map[string]any); ok {
				m.unmapObject(o)
			}
		}
		return
	}
	if obj["kind"] == "Status" {
		if msg, ok := obj["message"].(string); ok {
			obj["message"] = strings.ReplaceAll(msg, m.prefix, "")
		}
		if d, ok := obj["details"].(map[string]any); ok {
			if n, ok := d["name"].(string); ok {
				d["name"], _ = m.logical(n)
			}
		}
		return
	}
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return
	}
	if ns, ok := md["namespace"].(string); ok && ns != "" {
		md["namespace"], _ = m.logical(ns)
	} else if n, ok := md["name"].(string); ok {
		md["name"], _ = m.logical(n)
	}
	if labels, ok := md["labels"].(map[string]any); ok {
		delete(labels, MemberLabel)
		if v, ok := labels[namespaceNameLabel].(string); ok && obj["kind"] == "Namespace" {
			labels[namespaceNameLabel], _ = m.logical(v)
		}
		if len(labels) == 0 {
			delete(md, "labels")
		}
	}
}

// unmapEvent rewrites one watch event ({"type": ..., "object": ...}).
func (m mapper) unmapEvent(ev map[string]any) {
	if o, ok := ev["object"].(map[string]any); ok {
		m.unmapObject(o)
	}
}
