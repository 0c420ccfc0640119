package manifests_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/cellfed/cellfed/manifests"
	"github.com/cellfed/cellfed/pkg/apiserver"
	"github.com/cellfed/cellfed/pkg/controller"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/test/framework"
)

// The deployment's namespace and the Secrets its users create (README.md
// "Running in production"; the example-secrets overlay generates them).
const deployNamespace = "cellfed-system"

var userSecrets = []string{"cellfed-controller-kubeconfig", "cellfed-datastore", "cellfed-kms", "cellfed-pki"}

// sharedPKIFiles are the files --shared-pki-dir holds, named by the code
// that reads them in the data dir.
func sharedPKIFiles() []string {
	f := pki.Files{}
	names := []string{f.CACert(), f.CAKey(), f.ServiceAccountKey(), f.AgentCACert(), f.AgentCAKey(), apiserver.TunnelConnectSecretFile(f)}
	slices.Sort(names)
	return names
}

// kustomize builds a kustomization with the kustomize built into kubectl.
func kustomize(t *testing.T, dir string) ([]byte, error) {
	t.Helper()
	out, err := framework.Kubectl{}.Run(context.Background(), "", "kustomize", dir)
	return []byte(out), err
}

// decodeStrict splits a YAML stream and decodes every document with the
// client-go scheme, refusing unknown and duplicate fields.
func decodeStrict(t *testing.T, stream []byte) ([]runtime.Object, error) {
	t.Helper()
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var objs []runtime.Object
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(d)) == 0 {
			continue
		}
		obj, _, err := dec.Decode(d, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", firstLines(d, 6), err)
		}
		objs = append(objs, obj)
	}
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " | ")
}

func mustBuild(t *testing.T, dir string) []runtime.Object {
	t.Helper()
	out, err := kustomize(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeStrict(t, out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func repoPath(t *testing.T, p ...string) string {
	return filepath.Join(append([]string{framework.RepoRoot(t)}, p...)...)
}

// deployObjects is manifests/deploy sorted by type.
type deployObjects struct {
	namespace             *corev1.Namespace
	apiserver, controller *appsv1.Deployment
	service               *corev1.Service
	pdb                   *policyv1.PodDisruptionBudget
	netpol                *networkingv1.NetworkPolicy
	serviceAccounts       map[string]*corev1.ServiceAccount
	secrets               map[string]*corev1.Secret
}

func sortObjects(t *testing.T, objs []runtime.Object) deployObjects {
	t.Helper()
	d := deployObjects{serviceAccounts: map[string]*corev1.ServiceAccount{}, secrets: map[string]*corev1.Secret{}}
	for _, o := range objs {
		m, err := metaOf(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, isNS := o.(*corev1.Namespace); !isNS && m.GetNamespace() != deployNamespace {
			t.Errorf("%T %s is in namespace %q, not %s", o, m.GetName(), m.GetNamespace(), deployNamespace)
		}
		switch o := o.(type) {
		case *corev1.Namespace:
			d.namespace = o
		case *appsv1.Deployment:
			switch o.Name {
			case "cellfed-apiserver":
				d.apiserver = o
			case "cellfed-controller":
				d.controller = o
			default:
				t.Errorf("unexpected Deployment %s", o.Name)
			}
		case *corev1.Service:
			d.service = o
		case *policyv1.PodDisruptionBudget:
			d.pdb = o
		case *networkingv1.NetworkPolicy:
			d.netpol = o
		case *corev1.ServiceAccount:
			d.serviceAccounts[o.Name] = o
		case *corev1.Secret:
			d.secrets[o.Name] = o
		default:
			t.Errorf("unexpected object %T %s", o, m.GetName())
		}
	}
	if d.namespace == nil || d.apiserver == nil || d.controller == nil || d.service == nil || d.pdb == nil || d.netpol == nil {
		t.Fatalf("manifests/deploy lacks an object: %+v", d)
	}
	if d.namespace.Name != deployNamespace {
		t.Errorf("namespace %s, want %s", d.namespace.Name, deployNamespace)
	}
	return d
}

func metaOf(o runtime.Object) (metav1.Object, error) {
	m, ok := o.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", o)
	}
	return m, nil
}

// TestDeployManifests builds manifests/deploy with kustomize, decodes it
// strictly and checks that its parts fit together: flags the binaries
// have, Secrets users are told to create, selectors, ports, probes and
// the security settings.
func TestDeployManifests(t *testing.T) {
	t.Parallel()
	d := sortObjects(t, mustBuild(t, repoPath(t, "manifests", "deploy")))
	if len(d.secrets) != 0 {
		t.Errorf("manifests/deploy must hold no Secrets (no key material in git), has %v", slices.Sorted(maps.Keys(d.secrets)))
	}
	if got := d.namespace.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace enforces pod security %q, want restricted", got)
	}

	api := d.apiserver
	apiPod := labels.Set(api.Spec.Template.Labels)
	ctrlPod := labels.Set(d.controller.Spec.Template.Labels)
	for _, dep := range []*appsv1.Deployment{api, d.controller} {
		sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
			t.Errorf("Deployment %s: selector %v does not select its pods (%v)", dep.Name, dep.Spec.Selector, err)
		}
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
			t.Errorf("Deployment %s: replicas %v, want 2", dep.Name, dep.Spec.Replicas)
		}
		checkPodSecurity(t, dep)
		sa := d.serviceAccounts[dep.Spec.Template.Spec.ServiceAccountName]
		if sa == nil {
			t.Errorf("Deployment %s runs as ServiceAccount %q, which the manifests do not create", dep.Name, dep.Spec.Template.Spec.ServiceAccountName)
		} else if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			t.Errorf("ServiceAccount %s mounts its token: cellfed needs no access to the hosting cluster's API", sa.Name)
		}
		checkVolumes(t, dep)
		checkSecretRefs(t, dep)
	}
	if sel, _ := metav1.LabelSelectorAsSelector(api.Spec.Selector); sel.Matches(ctrlPod) {
		t.Errorf("the apiserver Deployment's selector also selects the controller's pods")
	}
	if ru := api.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("apiserver rolling update: maxUnavailable must be 0, got %+v", ru)
	}
	if aff := api.Spec.Template.Spec.Affinity; aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Errorf("apiserver replicas have no pod anti-affinity")
	} else {
		term := aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
		if sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector); err != nil || !sel.Matches(apiPod) || term.TopologyKey != corev1.LabelHostname {
			t.Errorf("apiserver anti-affinity does not spread its own pods over nodes: %+v", term)
		}
	}

	// The Service, the PDB and the NetworkPolicy select the plane's pods.
	if !labels.SelectorFromSet(d.service.Spec.Selector).Matches(apiPod) || labels.SelectorFromSet(d.service.Spec.Selector).Matches(ctrlPod) {
		t.Errorf("Service selector %v does not select exactly the plane's pods", d.service.Spec.Selector)
	}
	if sel, err := metav1.LabelSelectorAsSelector(d.pdb.Spec.Selector); err != nil || !sel.Matches(apiPod) {
		t.Errorf("PDB selector %v does not select the plane's pods", d.pdb.Spec.Selector)
	}
	if d.pdb.Spec.MinAvailable == nil || d.pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PDB minAvailable %v, want 1", d.pdb.Spec.MinAvailable)
	}
	if sel, err := metav1.LabelSelectorAsSelector(&d.netpol.Spec.PodSelector); err != nil || !sel.Matches(apiPod) {
		t.Errorf("NetworkPolicy does not select the plane's pods")
	}

	// Flags: every argument is a flag of the real binary, and parses.
	apiC := api.Spec.Template.Spec.Containers[0]
	var fss cliflag.NamedFlagSets
	apiserver.NewOptions().AddFlags(&fss)
	apiFlags := pflag.NewFlagSet("cellfed-apiserver", pflag.ContinueOnError)
	for _, f := range fss.FlagSets {
		apiFlags.AddFlagSet(f)
	}
	apiArgs := checkArgs(t, "cellfed-apiserver", apiFlags, apiC)
	ctrlC := d.controller.Spec.Template.Spec.Containers[0]
	ctrlFlags := pflag.NewFlagSet("cellfed-controller", pflag.ContinueOnError)
	controller.NewOptions().AddFlags(ctrlFlags)
	ctrlArgs := checkArgs(t, "cellfed-controller", ctrlFlags, ctrlC)

	// Ports: what the flags listen on is what the pod, the probes, the
	// Service and the NetworkPolicy name.
	ports := map[string]int32{}
	for _, p := range apiC.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for flag, name := range map[string]string{"secure-port": "https", "tunnel-agent-port": "tunnel-agent", "tunnel-grpc-port": "tunnel-grpc", "tunnel-connect-port": "tunnel-connect"} {
		if got, want := apiArgs[flag], strconv.Itoa(int(ports[name])); got != want {
			t.Errorf("--%s=%s but container port %s is %s", flag, got, name, want)
		}
	}
	for _, flag := range []string{"bind-address", "tunnel-agent-bind-address", "tunnel-grpc-bind-address", "tunnel-connect-bind-address"} {
		if apiArgs[flag] != "0.0.0.0" {
			t.Errorf("--%s=%q: the Service cannot reach a pod listening on loopback", flag, apiArgs[flag])
		}
	}
	svcPorts := map[int32]string{}
	for _, p := range d.service.Spec.Ports {
		if _, ok := ports[p.TargetPort.String()]; !ok {
			t.Errorf("Service port %s targets %q, not a port of the plane's container", p.Name, p.TargetPort.String())
		}
		svcPorts[p.Port] = p.TargetPort.String()
	}
	if want := map[int32]string{443: "https", 8132: "tunnel-agent", 8131: "tunnel-grpc", 8133: "tunnel-connect"}; !maps.Equal(svcPorts, want) {
		t.Errorf("Service ports %v, want %v", svcPorts, want)
	}
	for _, rule := range d.netpol.Spec.Ingress {
		for _, p := range rule.Ports {
			if _, ok := ports[p.Port.String()]; !ok {
				t.Errorf("NetworkPolicy names port %q, not a port of the plane's container", p.Port.String())
			}
			if (p.Port.String() == "tunnel-connect" || p.Port.String() == "tunnel-grpc") && !netpolOnlyFrom(rule, ctrlPod) {
				t.Errorf("NetworkPolicy opens %s to more than the controller", p.Port.String())
			}
		}
	}
	for name, p := range map[string]*corev1.Probe{"startup": apiC.StartupProbe, "liveness": apiC.LivenessProbe, "readiness": apiC.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("apiserver has no HTTP %s probe", name)
			continue
		}
		if p.HTTPGet.Scheme != corev1.URISchemeHTTPS || p.HTTPGet.Port.String() != "https" {
			t.Errorf("apiserver %s probe %s on %s, want HTTPS on the secure port", name, p.HTTPGet.Scheme, p.HTTPGet.Port.String())
		}
	}
	if apiC.ReadinessProbe.HTTPGet.Path != "/readyz" || apiC.LivenessProbe.HTTPGet.Path != "/livez" {
		t.Errorf("apiserver probes %s/%s, want /readyz and /livez", apiC.ReadinessProbe.HTTPGet.Path, apiC.LivenessProbe.HTTPGet.Path)
	}
	_, healthPort, _ := strings.Cut(ctrlArgs["health-address"], ":")
	for name, p := range map[string]*corev1.Probe{"liveness": ctrlC.LivenessProbe, "readiness": ctrlC.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("controller has no HTTP %s probe", name)
			continue
		}
		if got := portNumber(ctrlC, p.HTTPGet.Port.String()); got != healthPort {
			t.Errorf("controller %s probe on port %s, --health-address=%s", name, got, ctrlArgs["health-address"])
		}
		// /readyz is ok only on the leader: as readiness it would keep
		// the standby unready and stall rolling updates.
		if p.HTTPGet.Path != "/healthz" {
			t.Errorf("controller %s probe %s, want /healthz", name, p.HTTPGet.Path)
		}
	}
	if !strings.HasPrefix(ctrlArgs["health-address"], "0.0.0.0:") {
		t.Errorf("--health-address=%s: the kubelet probes the pod's IP", ctrlArgs["health-address"])
	}
	if ctrlArgs["leader-elect"] != "true" {
		t.Errorf("controller runs two replicas without --leader-elect")
	}

	// Files the flags name are where the Secrets are mounted.
	mounts := func(c corev1.Container) map[string]string {
		m := map[string]string{}
		for _, vm := range c.VolumeMounts {
			m[vm.MountPath] = vm.Name
		}
		return m
	}
	apiMounts, ctrlMounts := mounts(apiC), mounts(ctrlC)
	volumes := func(dep *appsv1.Deployment) map[string]corev1.Volume {
		m := map[string]corev1.Volume{}
		for _, v := range dep.Spec.Template.Spec.Volumes {
			m[v.Name] = v
		}
		return m
	}
	apiVols, ctrlVols := volumes(api), volumes(d.controller)
	if v := apiVols[apiMounts[apiArgs["data-dir"]]]; v.EmptyDir == nil {
		t.Errorf("--data-dir=%s is not an emptyDir mount", apiArgs["data-dir"])
	}
	if v := apiVols[apiMounts[apiArgs["shared-pki-dir"]]]; v.Secret == nil || v.Secret.SecretName != "cellfed-pki" {
		t.Errorf("--shared-pki-dir=%s is not where Secret cellfed-pki is mounted", apiArgs["shared-pki-dir"])
	}
	if v := apiVols[apiMounts[path.Dir(apiArgs["kms-key-file"])]]; v.Secret == nil || v.Secret.SecretName != "cellfed-kms" || path.Base(apiArgs["kms-key-file"]) != "keys" {
		t.Errorf("--kms-key-file=%s is not the key keys of Secret cellfed-kms", apiArgs["kms-key-file"])
	}
	if v := ctrlVols[ctrlMounts[path.Dir(ctrlArgs["kubeconfig"])]]; v.Secret == nil || v.Secret.SecretName != "cellfed-controller-kubeconfig" || path.Base(ctrlArgs["kubeconfig"]) != "kubeconfig" {
		t.Errorf("--kubeconfig=%s is not the key kubeconfig of Secret cellfed-controller-kubeconfig", ctrlArgs["kubeconfig"])
	}
	if !strings.HasPrefix(apiArgs["datastore-endpoint"], "$(") {
		t.Errorf("--datastore-endpoint holds a literal DSN; it must come from the Secret cellfed-datastore")
	}
	if advertised, svc := apiArgs["tunnel-connect-advertise-host"], d.service.Name+"."+deployNamespace+".svc"; advertised != svc {
		t.Errorf("--tunnel-connect-advertise-host=%s, want the Service's name %s", advertised, svc)
	}
	for _, san := range []string{d.service.Name + "." + deployNamespace + ".svc", d.service.Name + "." + deployNamespace + ".svc.cluster.local"} {
		if !slices.Contains(strings.Split(apiArgs["tls-san"], ","), san) {
			t.Errorf("--tls-san lacks the Service's name %s", san)
		}
	}

	// The kustomization's comment lists every Secret users create.
	kust, err := os.ReadFile(repoPath(t, "manifests", "deploy", "plane", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range userSecrets {
		if !strings.Contains(string(kust), "#   "+s+" ") {
			t.Errorf("manifests/deploy/plane/kustomization.yaml does not document the Secret %s", s)
		}
	}
}

// checkArgs checks that every argument of c is a flag of fs, that fs
// parses them, and that every $(VAR) is an env var of c. It returns the
// arguments by flag name.
func checkArgs(t *testing.T, binary string, fs *pflag.FlagSet, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
	}
	args := map[string]string{}
	var known []string
	for _, a := range c.Args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Errorf("%s argument %q: write flags as --name=value", binary, a)
		}
		args[name] = value
		for _, m := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(value, -1) {
			if !env[m[1]] {
				t.Errorf("%s argument %s: $(%s) is not an env var of the container", binary, a, m[1])
			}
		}
		if fs.Lookup(name) == nil {
			t.Errorf("argument %s: %s has no flag --%s", a, binary, name)
			continue
		}
		known = append(known, a)
	}
	if err := fs.Parse(known); err != nil {
		t.Errorf("%s cannot parse the Deployment's args: %v", binary, err)
	}
	return args
}

func portNumber(c corev1.Container, port string) string {
	for _, p := range c.Ports {
		if p.Name == port {
			return strconv.Itoa(int(p.ContainerPort))
		}
	}
	return port
}

func netpolOnlyFrom(rule networkingv1.NetworkPolicyIngressRule, pod labels.Set) bool {
	if len(rule.From) == 0 {
		return false
	}
	for _, peer := range rule.From {
		if peer.PodSelector == nil || peer.NamespaceSelector != nil || peer.IPBlock != nil {
			return false
		}
		if sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector); err != nil || !sel.Matches(pod) {
			return false
		}
	}
	return true
}

// checkPodSecurity checks what the restricted Pod Security Standard asks
// and more: a read-only root file system and resource requests and limits.
func checkPodSecurity(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	spec := dep.Spec.Template.Spec
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("Deployment %s: pod must run as non-root with the RuntimeDefault seccomp profile: %+v", dep.Name, psc)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("Deployment %s mounts a service-account token", dep.Name)
	}
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		t.Fatalf("Deployment %s: %d containers, %d init containers; want one container", dep.Name, len(spec.Containers), len(spec.InitContainers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("Deployment %s: container must have a read-only root, no privilege escalation and drop ALL capabilities: %+v", dep.Name, sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("Deployment %s: container needs CPU and memory requests and a memory limit: %+v", dep.Name, c.Resources)
	}
	if want := imageRef(t, dep.Name); c.Image != want {
		t.Errorf("Deployment %s: image %q, want %s, the image make images builds", dep.Name, c.Image, want)
	}
}

// checkVolumes checks that every volume is mounted and every mount has a
// volume.
func checkVolumes(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	vols := map[string]bool{}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		vols[v.Name] = false
	}
	for _, m := range dep.Spec.Template.Spec.Containers[0].VolumeMounts {
		if _, ok := vols[m.Name]; !ok {
			t.Errorf("Deployment %s mounts volume %s, which it does not have", dep.Name, m.Name)
		}
		vols[m.Name] = true
	}
	for v, mounted := range vols {
		if !mounted {
			t.Errorf("Deployment %s: volume %s is not mounted", dep.Name, v)
		}
	}
}

// checkSecretRefs checks that the Secrets a Deployment reads are the ones
// users are told to create.
func checkSecretRefs(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	for name := range secretRefs(dep) {
		if !slices.Contains(userSecrets, name) {
			t.Errorf("Deployment %s reads Secret %s, which is neither in the manifests nor documented as user-created", dep.Name, name)
		}
	}
}

// secretRefs are the Secrets (and their keys, "" for all) a Deployment
// reads.
func secretRefs(dep *appsv1.Deployment) map[string][]string {
	refs := map[string][]string{}
	spec := dep.Spec.Template.Spec
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			refs[v.Secret.SecretName] = append(refs[v.Secret.SecretName], "")
		}
	}
	for _, c := range spec.Containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				refs[e.ValueFrom.SecretKeyRef.Name] = append(refs[e.ValueFrom.SecretKeyRef.Name], e.ValueFrom.SecretKeyRef.Key)
			}
		}
	}
	return refs
}

// copyDeploy copies manifests/ (the agent manifests are a base of
// deploy/agent) into a temporary directory and returns its deploy dir.
func copyDeploy(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := repoPath(t, "manifests")
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if e.IsDir() {
			if rel == "crds" || rel == "federated" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !strings.HasPrefix(rel, "deploy") && !strings.HasPrefix(rel, "agent") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "deploy")
}

// writeExampleFiles writes placeholder files (no real keys) where the
// example-secrets overlay reads them.
func writeExampleFiles(t *testing.T, deployDir string) {
	t.Helper()
	dir := filepath.Join(deployDir, "example-secrets", "files")
	names := append(sharedPKIFiles(), "kms-keys", "endpoint", "kubeconfig")
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("placeholder for "+n+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeployExampleSecrets builds the example-secrets overlay from
// placeholder files: it makes exactly the Secrets the Deployments read,
// with the keys they read, and changes nothing else.
func TestDeployExampleSecrets(t *testing.T) {
	t.Parallel()
	dir := copyDeploy(t)
	if _, err := kustomize(t, filepath.Join(dir, "example-secrets")); err == nil || !strings.Contains(err.Error(), "files/") {
		t.Errorf("the overlay builds without its files (want an error naming them): %v", err)
	}
	writeExampleFiles(t, dir)
	withSecrets := sortObjects(t, mustBuild(t, filepath.Join(dir, "example-secrets")))
	base := sortObjects(t, mustBuild(t, filepath.Join(dir)))
	if got := slices.Sorted(maps.Keys(withSecrets.secrets)); !slices.Equal(got, userSecrets) {
		t.Fatalf("the overlay makes Secrets %v, want %v", got, userSecrets)
	}
	keys := func(s *corev1.Secret) []string { return slices.Sorted(maps.Keys(s.Data)) }
	want := map[string][]string{
		"cellfed-datastore":             {"endpoint"},
		"cellfed-pki":                   sharedPKIFiles(),
		"cellfed-kms":                   {"keys"},
		"cellfed-controller-kubeconfig": {"kubeconfig"},
	}
	for name, s := range withSecrets.secrets {
		if !slices.Equal(keys(s), want[name]) {
			t.Errorf("Secret %s has keys %v, want %v", name, keys(s), want[name])
		}
	}
	for _, dep := range []*appsv1.Deployment{withSecrets.apiserver, withSecrets.controller} {
		for name, ks := range secretRefs(dep) {
			for _, k := range ks {
				if k != "" && !slices.Contains(keys(withSecrets.secrets[name]), k) {
					t.Errorf("Deployment %s reads key %s of Secret %s, which the overlay does not make", dep.Name, k, name)
				}
			}
		}
	}
	if !equalObjects(base.apiserver, withSecrets.apiserver) || !equalObjects(base.controller, withSecrets.controller) {
		t.Errorf("the overlay changes the Deployments")
	}
	ignore, err := os.ReadFile(repoPath(t, "manifests", "deploy", "example-secrets", "files", ".gitignore"))
	if err != nil || !strings.Contains(string(ignore), "\n*\n") {
		t.Errorf("example-secrets/files/.gitignore must ignore every key file: %q, %v", ignore, err)
	}
}

func equalObjects(a, b runtime.Object) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// TestDeployAgentKustomization checks that manifests/deploy/agent is
// manifests/agent with the image pinned to the release.
func TestDeployAgentKustomization(t *testing.T) {
	t.Parallel()
	objs := mustBuild(t, repoPath(t, "manifests", "deploy", "agent"))
	docs, err := manifests.AgentDocuments()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(docs) {
		t.Fatalf("the kustomization makes %d objects, manifests/agent has %d", len(objs), len(docs))
	}
	for _, o := range objs {
		if dep, ok := o.(*appsv1.Deployment); ok {
			if img, want := dep.Spec.Template.Spec.Containers[0].Image, imageRef(t, "cellfed-agent"); img != want {
				t.Errorf("agent image %q, want %s", img, want)
			}
		}
	}
}

// TestDeployServerDryRun applies the manifests to a real kube-apiserver
// (kubectl apply --dry-run=server --validate=strict, warnings as errors,
// so a Pod Security "restricted" violation fails too), and shows that the
// check can fail: a misspelt field is refused.
func TestDeployServerDryRun(t *testing.T) {
	t.Parallel()
	member := framework.StartMember(t, "deploy")
	k := framework.Kubectl{Kubeconfig: member.Kubeconfig}
	dir := copyDeploy(t)
	writeExampleFiles(t, dir)
	// A server dry run cannot create the namespaces the rest goes in.
	k.MustRun(t, "", "apply", "-f", filepath.Join(dir, "plane", "namespace.yaml"))
	k.MustRun(t, "", "apply", "-f", filepath.Join(dir, "..", "agent", "namespace.yaml"))
	k.MustRun(t, "", "create", "namespace", "kube-federation-system")
	apply := func(dir string) (string, error) {
		return k.Run(context.Background(), "", "--warnings-as-errors", "apply", "--dry-run=server", "--validate=strict", "-k", dir)
	}
	for _, c := range []struct {
		dir  string
		want []string
	}{
		{repoPath(t, "manifests", "deploy"), []string{
			"namespace/cellfed-system", "serviceaccount/cellfed-apiserver", "serviceaccount/cellfed-controller",
			"service/cellfed-apiserver", "deployment.apps/cellfed-apiserver", "deployment.apps/cellfed-controller",
			"poddisruptionbudget.policy/cellfed-apiserver", "networkpolicy.networking.k8s.io/cellfed-apiserver",
		}},
		{filepath.Join(dir, "example-secrets"), []string{
			"secret/cellfed-pki", "secret/cellfed-kms", "secret/cellfed-datastore", "secret/cellfed-controller-kubeconfig", "deployment.apps/cellfed-apiserver",
		}},
		{repoPath(t, "manifests", "deploy", "agent"), []string{"deployment.apps/cellfed-agent", "serviceaccount/cellfed-agent",
			"serviceaccount/cellfed-plane", "clusterrole.rbac.authorization.k8s.io/cellfed-plane", "clusterrolebinding.rbac.authorization.k8s.io/cellfed-plane",
			"role.rbac.authorization.k8s.io/cellfed-agent", "rolebinding.rbac.authorization.k8s.io/cellfed-agent",
			"clusterrole.rbac.authorization.k8s.io/cellfed-agent", "clusterrolebinding.rbac.authorization.k8s.io/cellfed-agent"}},
	} {
		out, err := apply(c.dir)
		if err != nil {
			t.Errorf("%s: %v", c.dir, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w+" ") {
				t.Errorf("%s: kubectl did not report %s:\n%s", c.dir, w, out)
			}
		}
	}

	// A misspelt field: the strict decoder and the server both refuse it.
	dep := filepath.Join(dir, "plane", "apiserver-deployment.yaml")
	b, err := os.ReadFile(dep)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "readinessProbe:", "readinesProbe:", 1)
	if broken == string(b) {
		t.Fatal("no readinessProbe to misspell")
	}
	if err := os.WriteFile(dep, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := kustomize(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeStrict(t, out); err == nil || !strings.Contains(err.Error(), "readinesProbe") {
		t.Errorf("the strict decoder accepted a misspelt field: %v", err)
	}
	if _, err := apply(dir); err == nil || !strings.Contains(err.Error(), `unknown field "spec.template.spec.containers[0].readinesProbe"`) {
		t.Errorf("the server accepted a misspelt field: %v", err)
	}

	// A pod that breaks the namespace's "restricted" Pod Security level
	// (no seccomp profile) is reported, and the warning fails the apply.
	dir = copyDeploy(t)
	ctrl := filepath.Join(dir, "plane", "controller-deployment.yaml")
	b, err = os.ReadFile(ctrl)
	if err != nil {
		t.Fatal(err)
	}
	broken = strings.Replace(string(b), "seccompProfile: {type: RuntimeDefault}", "", 1)
	if broken == string(b) {
		t.Fatal("no seccompProfile to remove")
	}
	if err := os.WriteFile(ctrl, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(dir); err == nil || !strings.Contains(err.Error(), "violate PodSecurity") {
		t.Errorf("a pod without a seccomp profile passed: %v", err)
	}
}
