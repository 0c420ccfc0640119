package simfront

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"
)

func TestMapPath(t *testing.T) {
	m := newMapper("lm007")
	tests := []struct {
		in      string
		want    request
		wantErr bool
	}{
		{in: "/readyz", want: request{path: "/readyz"}},
		{in: "/api", want: request{path: "/api"}},
		{in: "/apis/apps/v1", want: request{path: "/apis/apps/v1"}},
		{in: "/api/v1/configmaps", want: request{path: "/api/v1/configmaps", resource: "configmaps", collection: true, clusterObject: true}},
		{in: "/api/v1/namespaces", want: request{path: "/api/v1/namespaces", resource: "namespaces", collection: true, clusterObject: true}},
		{in: "/api/v1/namespaces/shop", want: request{path: "/api/v1/namespaces/lm007-shop", resource: "namespaces", clusterObject: true}},
		{in: "/api/v1/namespaces/shop/finalize", want: request{path: "/api/v1/namespaces/lm007-shop/finalize", resource: "namespaces", clusterObject: true}},
		{in: "/api/v1/namespaces/shop/configmaps", want: request{path: "/api/v1/namespaces/lm007-shop/configmaps", resource: "configmaps", namespaced: true, collection: true}},
		{in: "/api/v1/namespaces/shop/configmaps/web", want: request{path: "/api/v1/namespaces/lm007-shop/configmaps/web", resource: "configmaps", namespaced: true}},
		{in: "/apis/apps/v1/namespaces/shop/deployments/web/status", want: request{path: "/apis/apps/v1/namespaces/lm007-shop/deployments/web/status", resource: "deployments", namespaced: true}},
		{in: "/apis/rbac.authorization.k8s.io/v1/clusterroles/view", want: request{path: "/apis/rbac.authorization.k8s.io/v1/clusterroles/lm007-view", resource: "clusterroles", clusterObject: true}},
		{in: "/api/v1/watch/namespaces/shop/configmaps", wantErr: true},
		{in: "/api/v1/namespaces/../configmaps", wantErr: true},
	}
	for _, tt := range tests {
		got, err := m.mapPath(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("mapPath(%q): error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && got != tt.want {
			t.Errorf("mapPath(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestMapQuery(t *testing.T) {
	m := newMapper("lm007")
	tests := []struct {
		name string
		req  request
		in   string
		want string
	}{
		{"non-resource path unchanged", request{}, "verbose=1", "verbose=1"},
		{"collection gets the member label", request{resource: "configmaps", collection: true}, "watch=true",
			"labelSelector=sim.cellfed.io%2Fmember%3Dlm007&watch=true"},
		{"the member label joins a selector", request{resource: "configmaps", collection: true}, "labelSelector=kubefed.io%2Fmanaged%3Dtrue",
			"labelSelector=kubefed.io%2Fmanaged%3Dtrue%2Csim.cellfed.io%2Fmember%3Dlm007"},
		{"one object: no label", request{resource: "configmaps", namespaced: true}, "", ""},
		{"namespace field mapped", request{resource: "configmaps", collection: true, clusterObject: true}, "fieldSelector=metadata.namespace%3Dshop",
			"fieldSelector=metadata.namespace%3Dlm007-shop&labelSelector=sim.cellfed.io%2Fmember%3Dlm007"},
		{"name of a namespaced object kept", request{resource: "configmaps", namespaced: true, collection: true}, "fieldSelector=metadata.name%3D%3Dweb",
			"fieldSelector=metadata.name%3D%3Dweb&labelSelector=sim.cellfed.io%2Fmember%3Dlm007"},
		{"name of a namespace mapped", request{resource: "namespaces", collection: true, clusterObject: true}, "fieldSelector=metadata.name%21%3Dshop",
			"fieldSelector=metadata.name%21%3Dlm007-shop&labelSelector=sim.cellfed.io%2Fmember%3Dlm007"},
	}
	for _, tt := range tests {
		q, err := url.ParseQuery(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.mapQuery(tt.req, q)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got.Encode() != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got.Encode(), tt.want)
		}
	}
}

func TestMapBodyAndBack(t *testing.T) {
	m := newMapper("lm007")
	tests := []struct {
		name      string
		req       request
		in, wire  string
		roundTrip string // what the member reads back; "" = in
	}{
		{
			name: "namespaced object: namespace mapped, label added",
			req:  request{resource: "configmaps", namespaced: true, collection: true},
			in:   `{"kind":"ConfigMap","metadata":{"name":"web","namespace":"shop","labels":{"kubefed.io/managed":"true"}}}`,
			wire: `{"kind":"ConfigMap","metadata":{"labels":{"kubefed.io/managed":"true","sim.cellfed.io/member":"lm007"},"name":"web","namespace":"lm007-shop"}}`,
		},
		{
			name: "namespace: name mapped, label map created",
			req:  request{resource: "namespaces", collection: true, clusterObject: true},
			in:   `{"kind":"Namespace","metadata":{"name":"shop"}}`,
			wire: `{"kind":"Namespace","metadata":{"labels":{"sim.cellfed.io/member":"lm007"},"name":"lm007-shop"}}`,
		},
		{
			name:      "namespace the server labelled with its name",
			req:       request{resource: "namespaces", clusterObject: true},
			in:        `{"kind":"Namespace","metadata":{"name":"shop","labels":{"kubernetes.io/metadata.name":"shop"}}}`,
			wire:      `{"kind":"Namespace","metadata":{"labels":{"kubernetes.io/metadata.name":"lm007-shop","sim.cellfed.io/member":"lm007"},"name":"lm007-shop"}}`,
			roundTrip: `{"kind":"Namespace","metadata":{"labels":{"kubernetes.io/metadata.name":"shop"},"name":"shop"}}`,
		},
	}
	for _, tt := range tests {
		var obj map[string]any
		if err := json.Unmarshal([]byte(tt.in), &obj); err != nil {
			t.Fatal(err)
		}
		if err := m.mapBody(tt.req, obj); err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := mustJSON(t, obj); got != tt.wire {
			t.Errorf("%s: sent %s, want %s", tt.name, got, tt.wire)
		}
		m.unmapObject(obj)
		want := tt.roundTrip
		if want == "" {
			want = mustJSON(t, mustDecode(t, tt.in))
		}
		if got := mustJSON(t, obj); got != want {
			t.Errorf("%s: read back %s, want %s", tt.name, got, want)
		}
	}
	if err := m.mapBody(request{resource: "configmaps"}, map[string]any{"kind": "ConfigMap"}); err == nil {
		t.Error("mapBody of an object without metadata: no error")
	}
}

func TestUnmapListStatusAndEvent(t *testing.T) {
	m := newMapper("lm007")
	list := mustDecode(t, `{"kind":"ConfigMapList","items":[{"metadata":{"name":"a","namespace":"lm007-shop","labels":{"sim.cellfed.io/member":"lm007"}}}]}`)
	m.unmapObject(list)
	if got, want := mustJSON(t, list), `{"items":[{"metadata":{"name":"a","namespace":"shop"}}],"kind":"ConfigMapList"}`; got != want {
		t.Errorf("list: got %s, want %s", got, want)
	}
	st := mustDecode(t, `{"kind":"Status","message":"namespaces \"lm007-shop\" not found","details":{"name":"lm007-shop","kind":"namespaces"}}`)
	m.unmapObject(st)
	if got, want := mustJSON(t, st), `{"details":{"kind":"namespaces","name":"shop"},"kind":"Status","message":"namespaces \"shop\" not found"}`; got != want {
		t.Errorf("status: got %s, want %s", got, want)
	}
	ev := mustDecode(t, `{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","namespace":"lm007-x"}}}`)
	m.unmapEvent(ev)
	if !reflect.DeepEqual(ev["object"].(map[string]any)["metadata"], map[string]any{"name": "a", "namespace": "x"}) {
		t.Errorf("event: got %v", ev)
	}
}

func mustDecode(t *testing.T, s string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
