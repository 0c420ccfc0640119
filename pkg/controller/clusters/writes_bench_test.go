package clusters

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/cellfed/cellfed/test/framework"
)

// jsonMetadataAnswers asks for a PartialObjectMetadata in JSON: the
// member writes' answer before 2026-11-27, kept here to compare.
type jsonMetadataAnswers struct{ next http.RoundTripper }

func (t jsonMetadataAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost || req.Method == http.MethodPut {
		req = req.Clone(req.Context())
		req.Header.Set("Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")
	}
	return t.next.RoundTrip(req)
}

// BenchmarkMemberCreate creates ConfigMaps (1 KiB of data, the labels and
// annotations the controller sets) in a real member, one at a time, with
// three ways of answering: the whole object in JSON (a plain dynamic
// client), a PartialObjectMetadata in JSON, and the Writes client's
// PartialObjectMetadata in protobuf, whose create body may also be
// encoded once for many members (encoded-once). It reports the CPU
// per create of the member (from /proc) and of this process (the
// client's side; the benchmark's own loop is in it too).
//
//	go test -count=1 -run '^$' -bench BenchmarkMemberCreate -benchtime 2000x ./pkg/controller/clusters/
func BenchmarkMemberCreate(b *testing.B) {
	member := framework.StartMember(b, "writes-bench")
	cfg := member.RESTConfig(b)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	plain, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		b.Fatal(err)
	}
	jsonMeta, err := dynamic.NewForConfigAndClient(cfg, &http.Client{Transport: jsonMetadataAnswers{httpClient.Transport}})
	if err != nil {
		b.Fatal(err)
	}
	_, writes, err := dynamicClients(cfg)
	if err != nil {
		b.Fatal(err)
	}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	object := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "default",
				"labels":      map[string]any{ManagedLabel: "true", "app": "web"},
				"annotations": map[string]any{"cellfed.io/propagated-hash": "0123456789abcdef0123456789abcdef", "kubefed.io/managed-labels": "app"}},
			"data": map[string]any{"payload": strings.Repeat("x", 1024)},
		}}
	}
	ctx := context.Background()
	runs := 0 // the benchmark runs each case more than once: fresh names each time
	for _, tc := range []struct {
		name   string
		create func(obj *unstructured.Unstructured, body []byte) error
	}{
		{"answer=json-object", func(obj *unstructured.Unstructured, _ []byte) error {
			_, err := plain.Resource(cms).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
			return err
		}},
		{"answer=json-metadata", func(obj *unstructured.Unstructured, _ []byte) error {
			_, err := jsonMeta.Resource(cms).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
			return err
		}},
		{"answer=protobuf-metadata", func(obj *unstructured.Unstructured, _ []byte) error {
			_, err := writes.Resource(cms).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
			return err
		}},
		{"answer=protobuf-metadata/encoded-once", func(obj *unstructured.Unstructured, body []byte) error {
			_, err := writes.Resource(cms).Namespace("default").(EncodedCreator).CreateEncoded(ctx, obj, body, metav1.CreateOptions{})
			return err
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			runs++
			prefix := fmt.Sprintf("%s-%d", strings.NewReplacer("answer=", "", "/", "-").Replace(tc.name), runs)
			objs := make([]*unstructured.Unstructured, b.N)
			bodies := make([][]byte, b.N)
			for i := range objs {
				objs[i] = object(fmt.Sprintf("%s-%d", prefix, i))
				if bodies[i], err = objs[i].MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
			memberBefore, selfBefore := processCPU(b, member.Pid()), processCPU(b, os.Getpid())
			b.ResetTimer()
			for i := range b.N {
				if err := tc.create(objs[i], bodies[i]); err != nil {
					b.Fatalf("create %d: %v", i, err)
				}
			}
			b.StopTimer()
			memberCPU, self := processCPU(b, member.Pid())-memberBefore, processCPU(b, os.Getpid())-selfBefore
			b.ReportMetric(float64(memberCPU.Microseconds())/float64(b.N), "member-cpu-µs/op")
			b.ReportMetric(float64(self.Microseconds())/float64(b.N), "client-cpu-µs/op")
		})
	}
}

// processCPU is a process's user+system CPU time.
func processCPU(b *testing.B, pid int) time.Duration {
	d, err := framework.ProcessCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return d
}
