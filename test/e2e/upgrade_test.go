package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/test/framework"
)

// TestRollingUpgrade upgrades a running federation from the previous
// release (the commit hack/upgrade/previous names, built by `make
// previous` into _output/previous/<commit>/bin) to this tree's binaries,
// one process at a time, and rolls it back the same way, while a
// workload runs:
//
//   - two plane replicas of the previous release on a private MariaDB
//     database, behind a round-robin balancer (a Service), each with a
//     tunnel hub; its cellfed-controller; two real members joined as
//     cells, and a third (edge-0) in a network namespace, reached through
//     its cellfed-agent;
//   - a writer that creates config maps and updates a counter through the
//     replicas (moving to the other replica when one refuses), kubectl
//     creating config maps through the balancer, a client-go informer
//     through the balancer that records every event, a FederatedConfigMap
//     on all three members updated every half second, and a staged
//     rollout (started by the old release, moved on by the new, finished
//     by the old again).
//
// Upgrade: replica 1, replica 2, the controller, the agent; rollback: the
// agent, the controller, replica 1, replica 2 — each stopped (SIGTERM)
// and started on its data directory and port. Asserted: no acknowledged
// write lost or applied twice, the informer saw every acknowledged write
// (or relisted), no member object deleted or re-created, the federated
// object's updates reach the tunnelled member after each agent step and
// its last value and the rollout reach the members, fields written
// through the new release survive a whole-object update through an old
// replica (a FederatedDeployment, a Cell, a ClusterRegistration), a PUT
// that drops spec.replicaDivision is refused by the new release, and
// every CRD the plane owns carries the new release's schema stamp. The
// longest time without an acknowledged write is logged per step (the
// downtime docs/operations.md reports).
func TestRollingUpgrade(t *testing.T) {
	t.Parallel()
	oldBin := previousRelease(t)
	newBin := filepath.Dir(framework.Binary(t, "cellfed-apiserver"))
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dsn := framework.NewDatabase(t)
	newRelease := release(t)

	// --- The previous release: two replicas, each with a tunnel hub, two
	// members, a third behind a network namespace reached through its
	// agent, cells, its controller.
	ns, why := framework.NewNetNS(t)
	agentBind := "0.0.0.0" // agents in the namespace reach the hubs through the veth
	if ns == nil {
		t.Logf("no network namespace (%s): member edge-0 and its agent run on loopback, its address withheld", why)
		agentBind = ""
	}
	common := []string{"--default-federated-types=configmaps,deployments.apps", "--tunnel-server-count=2", framework.AllowHandIssuedAgents}
	tunnelA, portsA := framework.TunnelPlaneArgs(t, agentBind)
	tunnelB, portsB := framework.TunnelPlaneArgs(t, agentBind)
	opts := framework.PlaneOptions{Endpoint: dsn, Args: append(tunnelA, common...)}
	r1 := &upgradedPlane{name: "replica 1", dataDir: t.TempDir(), port: framework.FreePort(t), opts: opts}
	var members []*framework.Server
	var edge *framework.Server
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		members = framework.StartMembers(t, 2)
	}()
	if ns != nil {
		edge = framework.StartMemberIn(t, "edge-0", ns)
	} else {
		edge = framework.StartMemberNoWait(t, "edge-0")
	}
	r1.start(t, oldBin, "old")
	wg.Wait()
	if err := r1.s.WaitReady(ctx); err != nil {
		t.Fatalf("replica 1 (previous release): %v", err)
	}
	o2 := opts
	o2.Args = append([]string{
		"--shared-pki-dir=" + filepath.Join(r1.dataDir, "pki"),
		"--kms-key-file=" + filepath.Join(r1.dataDir, "kms", "keys"),
	}, append(tunnelB, common...)...)
	r2 := &upgradedPlane{name: "replica 2", dataDir: t.TempDir(), port: framework.FreePort(t), opts: o2}
	r2.start(t, oldBin, "old")
	if err := r2.s.WaitReady(ctx); err != nil {
		t.Fatalf("replica 2 (previous release): %v", err)
	}
	t.Logf("previous release %s: replica 1 :%d, replica 2 :%d", strings.TrimSpace(versionOf(t, r1.s)), r1.port, r2.port)

	// Clients reach the plane as a Service would: a balancer in front of
	// both replicas (a dead one is skipped).
	lb := framework.StartRoundRobin(t, fmt.Sprintf("127.0.0.1:%d", r1.port), fmt.Sprintf("127.0.0.1:%d", r2.port))
	lbKubeconfig := kubeconfigFor(t, r1.s.Kubeconfig, "https://"+lb)
	lbCfg := restConfig(t, lbKubeconfig)
	lbKube := kubernetes.NewForConfigOrDie(lbCfg)
	lbDyn := dynamic.NewForConfigOrDie(lbCfg)
	k := framework.Kubectl{Kubeconfig: lbKubeconfig}

	oldCtl := cellfedctl{bin: filepath.Join(oldBin, "cellfedctl"), kubeconfig: lbKubeconfig}
	newCtl := cellfedctl{bin: filepath.Join(newBin, "cellfedctl"), kubeconfig: lbKubeconfig}
	for i, m := range members {
		oldCtl.ok(t, "join", fmt.Sprintf("member-%d", i), "--kubeconfig-member="+m.Kubeconfig)
	}
	// edge-0's agent (previous release) reaches both hubs through a
	// balancer, as through the hubs' Service; the federation reaches the
	// member through a balancer over both CONNECT frontends.
	tunnel := startEdgeTunnel(ctx, t, r1.s, ns, edge, portsA, portsB)
	agent := tunnel.agent
	agent.start(t, oldBin)
	if err := tunnel.waitReachable(ctx, t); err != nil {
		t.Fatalf("member edge-0 not reachable through its agent (previous release): %v\n%s", err, agent.proc.Tail(30))
	}
	framework.JoinMember(t, r1.s, edge, "edge-0")
	k.MustRun(t, framework.TenantNamespaces, "apply", "-f", "-")
	oldCtl.ok(t, "cell", "create", "rz00a", "-n", "shop", "--cluster=member-0", "--label=zone=z0")
	oldCtl.ok(t, "cell", "create", "rz10a", "-n", "shop", "--cluster=member-1", "--label=zone=z1")
	oldCtl.ok(t, "cell", "create", "rz20a", "-n", "shop", "--cluster=edge-0", "--label=zone=z2")
	ctrl := startUpgradedController(t, oldBin, lbKubeconfig)
	// members are the two direct members; edge-0 is f's member 2.
	f := &federation{kubectl: k, dyn: lbDyn, members: append(slices.Clone(members), edge), ctl: oldCtl}
	for _, m := range f.members {
		f.memberKube = append(f.memberKube, m.Client(t))
	}
	cells := []string{"rz00a", "rz10a"}

	// A federated object updated throughout (on all three members), and
	// a rollout started by the previous release.
	k.MustRun(t, configMap("shop", "ticker", "n: \"0\"", append(slices.Clone(cells), "rz20a"), ""), "apply", "-f", "-")
	k.MustRun(t, deployment("shop", "web", "app:1", cells, ""), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "web", map[string]string{"rz00a": "OK", "rz10a": "OK"})
	f.waitSettled(t, fedCMV2, "shop", "ticker", map[string]string{"rz00a": "OK", "rz10a": "OK", "rz20a": "OK"})
	for i := range members {
		f.waitImage(t, i, "web", "app:1", 1)
		f.memberReady(t, i, "web")
	}
	oldCtl.ok(t, "rollout", "start", "deployment/web", "-n", "shop", "--cells=rz00a")
	f.setImage(t, "web", "app:2")
	f.waitImage(t, 0, "web", "app:2", 2)
	f.memberReady(t, 0, "web")

	// The member objects the federation placed: none may be deleted or
	// re-created by the upgrade or the rollback.
	placed := []memberRef{
		{namespaces, "", "shop"}, {configmaps, "shop", "ticker"}, {deployments, "shop", "web"},
	}
	edgePlaced := []memberRef{{namespaces, "", "shop"}, {configmaps, "shop", "ticker"}}
	placedUIDs := func() map[string]types.UID {
		out := memberUIDs(ctx, t, members, placed)
		for key, uid := range memberUIDs(ctx, t, []*framework.Server{edge}, edgePlaced) {
			out["edge-0"+strings.TrimPrefix(key, "member-0")] = uid
		}
		return out
	}
	uidsBefore := placedUIDs()

	// --- The workload.
	r1Kube, r2Kube := r1.s.Client(t), r2.s.Client(t)
	if _, err := r1Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: replicaNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r1Kube.CoreV1().ConfigMaps(replicaNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: replicaCounter},
		Data: map[string]string{"n": "-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r1Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kubectlNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := startRecordingInformer(ctx, t, lbKube)
	w := startRollingWriter(ctx, []kubernetes.Interface{r1Kube, r2Kube})
	ticker := startFederatedTicker(ctx, lbDyn)
	kw := startKubectlWriter(ctx, k)
	w.waitAcked(t, 50)

	// --- Upgrade: replica 1, then replica 2, then the controller, then the
	// agent.
	var steps []upgradeStep
	// After a replica's restart the agent connects to its hub again: wait
	// for that (the federation reaches edge-0 through either hub).
	tunnelBack := func(step string) {
		t.Helper()
		began := time.Now()
		if err := tunnel.waitReachable(ctx, t); err != nil {
			t.Fatalf("%s: member edge-0 not reachable through both hubs: %v\n%s", step, err, agent.proc.Tail(30))
		}
		t.Logf("%s: edge-0 reachable through both hubs %s after the replica was ready", step, time.Since(began).Round(time.Millisecond))
	}
	steps = append(steps, r1.swap(ctx, t, w, newBin, "new", "upgrade replica 1"))
	tunnelBack("upgrade replica 1")

	t.Run("mixed window: a field written through the new release survives an old replica's whole-object update", func(t *testing.T) {
		ca, err := os.ReadFile(r1.s.PKI().CACert())
		if err != nil {
			t.Fatal(err)
		}
		testMixedWindow(ctx, t, dynamic.NewForConfigOrDie(r1.s.RESTConfig(t)), dynamic.NewForConfigOrDie(r2.s.RESTConfig(t)), ca)
	})

	steps = append(steps, r2.swap(ctx, t, w, newBin, "new", "upgrade replica 2"))
	tunnelBack("upgrade replica 2")
	steps = append(steps, ctrl.swap(t, w, newBin, "upgrade the controller"))
	steps = append(steps, agent.swap(ctx, t, w, tunnel, newBin, "upgrade the agent"))
	f.waitTickerOn(t, ticker, 2, "after the agent's upgrade")
	if v := versionOf(t, r2.s); !strings.Contains(v, "cellfed."+newRelease) {
		t.Errorf("after the upgrade the plane reports %q, want %s", v, newRelease)
	}

	t.Run("every CRD the plane owns is at the new release's schema", func(t *testing.T) {
		checkCRDStamps(ctx, t, r1.s, newRelease)
	})
	crdsUpgraded := ownedCRDs(ctx, t, r1.s)

	// The new release moves the rollout on.
	f.ctl = newCtl
	newCtl.ok(t, "rollout", "next", "deployment/web", "-n", "shop", "--cells=rz10a")
	f.waitImage(t, 1, "web", "app:2", 2)
	f.memberReady(t, 1, "web")
	f.memberReady(t, 0, "web")
	w.waitAcked(t, w.ackedCount()+20)
	uidsUpgraded := placedUIDs()

	// --- Rollback: the agent, the controller, then replica 1, then
	// replica 2.
	steps = append(steps, agent.swap(ctx, t, w, tunnel, oldBin, "roll back the agent"))
	f.waitTickerOn(t, ticker, 2, "after the agent's rollback")
	steps = append(steps, ctrl.swap(t, w, oldBin, "roll back the controller"))
	steps = append(steps, r1.swap(ctx, t, w, oldBin, "old-again", "roll back replica 1"))
	tunnelBack("roll back replica 1")
	steps = append(steps, r2.swap(ctx, t, w, oldBin, "old-again", "roll back replica 2"))
	tunnelBack("roll back replica 2")
	w.waitAcked(t, w.ackedCount()+20)

	// The previous release finishes the rollout.
	f.ctl = oldCtl
	f.rolloutStatus(t, "web", 0)
	oldCtl.ok(t, "rollout", "finish", "deployment/web", "-n", "shop")
	f.waitSettled(t, fedDeployV2, "shop", "web", map[string]string{"rz00a": "OK", "rz10a": "OK"})
	for i := range members {
		f.waitImage(t, i, "web", "app:2", 2)
	}

	lastTick, tickErrs := ticker.stop()
	kubectlAcked, kubectlUncertain, kubectlRefused := kw.stop()
	acked := w.stop(t)
	t.Logf("workload: %d acknowledged writes, %d refused attempts; the federated object updated %d times (%d refused); kubectl created %d config maps (%d attempts refused)",
		len(acked), w.failures(), lastTick, tickErrs, len(kubectlAcked), kubectlRefused)
	for _, s := range steps {
		t.Logf("%s: the process was down %s (stop to ready); longest time without an acknowledged write %s, %d refused writes; the informer listed %d times",
			s.name, s.down.Round(time.Millisecond), s.longestGap.Round(time.Millisecond), s.refused, rec.listsBetween(s.from, s.to))
	}

	t.Run("no acknowledged write lost or applied twice", func(t *testing.T) {
		final := listByName(ctx, t, r2Kube)
		want := expectedState(acked)
		for name, rv := range want {
			if got, ok := final[name]; !ok {
				t.Errorf("acknowledged write %s is missing", name)
			} else if got != rv {
				t.Errorf("%s has resourceVersion %d, its last acknowledged write gave %d", name, got, rv)
			}
		}
		for name := range final {
			if _, ok := want[name]; !ok && strings.HasPrefix(name, "w-") {
				t.Errorf("%s exists but no write of it was acknowledged", name)
			}
		}
		cm, err := r2Kube.CoreV1().ConfigMaps(replicaNS).Get(ctx, replicaCounter, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if last := lastUpdate(acked); cm.Data["n"] != strconv.Itoa(last) {
			t.Errorf("counter = %s, the last acknowledged update wrote %d", cm.Data["n"], last)
		}
		for i := 1; i < len(acked); i++ {
			if acked[i].rv <= acked[i-1].rv {
				t.Errorf("write %d acknowledged at resourceVersion %d, not after write %d's %d", acked[i].i, acked[i].rv, acked[i-1].i, acked[i-1].rv)
			}
		}
	})

	t.Run("every config map kubectl created is there, and no other", func(t *testing.T) {
		list, err := r2Kube.CoreV1().ConfigMaps(kubectlNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "k-") {
				have[cm.Name] = true
			}
		}
		for _, name := range kubectlAcked {
			if !have[name] {
				t.Errorf("kubectl's acknowledged create of %s is lost", name)
			}
			delete(have, name)
		}
		delete(have, kubectlUncertain)
		if len(have) > 0 {
			t.Errorf("config maps no kubectl create acknowledged: %v", slices.Sorted(maps.Keys(have)))
		}
		if len(kubectlAcked) < 20 {
			t.Errorf("kubectl created only %d config maps during the upgrade and rollback", len(kubectlAcked))
		}
	})

	t.Run("the informer saw every acknowledged write", func(t *testing.T) {
		last := acked[len(acked)-1].rv
		if err := framework.Poll(ctx, 50*time.Millisecond, 60*time.Second, func(context.Context) (bool, error) {
			return rec.hasRV(last), nil
		}); err != nil {
			t.Fatalf("the informer never saw the last acknowledged write (rv %d): %v", last, err)
		}
		relists := rec.lists.Load() - 1
		missing, doubled := rec.check(acked)
		t.Logf("informer: %d events, %d relists, %d acknowledged writes missed, %d counter values seen twice", rec.count(), relists, len(missing), len(doubled))
		if len(missing) > 0 && relists == 0 {
			t.Errorf("the informer missed %d acknowledged writes without relisting, e.g. %v", len(missing), missing[:min(5, len(missing))])
		}
		if len(doubled) > 0 {
			t.Errorf("counter values delivered twice as updates (a write applied twice?): %v", doubled[:min(5, len(doubled))])
		}
	})

	t.Run("no member object deleted or re-created", func(t *testing.T) {
		uidsAfter := placedUIDs()
		if len(uidsBefore) != 2*len(placed)+len(edgePlaced) {
			t.Errorf("recorded %d member objects' UIDs, want %d", len(uidsBefore), 2*len(placed)+len(edgePlaced))
		}
		for key, uid := range uidsBefore {
			if uidsUpgraded[key] != uid {
				t.Errorf("%s: UID %s before the upgrade, %s after it", key, uid, uidsUpgraded[key])
			}
			if uidsAfter[key] != uid {
				t.Errorf("%s: UID %s before the upgrade, %s after the rollback", key, uid, uidsAfter[key])
			}
		}
	})

	t.Run("the federated object's last update reached the members", func(t *testing.T) {
		want := strconv.Itoa(lastTick)
		eventually(t, "members hold ticker n="+want, func() (bool, string) {
			var got []string
			for i := range f.members {
				obj := f.memberObject(t, i, configmaps, "shop", "ticker")
				n := ""
				if obj != nil {
					n, _, _ = unstructured.NestedString(obj.Object, "data", "n")
				}
				got = append(got, n)
			}
			return slices.Equal(got, []string{want, want, want}), fmt.Sprintf("members hold n=%v", got)
		})
	})

	t.Run("after the rollback the CRDs keep the new release's stamp", func(t *testing.T) {
		// The previous release predates the stamp: on start it applies
		// its core CRDs over the newer ones (the federated CRDs it leaves
		// alone). What it changed is logged; the stamp must remain and
		// every federated CRD must keep its schema.
		after := ownedCRDs(ctx, t, r1.s)
		for name, up := range crdsUpgraded {
			got, ok := after[name]
			if !ok {
				t.Errorf("CRD %s is gone after the rollback", name)
				continue
			}
			if got.Annotations[federatedtypes.AnnotationSchemaRelease] != newRelease {
				t.Errorf("CRD %s: stamp %q after the rollback, want %s", name, got.Annotations[federatedtypes.AnnotationSchemaRelease], newRelease)
			}
			if reflect.DeepEqual(up.Spec.Versions, got.Spec.Versions) {
				continue
			}
			if got.Labels[federatedtypes.LabelFederatedType] == "true" {
				t.Errorf("federated CRD %s: the rollback changed its schema", name)
			} else {
				t.Logf("core CRD %s: the previous release applied its own versions over the new release's", name)
			}
		}
	})
}

// previousRelease is the directory holding the previous release's
// binaries, as hack/upgrade/build-previous.sh leaves them.
func previousRelease(t *testing.T) string {
	t.Helper()
	root := framework.RepoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "hack", "upgrade", "previous"))
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(raw))
	if len(commit) < 12 {
		t.Fatalf("hack/upgrade/previous holds %q, not a commit", commit)
	}
	dir := filepath.Join(root, "_output", "previous", commit[:12], "bin")
	for _, b := range []string{"cellfed-apiserver", "cellfed-controller", "cellfedctl"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Fatalf("the previous release is not built (%v): run `make previous` (hack/upgrade/build-previous.sh)", err)
		}
	}
	return dir
}

// versionOf is the plane's /version gitVersion.
func versionOf(t *testing.T, s *framework.Server) string {
	t.Helper()
	v, err := s.Client(t).Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("reading /version of %s: %v", s.Name, err)
	}
	return v.GitVersion
}

// kubeconfigFor writes a copy of kubeconfig whose clusters are reached
// at server.
func kubeconfigFor(t *testing.T, kubeconfig, server string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	out := filepath.Join(t.TempDir(), "lb.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func restConfig(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

// --- Processes swapped between releases --------------------------------------

// upgradeStep is what one step of the upgrade cost.
type upgradeStep struct {
	name string
	// down is from the old process's stop to the new one's readiness.
	down time.Duration
	// longestGap is the longest time without an acknowledged write while
	// the step ran; refused the writes refused then.
	longestGap time.Duration
	refused    int
	// from and to bound the step.
	from, to time.Time
}

// upgradedPlane is a plane replica whose binary changes between starts:
// the same data directory, port and flags each time.
type upgradedPlane struct {
	name    string
	dataDir string
	port    int
	opts    framework.PlaneOptions
	s       *framework.Server
}

func (p *upgradedPlane) start(t *testing.T, binDir, tag string) {
	t.Helper()
	proc := framework.StartProcess(t, "cellfed-apiserver "+p.name+" ("+tag+")", filepath.Join(p.dataDir, "apiserver-"+tag+".log"),
		filepath.Join(binDir, "cellfed-apiserver"), framework.PlaneArgs(p.dataDir, p.port, p.opts)...)
	p.s = &framework.Server{Process: proc, DataDir: p.dataDir, Port: p.port, Kubeconfig: filepath.Join(p.dataDir, "admin.kubeconfig")}
}

// swap stops the replica (SIGTERM, as a Deployment's rolling update
// does) and starts binDir's on the same data directory and port.
func (p *upgradedPlane) swap(ctx context.Context, t *testing.T, w *rollingWriter, binDir, tag, step string) upgradeStep {
	t.Helper()
	mark := w.mark()
	began := time.Now()
	p.s.Stop(30 * time.Second)
	p.start(t, binDir, tag)
	if err := p.s.WaitReady(ctx); err != nil {
		t.Fatalf("%s: %s not ready: %v\n%s", step, p.name, err, p.s.Tail(30))
	}
	down := time.Since(began)
	// The writer runs on a while the replica is back, so that what the
	// step cost is measured to its end.
	w.waitAcked(t, w.ackedCount()+20)
	return w.step(step, mark, down)
}

// upgradedController is cellfed-controller, restarted with another
// release's binary.
type upgradedController struct {
	proc   *framework.Process
	args   []string
	health string
	dir    string
}

func startUpgradedController(t *testing.T, binDir, kubeconfig string) *upgradedController {
	t.Helper()
	port := framework.FreePort(t)
	c := &upgradedController{
		dir:    t.TempDir(),
		health: fmt.Sprintf("http://127.0.0.1:%d", port),
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--health-address=127.0.0.1:" + strconv.Itoa(port),
			"--cluster-probe-period=1s", "--cluster-probe-timeout=1s", "--cluster-failure-threshold=2",
			"--cluster-timeout=10s",
			"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s",
		},
	}
	c.start(t, binDir)
	return c
}

func (c *upgradedController) start(t *testing.T, binDir string) {
	t.Helper()
	release := filepath.Base(filepath.Dir(binDir))
	c.proc = framework.StartProcess(t, "cellfed-controller ("+release+")", filepath.Join(c.dir, "controller-"+release+".log"),
		filepath.Join(binDir, "cellfed-controller"), c.args...)
	ctrl := &framework.Controller{Process: c.proc, HealthURL: c.health}
	if err := ctrl.WaitReady(context.Background(), 2*time.Minute); err != nil {
		t.Fatalf("cellfed-controller (%s) not ready: %v\n%s", binDir, err, c.proc.Tail(30))
	}
}

func (c *upgradedController) swap(t *testing.T, w *rollingWriter, binDir, step string) upgradeStep {
	t.Helper()
	mark := w.mark()
	began := time.Now()
	c.proc.Stop(30 * time.Second)
	c.start(t, binDir)
	down := time.Since(began)
	w.waitAcked(t, w.ackedCount()+20)
	return w.step(step, mark, down)
}

// --- The writer ----------------------------------------------------------------

// rollingWriter makes write i (replicas_test.go's: a config map created,
// or the counter set to i) one after another every 50 ms through the
// replica it last succeeded on, moving to the next replica after a
// refused attempt and retrying the write idempotently, until stopped.
type rollingWriter struct {
	clients []kubernetes.Interface
	halt    chan struct{}
	done    chan struct{}
	err     error

	mu       sync.Mutex
	acked    []ackedWrite
	ackedAt  []time.Time
	refusals []time.Time
}

func startRollingWriter(ctx context.Context, clients []kubernetes.Interface) *rollingWriter {
	w := &rollingWriter{clients: clients, halt: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		active := 0
		for i := 0; ; i++ {
			for attempt := 0; ; attempt++ {
				if ctx.Err() != nil {
					w.err = fmt.Errorf("write %d: %w", i, ctx.Err())
					return
				}
				if attempt > 600 {
					w.err = fmt.Errorf("write %d refused %d times", i, attempt)
					return
				}
				reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
				a, err := write(reqCtx, w.clients[active], i)
				cancel()
				now := time.Now()
				w.mu.Lock()
				if err == nil {
					w.acked = append(w.acked, a)
					w.ackedAt = append(w.ackedAt, now)
				} else {
					w.refusals = append(w.refusals, now)
					active = (active + 1) % len(w.clients)
				}
				w.mu.Unlock()
				if err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			select {
			case <-w.halt:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *rollingWriter) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func (w *rollingWriter) failures() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.refusals)
}

func (w *rollingWriter) waitAcked(t *testing.T, n int) {
	t.Helper()
	if err := framework.Poll(context.Background(), 10*time.Millisecond, 2*time.Minute, func(context.Context) (bool, error) {
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

// writerMark is where a step began in the writer's record.
type writerMark struct {
	at       time.Time
	acked    int
	refusals int
}

func (w *rollingWriter) mark() writerMark {
	w.mu.Lock()
	defer w.mu.Unlock()
	return writerMark{time.Now(), len(w.acked), len(w.refusals)}
}

// step measures a step from its mark to now: the longest time between
// acknowledged writes (from the step's start) and the writes refused.
func (w *rollingWriter) step(name string, m writerMark, down time.Duration) upgradeStep {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := upgradeStep{name: name, down: down, refused: len(w.refusals) - m.refusals, from: m.at, to: time.Now()}
	prev := m.at
	for _, at := range w.ackedAt[m.acked:] {
		if gap := at.Sub(prev); gap > s.longestGap {
			s.longestGap = gap
		}
		prev = at
	}
	return s
}

func (w *rollingWriter) stop(t *testing.T) []ackedWrite {
	t.Helper()
	close(w.halt)
	<-w.done
	if w.err != nil {
		t.Fatalf("writer: %v (acknowledged %d)", w.err, len(w.acked))
	}
	return slices.Clone(w.acked)
}

// --- The informer --------------------------------------------------------------

// recordingInformer is a client-go informer on the writer's namespace
// that records every event it delivers and counts its lists.
type recordingInformer struct {
	lists atomic.Int32

	mu        sync.Mutex
	listTimes []time.Time
	rvs       map[int64]bool
	counts    map[string]int // counter values delivered
	events    int
}

func startRecordingInformer(ctx context.Context, t *testing.T, c kubernetes.Interface) *recordingInformer {
	t.Helper()
	r := &recordingInformer{rvs: map[int64]bool{}, counts: map[string]int{}}
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			r.listed()
			return c.CoreV1().ConfigMaps(replicaNS).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				r.listed() // a watch-list is a list
			}
			return c.CoreV1().ConfigMaps(replicaNS).Watch(ctx, o)
		},
	}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	record := func(obj any, update bool) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events++
		if r.rvs[rv] {
			return // the same object version again (a relist's replace)
		}
		r.rvs[rv] = true
		if update && cm.Name == replicaCounter {
			r.counts[cm.Data["n"]]++
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record(obj, false) },
		UpdateFunc: func(_, obj any) { record(obj, true) },
	}); err != nil {
		t.Fatal(err)
	}
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	return r
}

func (r *recordingInformer) listed() {
	r.lists.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listTimes = append(r.listTimes, time.Now())
}

// listsBetween counts the lists made from from to to.
func (r *recordingInformer) listsBetween(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, at := range r.listTimes {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

func (r *recordingInformer) hasRV(rv int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rvs[rv]
}

func (r *recordingInformer) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events
}

// check returns the acknowledged writes the informer did not deliver,
// and the counter values it delivered in more than one object version.
func (r *recordingInformer) check(acked []ackedWrite) (missing []string, doubled []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range acked {
		if !r.rvs[a.rv] {
			missing = append(missing, fmt.Sprintf("%d (%s at rv %d)", a.i, a.name, a.rv))
		}
	}
	for v, n := range r.counts {
		if n > 1 {
			doubled = append(doubled, fmt.Sprintf("n=%s ×%d", v, n))
		}
	}
	return missing, doubled
}

// --- The federated object ------------------------------------------------------

// federatedTicker sets FederatedConfigMap shop/ticker's data.n to 1, 2,
// … every half second through the balancer.
type federatedTicker struct {
	halt chan struct{}
	done chan struct{}
	last atomic.Int64
	errs int
}

func startFederatedTicker(ctx context.Context, dyn dynamic.Interface) *federatedTicker {
	f := &federatedTicker{halt: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for n := 1; ; {
			select {
			case <-f.halt:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			body := fmt.Sprintf(`{"spec":{"template":{"data":{"n":"%d"}}}}`, n)
			reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := dyn.Resource(fedCMV2).Namespace("shop").Patch(reqCtx, "ticker", types.MergePatchType, []byte(body), metav1.PatchOptions{})
			cancel()
			if err != nil {
				f.errs++
				continue
			}
			f.last.Store(int64(n))
			n++
		}
	}()
	return f
}

// stop ends the ticker; it returns the last value acknowledged and the
// number of refused updates.
func (f *federatedTicker) stop() (int, int) {
	close(f.halt)
	<-f.done
	return int(f.last.Load()), f.errs
}

// waitTickerOn waits until member i holds a ticker value the ticker had
// acknowledged when the wait began: updates reach it again.
func (f *federation) waitTickerOn(t *testing.T, ticker *federatedTicker, i int, when string) {
	t.Helper()
	want := int(ticker.last.Load())
	eventually(t, fmt.Sprintf("member %d holds ticker n>=%d %s", i, want, when), func() (bool, string) {
		obj := f.memberObject(t, i, configmaps, "shop", "ticker")
		if obj == nil {
			return false, "no ticker"
		}
		s, _, _ := unstructured.NestedString(obj.Object, "data", "n")
		n, _ := strconv.Atoi(s)
		return n >= want, "n=" + s
	})
}

// --- Member objects --------------------------------------------------------------

type memberRef struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

// memberUIDs reads each object's UID in every member.
func memberUIDs(ctx context.Context, t *testing.T, members []*framework.Server, refs []memberRef) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for i, m := range members {
		dyn := dynamic.NewForConfigOrDie(m.RESTConfig(t))
		for _, r := range refs {
			var ri dynamic.ResourceInterface = dyn.Resource(r.gvr)
			if r.namespace != "" {
				ri = dyn.Resource(r.gvr).Namespace(r.namespace)
			}
			obj, err := ri.Get(ctx, r.name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("member-%d: %s %s/%s: %v", i, r.gvr.Resource, r.namespace, r.name, err)
			}
			out[fmt.Sprintf("member-%d %s %s/%s", i, r.gvr.Resource, r.namespace, r.name)] = obj.GetUID()
		}
	}
	return out
}

// --- The mixed window ---------------------------------------------------------------

// testMixedWindow writes objects through the new replica, updates them
// through the old one with whole-object updates (GET, change, PUT) and
// reads them back through the new one: nothing the new release wrote may
// be dropped.
func testMixedWindow(ctx context.Context, t *testing.T, newDyn, oldDyn dynamic.Interface, caPEM []byte) {
	// A FederatedDeployment with spec.replicaDivision, created through
	// the new replica.
	const name = "divided"
	obj := strings.Replace(deployment("shop", name, "app:1", []string{"rz00a", "rz10a"},
		"  replicaDivision:\n    mode: Divide\n    topologies:\n    - {name: rz00a, weight: 1}\n    - {name: rz10a, weight: 3}\n"),
		"replicas: 2", "replicas: 8", 1)
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(yamlToJSON(t, obj), &u.Object); err != nil {
		t.Fatal(err)
	}
	created, err := newDyn.Resource(fedDeployV2).Namespace("shop").Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s through the new replica: %v", name, err)
	}
	division, _, _ := unstructured.NestedMap(created.Object, "spec", "replicaDivision")
	if len(division) == 0 {
		t.Fatalf("the new replica dropped spec.replicaDivision on create: %v", created.Object["spec"])
	}
	// GET-modify-PUT of the whole object through the old replica, again
	// on a conflict (the controller writes the object's status).
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		old, err := oldDyn.Resource(fedDeployV2).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading %s through the old replica: %w", name, err)
		}
		containers, _, _ := unstructured.NestedSlice(old.Object, "spec", "template", "spec", "template", "spec", "containers")
		if len(containers) == 0 {
			return fmt.Errorf("%s through the old replica has no containers: %v", name, old.Object["spec"])
		}
		containers[0].(map[string]any)["image"] = "app:2"
		if err := unstructured.SetNestedSlice(old.Object, containers, "spec", "template", "spec", "template", "spec", "containers"); err != nil {
			return err
		}
		_, err = oldDyn.Resource(fedDeployV2).Namespace("shop").Update(ctx, old, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("whole-object update of %s through the old replica: %v", name, err)
	}
	for _, via := range []struct {
		name string
		dyn  dynamic.Interface
	}{{"new", newDyn}, {"old", oldDyn}} {
		got, err := via.dyn.Resource(fedDeployV2).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading %s through the %s replica: %v", name, via.name, err)
		}
		after, _, _ := unstructured.NestedMap(got.Object, "spec", "replicaDivision")
		if !reflect.DeepEqual(after, division) {
			t.Errorf("through the %s replica after the old replica's update: spec.replicaDivision = %v, want %v", via.name, after, division)
		}
		if img := templateImage(got); img != "app:2" {
			t.Errorf("through the %s replica: image %q, want the old replica's update app:2", via.name, img)
		}
	}

	// A Cell: the new replica's object, updated whole through the old
	// one, keeps its spec.
	cellNew, err := newDyn.Resource(cellv1alpha1.CellsResource).Namespace("shop").Get(ctx, "rz00a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cellOld, err := oldDyn.Resource(cellv1alpha1.CellsResource).Namespace("shop").Get(ctx, "rz00a", metav1.GetOptions{})
		if err != nil {
			return err
		}
		labels := cellOld.GetLabels()
		labels["upgrade"] = "mixed"
		cellOld.SetLabels(labels)
		_, err = oldDyn.Resource(cellv1alpha1.CellsResource).Namespace("shop").Update(ctx, cellOld, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("whole-object update of cell shop/rz00a through the old replica: %v", err)
	}
	cellAfter, err := newDyn.Resource(cellv1alpha1.CellsResource).Namespace("shop").Get(ctx, "rz00a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cellAfter.Object["spec"], cellNew.Object["spec"]) {
		t.Errorf("cell shop/rz00a's spec changed by the old replica's update: %v, was %v", cellAfter.Object["spec"], cellNew.Object["spec"])
	}
	if cellAfter.GetLabels()["upgrade"] != "mixed" {
		t.Errorf("the old replica's label is missing: %v", cellAfter.GetLabels())
	}

	// A ClusterRegistration, as an agent leaves it: created through the
	// new replica, updated whole through the old one.
	regNew, err := newDyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Create(ctx, mixedRegistration(t, caPEM), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ClusterRegistration edge-mixed through the new replica: %v", err)
	}
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		regOld, err := oldDyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Get(ctx, regNew.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		regOld.SetLabels(map[string]string{"upgrade": "mixed"})
		_, err = oldDyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Update(ctx, regOld, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("whole-object update of ClusterRegistration edge-mixed through the old replica: %v", err)
	}
	regAfter, err := newDyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Get(ctx, regNew.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(regAfter.Object["spec"], regNew.Object["spec"]) {
		t.Errorf("ClusterRegistration edge-mixed's spec changed by the old replica's update: %v, was %v", regAfter.Object["spec"], regNew.Object["spec"])
	}
	if regAfter.GetLabels()["upgrade"] != "mixed" {
		t.Errorf("ClusterRegistration edge-mixed: the old replica's label is missing: %v", regAfter.GetLabels())
	}
	if err := newDyn.Resource(cellv1alpha1.ClusterRegistrationsResource).Delete(ctx, regNew.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting ClusterRegistration edge-mixed: %v", err)
	}

	// A client built before spec.replicaDivision existed decodes the
	// object without it, and its whole-object update leaves it out: the
	// new release refuses that PUT, saying how to remove the field on
	// purpose (a patch), which it then takes.
	stale, err := newDyn.Resource(fedDeployV2).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(stale.Object, "spec", "replicaDivision")
	_, err = newDyn.Resource(fedDeployV2).Namespace("shop").Update(ctx, stale, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicaDivision") || !strings.Contains(err.Error(), "kubectl patch") {
		t.Errorf("a PUT leaving spec.replicaDivision out through the new replica: got %v, want Invalid naming the field and the patch that removes it", err)
	}
	removed, err := newDyn.Resource(fedDeployV2).Namespace("shop").Patch(ctx, name, types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/spec/replicaDivision"}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("removing spec.replicaDivision with a patch: %v", err)
	}
	if _, found, _ := unstructured.NestedMap(removed.Object, "spec", "replicaDivision"); found {
		t.Errorf("the patch left spec.replicaDivision: %v", removed.Object["spec"])
	}
}

// mixedRegistration is a ClusterRegistration as an agent would leave it,
// pending approval.
func mixedRegistration(t *testing.T, caPEM []byte) *unstructured.Unstructured {
	t.Helper()
	_, csrPEM, err := pki.NewAgentKeyAndCSR("edge-mixed")
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cellv1alpha1.SchemeGroupVersion.String(),
		"kind":       "ClusterRegistration",
		"metadata":   map[string]any{"name": "edge-mixed"},
		"spec": map[string]any{
			"apiEndpoint":          "https://127.0.0.1:9",
			"caBundle":             base64.StdEncoding.EncodeToString(caPEM),
			"tlsServerName":        "localhost",
			"memberServiceAccount": "kube-federation-system/cellfed-agent",
			"csr":                  base64.StdEncoding.EncodeToString(csrPEM),
		},
	}}
}

// templateImage is a FederatedDeployment's first container image.
func templateImage(obj *unstructured.Unstructured) string {
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return ""
	}
	img, _ := containers[0].(map[string]any)["image"].(string)
	return img
}

// yamlToJSON turns a fixture's YAML into JSON.
func yamlToJSON(t *testing.T, doc string) []byte {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("parsing fixture: %v", err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// --- CRDs ---------------------------------------------------------------------------

// ownedGroups are the API groups of the CRDs the plane owns (federated
// CRDs carry federatedtypes.LabelFederatedType).
var ownedGroups = []string{"core.kubefed.io", "scheduling.kubefed.io", "core.cellfed.io", "policy.cellfed.io"}

func ownedCRDs(ctx context.Context, t *testing.T, s *framework.Server) map[string]apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	c := apiextensionsclient.NewForConfigOrDie(s.RESTConfig(t))
	list, err := c.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range list.Items {
		if slices.Contains(ownedGroups, crd.Spec.Group) || crd.Labels[federatedtypes.LabelFederatedType] == "true" {
			out[crd.Name] = crd
		}
	}
	return out
}

func checkCRDStamps(ctx context.Context, t *testing.T, s *framework.Server, release string) {
	t.Helper()
	owned := ownedCRDs(ctx, t, s)
	var federated int
	for name, crd := range owned {
		if got := crd.Annotations[federatedtypes.AnnotationSchemaRelease]; got != release {
			t.Errorf("CRD %s: %s=%q, want %s", name, federatedtypes.AnnotationSchemaRelease, got, release)
		}
		if crd.Labels[federatedtypes.LabelFederatedType] == "true" {
			federated++
		}
	}
	if federated < 2 || len(owned) < 6 {
		t.Errorf("found %d CRDs the plane owns (%d federated): want the core CRDs and the enabled types' (configmaps, deployments)", len(owned), federated)
	}
	t.Logf("%d CRDs at %s (%d federated)", len(owned), release, federated)
}

// --- The tunnelled member ---------------------------------------------------------

// edgeTunnel is member edge-0 behind its network namespace, its agent,
// and the ways to reach it: through each replica's CONNECT frontend and
// through a balancer over both (what its KubeFedCluster names).
type edgeTunnel struct {
	agent *upgradedAgent
	// via are copies of the member reached through replica 1's frontend,
	// replica 2's, and the balancer.
	via []*framework.Server
}

// startEdgeTunnel prepares edge's agent (started by the caller) and
// points edge at the CONNECT balancer.
func startEdgeTunnel(ctx context.Context, t *testing.T, plane *framework.Server, ns *framework.NetNS, edge *framework.Server, portsA, portsB framework.TunnelPorts) *edgeTunnel {
	t.Helper()
	if err := edge.WaitKubeconfig(ctx); err != nil {
		t.Fatalf("member edge-0: %v", err)
	}
	local := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	agentHost := "127.0.0.1"
	if ns != nil {
		agentHost = ns.HostIP
	}
	agentLB := framework.StartRoundRobinOn(t, agentHost, local(portsA.AgentPort), local(portsB.AgentPort))
	connectLB := framework.StartRoundRobin(t, local(portsA.ConnectPort), local(portsB.ConnectPort))
	_, p, _ := net.SplitHostPort(connectLB)
	connectPort, _ := strconv.Atoi(p)
	cert, key := framework.IssueAgentCert(t, plane, "edge-0", 24*time.Hour)
	tn := &edgeTunnel{agent: &upgradedAgent{ns: ns, dir: t.TempDir(), args: []string{
		"--cluster=edge-0",
		"--hub-address=" + agentLB,
		"--hub-server-name=localhost", // the plane's serving certificate names localhost
		"--hub-ca-file=" + plane.PKI().CACert(),
		"--cert-file=" + cert,
		"--key-file=" + key,
		"--kubeconfig=" + edge.Kubeconfig,
		"--v=2",
	}}}
	ca := framework.TunnelProxyCA(t, plane)
	for _, ports := range []framework.TunnelPorts{portsA, portsB, {ConnectPort: connectPort}} {
		m := *edge
		m.ProxyURL, m.ProxyCA = framework.TunnelProxyURL(t, plane, ports, "edge-0"), ca
		tn.via = append(tn.via, &m)
	}
	edge.ProxyURL, edge.ProxyCA = tn.via[2].ProxyURL, ca
	return tn
}

// waitReachable waits until edge-0 answers through both replicas'
// CONNECT frontends and the balancer: its agent holds a tunnel to each
// hub.
func (tn *edgeTunnel) waitReachable(ctx context.Context, t *testing.T) error {
	t.Helper()
	for i, m := range tn.via {
		c := kubernetes.NewForConfigOrDie(m.RESTConfig(t))
		if err := framework.Poll(ctx, 200*time.Millisecond, 2*time.Minute, func(ctx context.Context) (bool, error) {
			reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := c.CoreV1().Namespaces().Get(reqCtx, "default", metav1.GetOptions{})
			return err == nil, nil
		}); err != nil {
			return fmt.Errorf("through %s: %w", []string{"replica 1's CONNECT frontend", "replica 2's", "the balancer"}[i], err)
		}
	}
	return nil
}

// upgradedAgent is cellfed-agent in edge-0's network namespace,
// restarted with another release's binary and the same certificate.
type upgradedAgent struct {
	ns   *framework.NetNS
	dir  string
	args []string
	proc *framework.Process
}

func (a *upgradedAgent) start(t *testing.T, binDir string) {
	t.Helper()
	release := filepath.Base(filepath.Dir(binDir))
	bin, args := filepath.Join(binDir, "cellfed-agent"), a.args
	if a.ns != nil {
		bin, args = a.ns.Command(bin, args...)
	}
	a.proc = framework.StartProcess(t, "cellfed-agent edge-0 ("+release+")", filepath.Join(a.dir, "agent-"+release+".log"), bin, args...)
}

// swap stops the agent (SIGTERM) and starts binDir's; the step's "down"
// is from the stop until the member answers through both hubs again.
func (a *upgradedAgent) swap(ctx context.Context, t *testing.T, w *rollingWriter, tn *edgeTunnel, binDir, step string) upgradeStep {
	t.Helper()
	mark := w.mark()
	began := time.Now()
	a.proc.Stop(30 * time.Second)
	a.start(t, binDir)
	if err := tn.waitReachable(ctx, t); err != nil {
		t.Fatalf("%s: member edge-0 not reachable through the new agent: %v\n%s", step, err, a.proc.Tail(30))
	}
	down := time.Since(began)
	w.waitAcked(t, w.ackedCount()+20)
	return w.step(step, mark, down)
}

// --- kubectl ------------------------------------------------------------------------

// kubectlNS holds the config maps kubectlWriter creates.
const kubectlNS = "upgrade-kubectl"

// kubectlWriter creates config maps k-0, k-1, … with `kubectl create`
// through the balancer, one after another, as an operator's script or a
// CI job would during the upgrade. A refused create is tried again;
// AlreadyExists on a retry means the earlier attempt was applied.
type kubectlWriter struct {
	halt, done chan struct{}
	acked      []string
	uncertain  string // a create in doubt when the writer stopped
	refused    int
}

func startKubectlWriter(ctx context.Context, k framework.Kubectl) *kubectlWriter {
	kw := &kubectlWriter{halt: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(kw.done)
		for i := 0; ; i++ {
			name := fmt.Sprintf("k-%d", i)
			for attempt := 0; ; attempt++ {
				out, err := k.Run(ctx, "", "create", "configmap", name, "-n", kubectlNS, "--from-literal=i="+strconv.Itoa(i), "--request-timeout=10s")
				if err == nil || (attempt > 0 && strings.Contains(out+err.Error(), "AlreadyExists")) {
					kw.acked = append(kw.acked, name)
					break
				}
				kw.refused++
				select {
				case <-kw.halt:
					kw.uncertain = name
					return
				case <-ctx.Done():
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
			select {
			case <-kw.halt:
				return
			case <-ctx.Done():
				return
			case <-time.After(300 * time.Millisecond): // the write rate, not a sync
			}
		}
	}()
	return kw
}

// stop ends the writer: the acknowledged creates, the one in doubt and
// the refused attempts.
func (kw *kubectlWriter) stop() ([]string, string, int) {
	close(kw.halt)
	<-kw.done
	return kw.acked, kw.uncertain, kw.refused
}
