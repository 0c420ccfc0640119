package conversion

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	typesv1beta2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
)

// FuzzConvertSpec converts v1beta2 objects whose placement, mask and
// overrides are the fuzzer's JSON (any spec that decodes as v1beta2, as
// the API server would store it), and checks:
//   - both round trips (v1beta2 → v1beta1 → v1beta2 and back from the
//     v1beta1 form) return the object unchanged;
//   - a mask changed in the v1beta1 form's stash annotation is the mask
//     the v1beta2 form then shows: a v1beta1 client that edits the stash
//     moves the release as a v1beta2 client editing the mask would.
func FuzzConvertSpec(f *testing.F) {
	f.Add(uint8(0), []byte(`{"placement":{"topologyType":"cell","topologies":[{"name":"rz00a"},{"name":"rz01a"}]},"placementMask":{"topologies":[{"name":"rz00a"}]}}`), "rz01a")
	f.Add(uint8(1), []byte(`{"placement":{"topologyType":"cell","topologySelector":{"matchLabels":{"zone":"z1"}}},"placementMask":{"topologies":[]}}`), "a,c1")
	f.Add(uint8(2), []byte(`{"placement":{"topologyType":"cluster","topologies":[{"name":"member1"},{"name":"t.a"}]},"placementMask":{"topologies":[{"name":"t.a"}]},"overrides":[{"topologyName":"t.a","clusterOverrides":[{"op":"add","path":"/metadata/labels/x","value":{"k":[1,"x",null]}}]}]}`), "member1")
	f.Add(uint8(0), []byte(`{"placement":{"topologyType":"cell","topologies":[{"name":"a"}]},"overrides":[{"topologyName":"a","clusterOverrides":[{"path":"/spec/replicas","value":5},{"op":"remove","path":"/spec/x"}]},{"topologyName":"b"}]}`), "")
	f.Add(uint8(1), []byte(`{"placement":{"topologyType":"cluster"},"placementMask":{"topologies":[{"name":"m"}]}}`), "-")
	f.Fuzz(func(t *testing.T, nsIndex uint8, specJSON []byte, newMask string) {
		var spec map[string]any
		if err := json.Unmarshal(specJSON, &spec); err != nil || spec == nil || !utf8.ValidString(newMask) {
			return // JSON (and so an annotation) holds only valid UTF-8
		}
		spec["template"] = map[string]any{"spec": map[string]any{"replicas": int64(1)}}
		ns := namespaces[int(nsIndex)%len(namespaces)]
		dec := json.NewDecoder(bytes.NewReader(mustJSON(t, map[string]any{"spec": spec})))
		dec.DisallowUnknownFields()
		var typed typesv1beta2.FederatedObject
		if err := dec.Decode(&typed); err != nil {
			return // the API server's schema refuses (or prunes) it first
		}
		if typed.Spec.Placement.TopologyType == "" {
			typed.Spec.Placement.TopologyType = typesv1beta2.TopologyCell // defaulted
		}
		typed.TypeMeta = metav1.TypeMeta{APIVersion: apiVersionV1beta2, Kind: "FederatedDeployment"}
		typed.ObjectMeta = metav1.ObjectMeta{Name: "o", Namespace: ns}
		in := unstructuredOfNoT(&typed)

		checkRoundTrips(t, in)
		v1 := unstructuredOfNoT(convert(t, in, apiVersionV1beta1))
		checkRoundTrips(t, v1)

		// Edit the mask through the stash, as a v1beta1 client can.
		stash, ok := StashedV1beta2Spec(v1)
		if !ok {
			return
		}
		var mask any
		if newMask != "-" {
			topologies := []any{}
			for _, n := range strings.Split(newMask, ",") {
				if n != "" {
					topologies = append(topologies, map[string]any{"name": n})
				}
			}
			mask = map[string]any{"topologies": topologies}
		}
		if mask == nil {
			delete(stash, "placementMask")
		} else {
			stash["placementMask"] = mask
		}
		edited := runtime.DeepCopyJSON(v1)
		edited["metadata"].(map[string]any)["annotations"].(map[string]any)[AnnotationV1beta2Spec] = string(mustJSON(t, stash))
		back := convert(t, edited, apiVersionV1beta2)
		got := back["spec"].(map[string]any)["placementMask"]
		if !reflect.DeepEqual(got, mask) {
			t.Fatalf("mask written through the stash as %s reads back as %s\n  v1beta1: %s", toJSON(t, mask), toJSON(t, got), toJSON(t, edited))
		}
	})
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
