package conversion

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// BenchmarkConvert converts realistic objects both ways, the work the
// webhook does per object (JSON decode and encode excluded).
func BenchmarkConvert(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 5))
	var objs []map[string]any
	for range 256 {
		objs = append(objs, randomV1beta2(r))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// A round trip returns each object to what it was (the property
		// the tests prove), so the fixtures can be converted in place.
		o := objs[i%len(objs)]
		if err := Convert(o, apiVersionV1beta1); err != nil {
			b.Fatal(err)
		}
		if err := Convert(o, apiVersionV1beta2); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReview answers a ConversionReview of 1,000 objects, as the API
// server sends for a list.
func BenchmarkReview(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 5))
	objects := make([]json.RawMessage, 1000)
	for i := range objects {
		raw, err := json.Marshal(randomV1beta2(r))
		if err != nil {
			b.Fatal(err)
		}
		objects[i] = raw
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
		"request": map[string]any{"uid": "u", "desiredAPIVersion": apiVersionV1beta1, "objects": objects},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, _, err := Review(body); err != nil {
			b.Fatal(err)
		}
	}
}
