// Reading objects in the e2e tests: kubectl JSON output and unstructured
// fields.

package e2e

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cellfed/cellfed/test/framework"
)

// getJSON runs `kubectl <args> -o json` and decodes the object.
func getJSON(t *testing.T, k framework.Kubectl, args ...string) map[string]any {
	t.Helper()
	var m map[string]any
	out := k.MustRun(t, "", append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("decoding kubectl get %v: %v", args, err)
	}
	return m
}

// field is the value at path in a decoded object (nil when absent).
func field(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// names lists the key field of each entry of a decoded list.
func names(list any, key string) []string {
	var out []string
	items, _ := list.([]any)
	for _, i := range items {
		if m, ok := i.(map[string]any); ok {
			s, _ := m[key].(string)
			out = append(out, s)
		}
	}
	return out
}

// mustJSON encodes v as JSON, failing the test when it cannot.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// image is the first container image of a Deployment's pod template.
func image(obj *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return ""
	}
	return fmt.Sprint(cs[0].(map[string]any)["image"])
}

// conditionOf is the condition of type typ in a decoded status (nil
// when absent).
func conditionOf(st map[string]any, typ string) map[string]any {
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}
