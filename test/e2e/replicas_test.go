package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"

	"github.com/cellfed/cellfed/pkg/apiserver"
	"github.com/cellfed/cellfed/test/framework"
)

// The Leases the plane's replicas campaign for; the lead's settings are
// a 15 s lease duration and a 2 s retry period.
var replicaLeases = []string{"cellfed-core-controllers", "cellfed-registrations"}

const (
	replicaNS      = "replicas"
	replicaWrites  = 300
	replicaKillAt  = 100 // acknowledged writes before A is killed
	leaseTakeover  = 30 * time.Second
	replicaCounter = "counter"
)

// TestPlaneReplicas runs three cellfed-apiserver replicas (A, B, C) on
// one MariaDB database with different ports and shared PKI. Writes go
// through A while a watch and an informer run through B and a failover
// watch starts on A; A is killed (SIGKILL) mid-stream and the writer and
// the failover watch switch to another replica. No acknowledged write is
// lost, no watch event is missed, each replica converts federated objects
// with its own webhook (also with A dead), the controllers' Leases have
// one holder and move off the dead replica, and A, restarted, rejoins.
func TestPlaneReplicas(t *testing.T) {
	t.Parallel()
	dsn := framework.NewDatabase(t)
	// A bound on the whole test, not a target: with the suite beside it
	// on 2 cores it ran 200 s (2026-11-27), mostly the 32 s Lease
	// takeover and three replicas starting on MariaDB.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	a := framework.StartPlane(t, framework.PlaneOptions{Endpoint: dsn})
	aClient := a.Client(t)
	// A is the only replica yet: it takes both Leases before the others
	// start, so killing A always exercises a takeover.
	holderA := map[string]string{}
	for _, lease := range replicaLeases {
		waitLogged(ctx, t, a, acquiredLine(lease))
		holderA[lease] = leaseHolder(ctx, t, aClient, lease).identity
	}
	b := framework.StartPlaneReplica(t, a, framework.PlaneOptions{Endpoint: dsn, NoWait: true})
	c := framework.StartPlaneReplica(t, a, framework.PlaneOptions{Endpoint: dsn, NoWait: true})
	for _, s := range []*framework.Server{b, c} {
		if err := s.WaitReady(ctx); err != nil {
			t.Fatalf("replica %s not ready: %v", s.DataDir, err)
		}
	}
	if a.Port == b.Port || b.Port == c.Port || a.Port == c.Port {
		t.Fatalf("replicas share a port: %d %d %d", a.Port, b.Port, c.Port)
	}
	bClient, cClient := b.Client(t), c.Client(t)
	t.Logf("replicas: A :%d, B :%d, C :%d", a.Port, b.Port, c.Port)

	t.Run("shared PKI", func(t *testing.T) {
		// Each replica's admin credentials work at the other, and each
		// replica's serving certificate verifies with the other's CA: one
		// cluster CA.
		for _, tc := range []struct {
			name        string
			credentials *framework.Server
			server      *framework.Server
		}{{"A's kubeconfig at B", a, b}, {"B's kubeconfig at A", b, a}, {"C's kubeconfig at A", c, a}} {
			cfg := tc.credentials.RESTConfig(t)
			cfg.Host = "https://127.0.0.1:" + strconv.Itoa(tc.server.Port)
			cl, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cl.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
	})

	t.Run("B and C campaign for the Leases A holds", func(t *testing.T) {
		for _, lease := range replicaLeases {
			// B and C campaign…
			waitLogged(ctx, t, b, attemptLine(lease))
			waitLogged(ctx, t, c, attemptLine(lease))
		}
	})

	// Conversion: each replica converts with its own webhook, whichever
	// replica wrote the CRD (A did, on first start).
	k := framework.Kubectl{Kubeconfig: a.Kubeconfig}
	k.MustRun(t, framework.Tenancy, "apply", "-f", "-")
	dynA, dynB, dynC := dynamicClient(t, a), dynamicClient(t, b), dynamicClient(t, c)
	t.Run("CRDs name the replica-independent webhook", func(t *testing.T) {
		crds, err := apiextensionsclient.NewForConfig(b.RESTConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"federatedconfigmaps.types.kubefed.io", "federateddeployments.types.kubefed.io"} {
			crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("CRD %s: %v", name, err)
			}
			conv := crd.Spec.Conversion
			if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.URL == nil {
				t.Fatalf("CRD %s has no conversion webhook URL: %+v", name, conv)
			}
			u, err := url.Parse(*conv.Webhook.ClientConfig.URL)
			if err != nil {
				t.Fatal(err)
			}
			if u.Host != apiserver.ConversionHost || !strings.HasSuffix(u.Host, ".cellfed.internal") {
				t.Errorf("CRD %s converts at %s, want host conversion.cellfed.internal", name, u)
			}
		}
	})
	t.Run("conversion across replicas", func(t *testing.T) {
		runConversionCases(ctx, t, []conversionCase{
			{"v1beta2 written through A reads through B", "a-to-b", dynA, "v1beta2", dynB},
			{"v1beta1 written through B reads through A", "b-to-a", dynB, "v1beta1", dynA},
			{"v1beta1 written through C reads through B", "c-to-b", dynC, "v1beta1", dynB},
		})
	})

	// The write/watch workload.
	if _, err := aClient.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: replicaNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := aClient.CoreV1().ConfigMaps(replicaNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: replicaCounter},
		Data: map[string]string{"n": "-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start, err := bClient.CoreV1().ConfigMaps(replicaNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(start.Items, func(cm corev1.ConfigMap) bool { return cm.Name == replicaCounter }) {
		t.Fatalf("B's list does not show the config map A just created: %d items", len(start.Items))
	}
	watchB := startRawWatch(ctx, t, bClient, start.ResourceVersion)
	// The failover watch prefers A and resumes from its last
	// resourceVersion on the next replica that answers.
	watchAB := startFailoverWatch(ctx, t, []kubernetes.Interface{aClient, bClient, cClient}, start.ResourceVersion)
	informer := startConfigMapInformer(ctx, t, bClient)

	w := startFailoverWriter(ctx, []kubernetes.Interface{aClient, bClient, cClient})
	w.waitAcked(t, replicaKillAt)
	// Just before the kill: A still holds both Leases, renewed while B
	// and C were campaigning, and neither B nor C ever acquired one.
	for _, lease := range replicaLeases {
		h := leaseHolder(ctx, t, bClient, lease)
		if h.identity != holderA[lease] {
			t.Errorf("Lease %s moved from A (%s) to %s while A was alive", lease, holderA[lease], h.identity)
		}
		for _, s := range []*framework.Server{b, c} {
			if strings.Contains(s.Log(), acquiredLine(lease)) {
				t.Errorf("replica %s acquired Lease %s while A held it: two holders", s.DataDir, lease)
			}
		}
	}
	killedAt := time.Now()
	a.Kill()
	t.Logf("killed A (SIGKILL) after %d acknowledged writes", w.ackedCount())
	acked := w.wait(t)
	t.Logf("%d writes acknowledged, %d failed attempts, first write after the kill served by replica %d", len(acked), w.failures, w.switchedTo)
	if w.failures == 0 {
		t.Errorf("no write failed when A was killed mid-stream: the writer never saw the kill")
	}

	t.Run("no acknowledged write lost", func(t *testing.T) {
		final := listByName(ctx, t, bClient)
		want := expectedState(acked)
		for name, rv := range want {
			if got, ok := final[name]; !ok {
				t.Errorf("acknowledged write %s is missing through B", name)
			} else if got != rv {
				t.Errorf("%s through B has resourceVersion %d, the last acknowledged write gave %d", name, got, rv)
			}
		}
		cm, err := bClient.CoreV1().ConfigMaps(replicaNS).Get(ctx, replicaCounter, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if last := lastUpdate(acked); cm.Data["n"] != strconv.Itoa(last) {
			t.Errorf("counter through B = %s, the last acknowledged update wrote %d", cm.Data["n"], last)
		}
		// Writes are sequential: each was acknowledged before the next
		// began, so their resourceVersions increase in write order.
		for i := 1; i < len(acked); i++ {
			if acked[i].rv <= acked[i-1].rv {
				t.Errorf("write %d acknowledged at resourceVersion %d, not after write %d's %d", acked[i].i, acked[i].rv, acked[i-1].i, acked[i-1].rv)
			}
		}
	})

	for _, tc := range []struct {
		name string
		w    *recordedWatch
	}{{"watch through B", watchB}, {"failover watch from A", watchAB}} {
		t.Run(tc.name+" saw every acknowledged write", func(t *testing.T) {
			if err := framework.Poll(ctx, 50*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
				return tc.w.hasRV(acked[len(acked)-1].rv), tc.w.error()
			}); err != nil {
				t.Fatalf("the last acknowledged write (rv %d) never arrived: %v", acked[len(acked)-1].rv, err)
			}
			checkWatch(t, tc.w, acked)
		})
	}
	t.Logf("failover watch: watches opened per replica (0 = A, 1 = B, 2 = C): %v", watchAB.opened())
	if watchAB.servedBy(0) == 0 || watchAB.servedBy(1)+watchAB.servedBy(2) == 0 {
		t.Errorf("the failover watch did not move from A to another replica: watches opened per replica %v", watchAB.opened())
	}

	t.Run("informer through B matches the final list", func(t *testing.T) {
		var want map[string]int64
		if err := framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
			want = listByName(ctx, t, bClient)
			return reflect.DeepEqual(informerState(informer), want), nil
		}); err != nil {
			t.Errorf("informer store %v\n!= list through B %v: %v", informerState(informer), want, err)
		}
		for name, rv := range expectedState(acked) {
			if got := informerState(informer)[name]; got != rv {
				t.Errorf("informer has %s at resourceVersion %d, want %d", name, got, rv)
			}
		}
	})

	t.Run("B and C still convert with A dead", func(t *testing.T) {
		runConversionCases(ctx, t, []conversionCase{
			{"v1beta1 written through B reads through B", "b-only", dynB, "v1beta1", dynB},
			{"v1beta2 written through C reads through B", "c-after", dynC, "v1beta2", dynB},
		})
		for _, name := range []string{"a-to-b", "b-to-a"} {
			obj, err := fedConfigMaps(dynB, "v1beta1").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Errorf("reading %s as v1beta1 through B with A dead: %v", name, err)
				continue
			}
			checkFedShape(t, obj, "v1beta1")
		}
	})

	var holdersMu sync.Mutex
	newHolder := map[string]string{}
	t.Run("Leases move off the dead replica", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, lease := range replicaLeases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var h holder
				var winners []string
				// The new holder logs its win just after writing the Lease.
				err := framework.Poll(ctx, 200*time.Millisecond, leaseTakeover, func(ctx context.Context) (bool, error) {
					h = leaseHolder(ctx, t, bClient, lease)
					winners = nil
					for _, r := range []struct {
						name string
						s    *framework.Server
					}{{"B", b}, {"C", c}} {
						if strings.Contains(r.s.Log(), acquiredLine(lease)) {
							winners = append(winners, r.name)
						}
					}
					return h.identity != holderA[lease] && h.renewed.After(killedAt) && len(winners) > 0, nil
				})
				if err != nil {
					t.Errorf("Lease %s still held by dead A (%s) %s after the kill (holder %s, replicas that logged acquiring it: %v): %v",
						lease, holderA[lease], leaseTakeover, h.identity, winners, err)
					return
				}
				took := time.Since(killedAt).Round(100 * time.Millisecond)
				if len(winners) != 1 {
					t.Errorf("Lease %s: replicas that acquired it after A died: %v, want exactly one", lease, winners)
				}
				t.Logf("Lease %s taken over by %v (%s) %s after the kill", lease, winners, h.identity, took)
				holdersMu.Lock()
				newHolder[lease] = h.identity
				holdersMu.Unlock()
			}()
		}
		wg.Wait()
		// The new leader's core controllers work: the root CA publisher
		// fills a new namespace.
		if _, err := cClient.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "after-takeover"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := framework.Poll(ctx, 200*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
			_, err := bClient.CoreV1().ConfigMaps("after-takeover").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err == nil, err
		}); err != nil {
			t.Errorf("no kube-root-ca.crt in a new namespace after the takeover: the core controllers do not run: %v", err)
		}
	})

	t.Run("A restarted rejoins", func(t *testing.T) {
		logBefore := len(a.Log()) // the restarted A appends to the same log
		a.RestartAndWait(t)
		// A reads everything written while it was down.
		want := expectedState(acked)
		got := listByName(ctx, t, aClient)
		for name, rv := range want {
			if got[name] != rv {
				t.Errorf("restarted A has %s at resourceVersion %d, want %d", name, got[name], rv)
			}
		}
		obj, err := fedConfigMaps(dynA, "v1beta1").Get(ctx, "c-after", metav1.GetOptions{})
		if err != nil {
			t.Errorf("restarted A reading c-after (written through C while A was down) as v1beta1: %v", err)
		} else {
			checkFedShape(t, obj, "v1beta1")
		}
		// A write through A reaches B's watch and the failover watch.
		cm, err := aClient.CoreV1().ConfigMaps(replicaNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restart"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("write through restarted A: %v", err)
		}
		rv := mustRV(t, cm.ResourceVersion)
		for name, rw := range map[string]*recordedWatch{"B's watch": watchB, "the failover watch": watchAB} {
			if err := framework.Poll(ctx, 50*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
				return rw.hasRV(rv), rw.error()
			}); err != nil {
				t.Errorf("%s did not see the write through restarted A (rv %d): %v", name, rv, err)
			}
		}
		// The Leases stay where they moved: the rejoined A campaigns but
		// does not take them while their holder renews.
		for _, lease := range replicaLeases {
			if err := framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
				return strings.Contains(a.Log()[logBefore:], attemptLine(lease)), nil
			}); err != nil {
				t.Errorf("restarted A does not campaign for Lease %s: %v", lease, err)
			}
			if strings.Contains(a.Log()[logBefore:], acquiredLine(lease)) {
				t.Errorf("restarted A acquired Lease %s although its holder renews it", lease)
			}
			if h := leaseHolder(ctx, t, aClient, lease); newHolder[lease] != "" && h.identity != newHolder[lease] {
				t.Errorf("Lease %s moved from %s to %s after A rejoined", lease, newHolder[lease], h.identity)
			}
		}
	})
}

// --- Leases ---------------------------------------------------------------

type holder struct {
	identity string
	renewed  time.Time
}

func leaseHolder(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) holder {
	t.Helper()
	var h holder
	if err := framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		l, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
			return false, fmt.Errorf("Lease %s has no holder: %+v", name, l.Spec)
		}
		h = holder{*l.Spec.HolderIdentity, l.Spec.RenewTime.Time}
		return true, nil
	}); err != nil {
		t.Fatalf("Lease kube-system/%s: %v", name, err)
	}
	return h
}

// client-go's leader election logs these (klog, level 0).
func acquiredLine(lease string) string {
	return `"Successfully acquired lease" lock="kube-system/` + lease + `"`
}

func attemptLine(lease string) string {
	return `"Attempting to acquire leader lease..." lock="kube-system/` + lease + `"`
}

func waitLogged(ctx context.Context, t *testing.T, s *framework.Server, line string) {
	t.Helper()
	if err := framework.Poll(ctx, 100*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
		return strings.Contains(s.Log(), line), nil
	}); err != nil {
		t.Fatalf("%s never logged %s: %v", s.LogPath, line, err)
	}
}

// --- Conversion -------------------------------------------------------------

type conversionCase struct {
	name    string
	object  string
	writer  dynamic.Interface
	writeAs string
	reader  dynamic.Interface
}

func dynamicClient(t *testing.T, s *framework.Server) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(s.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func fedConfigMaps(d dynamic.Interface, version string) dynamic.ResourceInterface {
	return d.Resource(fedResource("federatedconfigmaps", version)).Namespace("shop")
}

// fedConfigMap is a FederatedConfigMap on cells rz00a and rz10a of
// tenant namespace shop, in either version's shape.
func fedConfigMap(t *testing.T, name, version string) *unstructured.Unstructured {
	t.Helper()
	placement := "{topologyType: cell, topologies: [{name: rz00a}, {name: rz10a}]}"
	if version == "v1beta1" {
		placement = "{clusters: [{name: shop.rz00a}, {name: shop.rz10a}]}"
	}
	doc := "apiVersion: types.kubefed.io/" + version + "\nkind: FederatedConfigMap\nmetadata: {name: " + name + ", namespace: shop}\n" +
		"spec:\n  template: {data: {color: blue}}\n  placement: " + placement + "\n"
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	return obj
}

// checkFedShape checks that obj reads in version's shape with the
// placement fedConfigMap wrote (in either version).
func checkFedShape(t *testing.T, obj *unstructured.Unstructured, version string) {
	t.Helper()
	if obj.GetAPIVersion() != "types.kubefed.io/"+version {
		t.Errorf("%s reads as %s, want %s", obj.GetName(), obj.GetAPIVersion(), version)
	}
	color, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "data", "color")
	if color != "blue" {
		t.Errorf("%s: template lost in conversion: %v", obj.GetName(), obj.Object["spec"])
	}
	placement, _, _ := unstructured.NestedMap(obj.Object, "spec", "placement")
	var got []string
	want := []string{"rz00a", "rz10a"}
	key := "topologies"
	if version == "v1beta1" {
		want, key = []string{"shop.rz00a", "shop.rz10a"}, "clusters"
		if _, ok := placement["topologies"]; ok {
			t.Errorf("%s: v1beta1 carries v1beta2 topologies: %v", obj.GetName(), placement)
		}
	} else if placement["topologyType"] != "cell" {
		t.Errorf("%s: topologyType = %v, want cell", obj.GetName(), placement["topologyType"])
	}
	items, _ := placement[key].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		s, _ := m["name"].(string)
		got = append(got, s)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s as %s: placement.%s = %v, want %v", obj.GetName(), version, key, got, want)
	}
}

func runConversionCases(ctx context.Context, t *testing.T, cases []conversionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Storage is v1beta2: writing v1beta1 converts on the writer,
			// reading v1beta1 converts on the reader.
			// The writer's admission may lag the Tenancy fixture by a
			// moment, so the create is retried briefly.
			if err := framework.Poll(ctx, 200*time.Millisecond, 20*time.Second, func(ctx context.Context) (bool, error) {
				_, err := fedConfigMaps(tc.writer, tc.writeAs).Create(ctx, fedConfigMap(t, tc.object, tc.writeAs), metav1.CreateOptions{})
				return err == nil, err
			}); err != nil {
				t.Fatalf("creating %s as %s: %v", tc.object, tc.writeAs, err)
			}
			for _, v := range []string{"v1beta1", "v1beta2"} {
				obj, err := fedConfigMaps(tc.reader, v).Get(ctx, tc.object, metav1.GetOptions{})
				if err != nil {
					t.Errorf("reading %s as %s: %v", tc.object, v, err)
					continue
				}
				checkFedShape(t, obj, v)
			}
		})
	}
}

// --- Writer ---------------------------------------------------------------

// ackedWrite is a write the plane acknowledged: write i either created
// config map w-<i> or set the counter's n to i.
type ackedWrite struct {
	i    int
	name string
	rv   int64
}

// failoverWriter makes replicaWrites writes one after another at a steady
// pace through the first replica that answers, starting with the first;
// after a failed attempt it moves to the next replica and retries the
// write idempotently (a failed write may or may not have landed).
type failoverWriter struct {
	clients []kubernetes.Interface
	done    chan struct{}
	err     error

	mu         sync.Mutex
	acked      []ackedWrite
	failures   int
	switchedTo int
}

func startFailoverWriter(ctx context.Context, clients []kubernetes.Interface) *failoverWriter {
	w := &failoverWriter{clients: clients, done: make(chan struct{}), switchedTo: -1}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(15 * time.Millisecond)
		defer tick.Stop()
		active := 0
		for i := 0; i < replicaWrites; i++ {
			for attempt := 0; ; attempt++ {
				if ctx.Err() != nil {
					w.err = fmt.Errorf("write %d: %w", i, ctx.Err())
					return
				}
				if attempt > 50 {
					w.err = fmt.Errorf("write %d failed on every replica %d times", i, attempt)
					return
				}
				reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
				a, err := write(reqCtx, w.clients[active], i)
				cancel()
				w.mu.Lock()
				if err == nil {
					w.acked = append(w.acked, a)
					if active != 0 && w.switchedTo < 0 {
						w.switchedTo = active
					}
				} else {
					w.failures++
					active = (active + 1) % len(w.clients)
				}
				w.mu.Unlock()
				if err == nil {
					break
				}
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
	}()
	return w
}

// write makes write i idempotently: a create that finds the object
// already there, or an update that finds the counter already at i, is
// the earlier attempt having landed.
func write(ctx context.Context, c kubernetes.Interface, i int) (ackedWrite, error) {
	cms := c.CoreV1().ConfigMaps(replicaNS)
	if i%3 != 2 {
		name := fmt.Sprintf("w-%03d", i)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": strconv.Itoa(i)}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			cm, err = cms.Get(ctx, name, metav1.GetOptions{})
			if err == nil && cm.Data["i"] != strconv.Itoa(i) {
				return ackedWrite{}, fmt.Errorf("%s exists with data %v", name, cm.Data)
			}
		}
		if err != nil {
			return ackedWrite{}, err
		}
		rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		return ackedWrite{i, name, rv}, err
	}
	cm, err := cms.Get(ctx, replicaCounter, metav1.GetOptions{})
	if err != nil {
		return ackedWrite{}, err
	}
	if cm.Data["n"] != strconv.Itoa(i) {
		cm.Data["n"] = strconv.Itoa(i)
		// The Get's resourceVersion is the precondition: a conflict
		// means an earlier attempt landed after all; the retry sees it.
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return ackedWrite{}, err
		}
	}
	rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	return ackedWrite{i, replicaCounter, rv}, err
}

func (w *failoverWriter) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func (w *failoverWriter) waitAcked(t *testing.T, n int) {
	t.Helper()
	if err := framework.Poll(context.Background(), 10*time.Millisecond, time.Minute, func(context.Context) (bool, error) {
		select {
		case <-w.done:
			return false, fmt.Errorf("writer ended: %v", w.err)
		default:
		}
		return w.ackedCount() >= n, nil
	}); err != nil {
		t.Fatalf("waiting for %d acknowledged writes: %v", n, err)
	}
}

// wait waits for the writer to finish and returns the acknowledged writes.
func (w *failoverWriter) wait(t *testing.T) []ackedWrite {
	t.Helper()
	<-w.done
	if w.err != nil {
		t.Fatalf("writer: %v (acknowledged %d)", w.err, len(w.acked))
	}
	if len(w.acked) != replicaWrites {
		t.Fatalf("writer acknowledged %d writes, want %d", len(w.acked), replicaWrites)
	}
	return w.acked
}

// expectedState is the resourceVersion each object must have after the
// acknowledged writes: its last acknowledged write's.
func expectedState(acked []ackedWrite) map[string]int64 {
	out := map[string]int64{}
	for _, a := range acked {
		out[a.name] = a.rv
	}
	return out
}

func lastUpdate(acked []ackedWrite) int {
	last := -1
	for _, a := range acked {
		if a.name == replicaCounter {
			last = a.i
		}
	}
	return last
}

func mustRV(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

func listByName(ctx context.Context, t *testing.T, c kubernetes.Interface) map[string]int64 {
	t.Helper()
	list, err := c.CoreV1().ConfigMaps(replicaNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing config maps: %v", err)
	}
	out := map[string]int64{}
	for _, cm := range list.Items {
		out[cm.Name] = mustRV(t, cm.ResourceVersion)
	}
	return out
}

// --- Watches ---------------------------------------------------------------

type watchEvent struct {
	typ  watch.EventType
	name string
	rv   int64
}

// recordedWatch records the events of a watch on the test namespace.
type recordedWatch struct {
	mu     sync.Mutex
	events []watchEvent
	rvs    map[int64]bool
	err    error
	opens  map[int]int // watches opened, by replica index
}

func newRecordedWatch() *recordedWatch {
	return &recordedWatch{rvs: map[int64]bool{}, opens: map[int]int{}}
}

func (r *recordedWatch) record(ev watch.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if !ok {
		if r.err == nil {
			r.err = fmt.Errorf("unexpected watch event %s %T: %v", ev.Type, ev.Object, ev.Object)
		}
		return
	}
	rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("event %s %s: resourceVersion %q: %v", ev.Type, cm.Name, cm.ResourceVersion, err)
	}
	r.events = append(r.events, watchEvent{ev.Type, cm.Name, rv})
	r.rvs[rv] = true
}

func (r *recordedWatch) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *recordedWatch) error() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *recordedWatch) hasRV(rv int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rvs[rv]
}

func (r *recordedWatch) servedBy(i int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opens[i]
}

func (r *recordedWatch) opened() map[int]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.opens)
}

// startRawWatch is one client-go watch through c from rv. B never dies:
// its watch must not end.
func startRawWatch(ctx context.Context, t *testing.T, c kubernetes.Interface, rv string) *recordedWatch {
	t.Helper()
	timeout := int64(600)
	wi, err := c.CoreV1().ConfigMaps(replicaNS).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatalf("watch through B: %v", err)
	}
	r := newRecordedWatch()
	r.opens[1] = 1
	go func() {
		defer wi.Stop()
		for {
			select {
			case ev, ok := <-wi.ResultChan():
				if !ok {
					if ctx.Err() == nil {
						r.fail(errors.New("the watch through B ended although B is running"))
					}
					return
				}
				if ev.Type == watch.Error {
					r.fail(fmt.Errorf("watch error: %v", apierrors.FromObject(ev.Object)))
					return
				}
				r.record(ev)
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(wi.Stop)
	return r
}

// startFailoverWatch watches from rv with client-go's RetryWatcher, which
// resumes from the last resourceVersion it saw; each (re)watch goes to
// the first replica in clients that accepts it.
func startFailoverWatch(ctx context.Context, t *testing.T, clients []kubernetes.Interface, rv string) *recordedWatch {
	t.Helper()
	r := newRecordedWatch()
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			var errs []error
			for i, c := range clients {
				wi, err := c.CoreV1().ConfigMaps(replicaNS).Watch(ctx, o)
				if err == nil {
					r.mu.Lock()
					r.opens[i]++
					r.mu.Unlock()
					return wi, nil
				}
				errs = append(errs, err)
			}
			return nil, errors.Join(errs...)
		},
	})
	if err != nil {
		t.Fatalf("starting the failover watch: %v", err)
	}
	t.Cleanup(rw.Stop)
	go func() {
		for ev := range rw.ResultChan() {
			if ev.Type == watch.Error {
				r.fail(fmt.Errorf("failover watch error: %v", apierrors.FromObject(ev.Object)))
				return
			}
			r.record(ev)
		}
	}()
	return r
}

// checkWatch checks a watch's events against the acknowledged writes:
// resourceVersions strictly increase, every acknowledged write arrived
// (as an Added for a create, a Modified for an update) and every event of
// the writer's objects is an acknowledged write (none lost, none
// invented, none doubled).
func checkWatch(t *testing.T, r *recordedWatch, acked []ackedWrite) {
	t.Helper()
	r.mu.Lock()
	events := slices.Clone(r.events)
	r.mu.Unlock()
	for i := 1; i < len(events); i++ {
		if events[i].rv <= events[i-1].rv {
			t.Errorf("watch resourceVersions go back: %v then %v", events[i-1], events[i])
		}
	}
	byRV := map[int64]watchEvent{}
	for _, ev := range events {
		byRV[ev.rv] = ev
	}
	missing := 0
	for _, a := range acked {
		ev, ok := byRV[a.rv]
		wantType := watch.Added
		if a.name == replicaCounter {
			wantType = watch.Modified
		}
		switch {
		case !ok:
			missing++
			if missing <= 10 {
				t.Errorf("watch missed acknowledged write %d (%s at rv %d)", a.i, a.name, a.rv)
			}
		case ev.name != a.name || ev.typ != wantType:
			t.Errorf("acknowledged write %d (%s at rv %d) arrived as %s %s", a.i, a.name, a.rv, ev.typ, ev.name)
		}
	}
	if missing > 0 {
		t.Errorf("watch missed %d of %d acknowledged writes", missing, len(acked))
	}
	ackedRVs := map[int64]bool{}
	for _, a := range acked {
		ackedRVs[a.rv] = true
	}
	for _, ev := range events {
		if (ev.name == replicaCounter || strings.HasPrefix(ev.name, "w-")) && !ackedRVs[ev.rv] {
			t.Errorf("watch event %s %s at rv %d is no acknowledged write", ev.typ, ev.name, ev.rv)
		}
	}
}

// --- Informer --------------------------------------------------------------

func startConfigMapInformer(ctx context.Context, t *testing.T, c kubernetes.Interface) cache.SharedIndexInformer {
	t.Helper()
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().ConfigMaps(replicaNS).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().ConfigMaps(replicaNS).Watch(ctx, o)
		},
	}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	infCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go inf.RunWithContext(infCtx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer through B did not sync")
	}
	return inf
}

func informerState(inf cache.SharedIndexInformer) map[string]int64 {
	out := map[string]int64{}
	for _, o := range inf.GetStore().List() {
		cm := o.(*corev1.ConfigMap)
		rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		out[cm.Name] = rv
	}
	return out
}
