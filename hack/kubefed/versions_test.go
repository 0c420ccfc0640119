package kubefed

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kubefed/pkg/controller/sync"
)

// vectors are shared with cellfed-controller's own test
// (pkg/controller/propagation), which computes the same versions with
// its own code: this test proves the expected values are KubeFed's.
const vectors = "../../pkg/controller/propagation/testdata/kubefed-versions.json"

var update = flag.Bool("update", false, "write KubeFed's values into the vectors file")

type vector struct {
	Name            string         `json:"name"`
	Object          map[string]any `json:"object"`
	TemplateVersion string         `json:"templateVersion"`
	OverrideVersion string         `json:"overrideVersion"`
}

// TestVersionsAreKubeFeds checks the template and override versions in
// the vectors file against KubeFed v0.10.0's sync.GetTemplateHash and
// sync.GetOverrideHash.
func TestVersionsAreKubeFeds(t *testing.T) {
	raw, err := os.ReadFile(vectors)
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		obj := &unstructured.Unstructured{}
		objRaw, _ := json.Marshal(v.Object)
		if err := obj.UnmarshalJSON(objRaw); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		tv, err := sync.GetTemplateHash(obj.Object)
		if err != nil {
			t.Fatalf("%s: GetTemplateHash: %v", v.Name, err)
		}
		ov, err := sync.GetOverrideHash(obj)
		if err != nil {
			t.Fatalf("%s: GetOverrideHash: %v", v.Name, err)
		}
		if *update {
			vs[i].TemplateVersion, vs[i].OverrideVersion = tv, ov
			continue
		}
		if tv != v.TemplateVersion || ov != v.OverrideVersion {
			t.Errorf("%s: KubeFed says template %q override %q; the vectors say %q %q (regenerate with go test -update)", v.Name, tv, ov, v.TemplateVersion, v.OverrideVersion)
		}
	}
	if *update {
		out, _ := json.MarshalIndent(vs, "", "  ")
		if err := os.WriteFile(vectors, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
