package clusters

import (
	"fmt"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// memberJSON are member objects as a member API server returns them to
// the controller's informers: metadata with the managed label, the hash
// annotation and the controller's managedFields entry.
var memberJSON = map[string]string{
	// The race bench's ConfigMap: one short key.
	"configmap": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"conv-%04d","namespace":"cf-shop",` +
		`"uid":"8c1f0e62-4a1d-4c8e-9d0a-%012d","resourceVersion":"%d","creationTimestamp":"2026-11-23T19:40:00Z",` +
		`"labels":{"kubefed.io/managed":"true"},"annotations":{"cellfed.io/propagated-hash":"0123456789abcdef0123456789abcdef"},` +
		`"managedFields":[{"manager":"cellfed-controller","operation":"Update","apiVersion":"v1","time":"2026-11-23T19:40:00Z",` +
		`"fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:key":{}},"f:metadata":{"f:annotations":{".":{},` +
		`"f:cellfed.io/propagated-hash":{}},"f:labels":{".":{},"f:kubefed.io/managed":{}}}}}]},"data":{"key":"conv-0001"}}`,
	// A small Deployment: one container, defaults filled in, status.
	"deployment": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web-%04d","namespace":"shop",` +
		`"uid":"8c1f0e62-4a1d-4c8e-9d0a-%012d","resourceVersion":"%d","generation":2,"creationTimestamp":"2026-11-23T19:40:00Z",` +
		`"labels":{"app":"web","kubefed.io/managed":"true"},"annotations":{"cellfed.io/propagated-hash":"0123456789abcdef0123456789abcdef",` +
		`"cellfed.io/managed-labels":"app","deployment.kubernetes.io/revision":"1"},` +
		`"managedFields":[{"manager":"cellfed-controller","operation":"Update","apiVersion":"apps/v1","time":"2026-11-23T19:40:00Z",` +
		`"fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:cellfed.io/propagated-hash":{},"f:cellfed.io/managed-labels":{}},` +
		`"f:labels":{".":{},"f:app":{},"f:kubefed.io/managed":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{}}}}}}}},` +
		`{"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1","time":"2026-11-23T19:40:01Z","fieldsType":"FieldsV1",` +
		`"subresource":"status","fieldsV1":{"f:status":{"f:availableReplicas":{},"f:conditions":{},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:updatedReplicas":{}}}}]},` +
		`"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%%","maxSurge":"25%%"}},` +
		`"revisionHistoryLimit":10,"progressDeadlineSeconds":600,"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27",` +
		`"ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",` +
		`"imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler"}}},` +
		`"status":{"observedGeneration":2,"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2,"conditions":[` +
		`{"type":"Available","status":"True","lastUpdateTime":"2026-11-23T19:40:05Z","lastTransitionTime":"2026-11-23T19:40:05Z","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."},` +
		`{"type":"Progressing","status":"True","lastUpdateTime":"2026-11-23T19:40:05Z","lastTransitionTime":"2026-11-23T19:40:00Z","reason":"NewReplicaSetAvailable","message":"ReplicaSet \"web-5d7b9c\" has successfully progressed."}]}}`,
}

// BenchmarkMemberCacheEntry reports the heap one member cache entry
// holds (object and store), whole, without managedFields and lean.
func BenchmarkMemberCacheEntry(b *testing.B) {
	const n = 5000
	for _, kind := range []string{"configmap", "deployment"} {
		for _, tc := range []struct {
			name      string
			transform cache.TransformFunc
		}{
			{"whole", func(o any) (any, error) { return o, nil }},
			{"no-managedFields", StripManagedFields},
			{"lean", Lean([]string{"replicas"})},
		} {
			b.Run(kind+"/"+tc.name, func(b *testing.B) {
				for range b.N {
					store := cache.NewStore(cache.MetaNamespaceKeyFunc)
					before := heap()
					for i := range n {
						u := &unstructured.Unstructured{}
						if err := u.UnmarshalJSON(fmt.Appendf(nil, memberJSON[kind], i, i, 1000+i)); err != nil {
							b.Fatal(err)
						}
						obj, err := tc.transform(u)
						if err != nil {
							b.Fatal(err)
						}
						if err := store.Add(obj); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(heap()-before)/n, "B/entry")
					runtime.KeepAlive(store)
				}
			})
		}
	}
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
