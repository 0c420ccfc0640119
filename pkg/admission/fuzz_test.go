package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	typesv1beta1 "github.com/cellfed/cellfed/pkg/apis/types/v1beta1"
	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/conversion"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/registration"
)

// Fuzz targets for admission's decisions; `make fuzz` runs each for a
// fixed time, and the corpus under testdata/fuzz runs with every `go
// test`. Each input is an object as a client could write it; the lookup
// is the fixed plane of newAdmitter.

// fuzzObject decodes body as a JSON value; ok is false when it is not
// JSON, which the API server refuses before admission.
func fuzzObject(body []byte) (any, bool) {
	if len(body) == 0 {
		return nil, true
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, false
	}
	return v, true
}

// checkRefusal holds for every answer admission gives to a client's
// object: allowed, or a client error (4xx) the API server can return as
// it is, never an internal error (the lookup of the fuzz plane never
// fails), and never longer than a bounded multiple of what was sent.
func checkRefusal(t *testing.T, err error, inputLen int) {
	t.Helper()
	if err == nil {
		return
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("refusal is not an API status: %T %v", err, err)
	}
	s := status.Status()
	if s.Code < 400 || s.Code >= 500 {
		t.Fatalf("refusal has code %d (%s), want a client error: %s", s.Code, s.Reason, s.Message)
	}
	if limit := 16<<10 + 12*inputLen; len(s.Message) > limit {
		t.Fatalf("refusal is %d bytes for %d bytes of input (limit %d)", len(s.Message), inputLen, limit)
	}
}

// admitFuzz runs Mutate then Validate on r like the API server does, and
// checks that a second Mutate changes nothing.
func admitFuzz(t *testing.T, a *Admitter, r Request, inputLen int) error {
	t.Helper()
	if err := a.Mutate(r); err != nil {
		checkRefusal(t, err, inputLen)
		return err
	}
	if r.Object != nil {
		once := runtime.DeepCopyJSON(r.Object.Object)
		if err := a.Mutate(r); err != nil {
			t.Fatalf("second Mutate refused what the first accepted: %v", err)
		}
		if !reflect.DeepEqual(once, r.Object.Object) {
			t.Fatalf("Mutate is not idempotent:\n once: %v\ntwice: %v", once, r.Object.Object)
		}
	}
	err := a.Validate(r)
	checkRefusal(t, err, inputLen)
	if _, werr := a.Warnings(r); werr != nil {
		t.Fatalf("Warnings failed: %v", werr)
	}
	return err
}

// federatedFuzzObject is a FederatedDeployment web in shop of version
// v1beta1 or v1beta2 with spec and, when stash is set, the v1beta2 stash
// annotation of a v1beta1 object.
func federatedFuzzObject(version string, spec any, stash *string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/" + version,
		"kind":       "FederatedDeployment",
		"metadata":   map[string]any{"name": "web", "namespace": "shop"},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	if stash != nil {
		u.SetAnnotations(map[string]string{conversion.AnnotationV1beta2Spec: *stash})
	}
	return u
}

// FuzzAdmitFederated admits a federated object (created, or updated from
// old) of either version whose spec and stash annotation are the fuzzer's.
// Besides the refusal rules of checkRefusal, admission must agree with
// itself across versions: an object accepted in one version is accepted
// in the other, since conversion turns one into the other and a client
// may write either.
func FuzzAdmitFederated(f *testing.F) {
	f.Add(true, []byte(`{"template":{},"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"},{"name":"rz00b"}]},"placementMask":{"topologies":[{"name":"rz00a"}]}}`), "", false, []byte(nil))
	f.Add(true, []byte(`{"template":{"spec":{"replicas":1}},"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"}]},"overrides":[{"topologyName":"rz00a","clusterOverrides":[{"path":"/spec/replicas","value":3}]}]}`), "", false, []byte(`{"template":{},"placement":{"topologyType":"cell","topologies":[{"name":"rz00b"}]}}`))
	f.Add(false, []byte(`{"template":{},"placement":{"clusters":[{"name":"shop.rz00a"},{"name":"shop.rz00b"}]}}`), `{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"},{"name":"rz00b"}]},"placementMask":{"topologies":[{"name":"rz00b"}]}}`, true, []byte(nil))
	f.Add(false, []byte(`{"template":{},"placement":{"clusters":[{"name":"shop.rz00a"}]}}`), `{"placementMask":{"topologies":"x"}}`, true, []byte(nil))
	f.Add(false, []byte(`{"template":{},"placement":{"clusterSelector":{"matchLabels":{"region":"east"}}},"overrides":[{"clusterName":"c1","clusterOverrides":[{"op":"add","path":"/metadata/labels/x","value":"y"}]}]}`), "", false, []byte(nil))
	f.Add(true, []byte(`{"template":{},"placement":{"topologyType":"cell","topologySelector":{"matchExpressions":[{"key":"zone","operator":"In","values":["z1"]}]}}}`), "", false, []byte(nil))
	f.Fuzz(func(t *testing.T, v2 bool, specJSON []byte, stash string, hasStash bool, oldSpecJSON []byte) {
		spec, ok := fuzzObject(specJSON)
		if !ok {
			return
		}
		oldSpec, ok := fuzzObject(oldSpecJSON)
		if !ok {
			return
		}
		version := "v1beta1"
		if v2 {
			version = "v1beta2"
		}
		var stashp *string
		if hasStash {
			stashp = &stash
		}
		inputLen := len(specJSON) + len(stash) + len(oldSpecJSON)
		a := newAdmitter()
		obj := federatedFuzzObject(version, spec, stashp)
		var old *unstructured.Unstructured
		op := Create
		if oldSpec != nil {
			op, old = Update, federatedFuzzObject(version, oldSpec, nil)
		}
		r := request(op, "", obj, old)
		if err := admitFuzz(t, a, r, inputLen); err != nil || op != Create {
			return
		}
		// Accepted: the same object written in the other version must be
		// accepted too, if the API server would store it as it is (its
		// schema prunes unknown fields before admission sees them).
		// Updates are left out: the old object's other form would be
		// needed.
		if !decodesStrictly(v2, r.Object.Object) {
			return
		}
		other := runtime.DeepCopyJSON(r.Object.Object)
		to := "types.kubefed.io/v1beta2"
		if v2 {
			to = "types.kubefed.io/v1beta1"
		}
		if err := conversion.Convert(other, to); err != nil {
			t.Fatalf("admission accepted an object conversion refuses: %v\n%s", err, toJSONString(r.Object.Object))
		}
		u := &unstructured.Unstructured{Object: other}
		if err := a.Validate(request(Create, "", u, nil)); err != nil {
			t.Fatalf("accepted as %s, refused as %s: %v\n  %s\n  %s", version, to, err, toJSONString(r.Object.Object), toJSONString(other))
		}
	})
}

// FuzzAdmitCell admits a Cell of shop (created, or updated from old)
// whose spec, labels and name are the fuzzer's.
func FuzzAdmitCell(f *testing.F) {
	f.Add("rz00d", []byte(`{"cluster":"c1"}`), []byte(`{"zone":"z1"}`), []byte(nil))
	f.Add("rz00a", []byte(`{"cluster":"c2"}`), []byte(nil), []byte(`{"cluster":"c1"}`))
	f.Add("rz00e", []byte(`{"cluster":"c3"}`), []byte(`{"cellfed.io/tenant":"other"}`), []byte(nil))
	f.Add("Bad.Name", []byte(`{"cluster":""}`), []byte(nil), []byte(nil))
	f.Fuzz(func(t *testing.T, name string, specJSON, labelsJSON, oldSpecJSON []byte) {
		spec, ok := fuzzObject(specJSON)
		if !ok {
			return
		}
		oldSpec, ok := fuzzObject(oldSpecJSON)
		if !ok {
			return
		}
		var lbls map[string]string
		if len(labelsJSON) > 0 && json.Unmarshal(labelsJSON, &lbls) != nil {
			return
		}
		if len(name) > 253 {
			return // the API server's own name validation comes first
		}
		cell := func(spec any) *unstructured.Unstructured {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "core.cellfed.io/v1alpha1",
				"kind":       "Cell",
				"metadata":   map[string]any{"name": name, "namespace": "shop"},
			}}
			if spec != nil {
				u.Object["spec"] = spec
			}
			if lbls != nil {
				u.SetLabels(lbls)
			}
			return u
		}
		var old *unstructured.Unstructured
		op := Create
		if oldSpec != nil {
			op, old = Update, cell(oldSpec)
		}
		_ = admitFuzz(t, newAdmitter(), request(op, "", cell(spec), old), len(name)+len(specJSON)+len(labelsJSON)+len(oldSpecJSON))
	})
}

// decodesStrictly says whether content is a federated object of its
// version with no field the version's schema does not know.
func decodesStrictly(v2 bool, content map[string]any) bool {
	b, err := json.Marshal(content)
	if err != nil {
		return false
	}
	var into any = &typesv1beta1.FederatedObject{}
	if v2 {
		into = &typesv1beta2.FederatedObject{}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(into) == nil
}

// toJSONString is for failure messages.
func toJSONString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// FuzzValidateRegistration validates a ClusterRegistration write by a
// user and groups of the fuzzer's choosing. Whatever the object, the
// identity rules hold: a bootstrap token only creates, an agent only
// updates its own, unrevoked registration and only its csr, token and
// acknowledgement; and whatever is accepted has a valid spec.
func FuzzValidateRegistration(f *testing.F) {
	_, csr, err := pki.NewAgentKeyAndCSR("edge-1")
	if err != nil {
		f.Fatal(err)
	}
	reg := cellv1alpha1.ClusterRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-1"},
		Spec:       cellv1alpha1.ClusterRegistrationSpec{APIEndpoint: "https://127.0.0.1:6443", CABundle: testCA, CSR: csr, Tenant: "acme"},
	}
	valid, err := json.Marshal(reg)
	if err != nil {
		f.Fatal(err)
	}
	reg.Status.Conditions = []metav1.Condition{{Type: cellv1alpha1.RegistrationConditionRevoked, Status: metav1.ConditionTrue}}
	revoked, err := json.Marshal(reg)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("cellfed-admin", uint8(0), false, "", valid, []byte(nil))
	f.Add("system:bootstrap:abcdef", uint8(1), false, "", valid, []byte(nil))
	f.Add("system:bootstrap:abcdef", uint8(1), true, "", valid, valid)
	f.Add(pki.AgentUserPrefix+"edge-1", uint8(2), true, "", valid, valid)
	f.Add(pki.AgentUserPrefix+"edge-1", uint8(2), true, "", valid, revoked)
	f.Add(pki.AgentUserPrefix+"edge-2", uint8(2), true, "status", valid, valid)
	f.Fuzz(func(t *testing.T, user string, groupBits uint8, update bool, sub string, objJSON, oldJSON []byte) {
		var obj cellv1alpha1.ClusterRegistration
		if json.Unmarshal(objJSON, &obj) != nil {
			return
		}
		r := RegistrationRequest{Operation: Create, SubResource: sub, User: user, Object: &obj}
		if update {
			var old cellv1alpha1.ClusterRegistration
			if len(oldJSON) > 0 && json.Unmarshal(oldJSON, &old) != nil {
				return
			}
			r.Operation, r.OldObject = Update, &old
		}
		for i, g := range []string{"system:masters", registration.BootstrapGroup, pki.AgentGroup} {
			if groupBits&(1<<i) != 0 {
				r.Groups = append(r.Groups, g)
			}
		}
		before := obj.DeepCopy()
		err := ValidateRegistration(r)
		if !reflect.DeepEqual(before, r.Object) {
			t.Fatal("ValidateRegistration changed the object")
		}
		checkRefusal(t, err, len(user)+len(sub)+len(objJSON)+len(oldJSON))
		if err != nil {
			return
		}
		if _, ok := registration.TokenIDOfUser(user); ok || groupBits&2 != 0 {
			if r.Operation != Create || sub != "" {
				t.Fatalf("a bootstrap user %q was allowed %s of %q", user, r.Operation, sub)
			}
		}
		if cluster, ok := strings.CutPrefix(user, pki.AgentUserPrefix); ok && groupBits&4 != 0 {
			switch {
			case r.Operation != Update || sub != "":
				t.Fatalf("the agent of %s was allowed %s of %q", cluster, r.Operation, sub)
			case obj.Name != cluster:
				t.Fatalf("the agent of %s was allowed to change the registration of %s", cluster, obj.Name)
			case registration.Phase(r.OldObject.Status.Conditions) == cellv1alpha1.RegistrationRevoked:
				t.Fatalf("the agent of %s was allowed to change its revoked registration", cluster)
			}
			a, b := r.OldObject.Spec.DeepCopy(), obj.Spec.DeepCopy()
			a.CSR, b.CSR, a.ServiceAccountToken, b.ServiceAccountToken = nil, nil, "", ""
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("the agent of %s was allowed to change its registration's spec beyond csr and token", cluster)
			}
		}
		if sub != "" {
			return
		}
		if !cellv1alpha1.IsDNSLabel(obj.Name) {
			t.Fatalf("accepted a registration named %q", obj.Name)
		}
		if err := csrError(obj.Spec.CSR); err != nil {
			t.Fatalf("accepted a registration whose CSR is unusable: %v", err)
		}
		if !strings.HasPrefix(obj.Spec.APIEndpoint, "https://") {
			t.Fatalf("accepted a registration whose endpoint is %q", obj.Spec.APIEndpoint)
		}
	})
}
