package manifests

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/cellfed/cellfed/pkg/memberaccess"
	"github.com/cellfed/cellfed/pkg/proxy/agent"
	"github.com/cellfed/cellfed/pkg/registration"
)

// agentObjects decodes manifests/agent strictly.
func agentObjects(t *testing.T) []runtime.Object {
	t.Helper()
	docs, err := AgentDocuments()
	if err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []runtime.Object
	for _, d := range docs {
		obj, _, err := dec.Decode(d, nil, nil)
		if err != nil {
			t.Fatalf("decoding %q: %v", d, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

// agentFlags parses the Deployment's arguments with cellfed-agent's flag
// set (the tunnel's and registration's flags, as cmd/cellfed-agent).
func agentFlags(t *testing.T, args []string) (*agent.Options, *registration.AgentOptions) {
	t.Helper()
	fs := pflag.NewFlagSet("cellfed-agent", pflag.ContinueOnError)
	o, reg := agent.NewOptions(), registration.NewAgentOptions()
	o.AddFlags(fs)
	reg.AddFlags(fs)
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if fs.Lookup(name) == nil {
			t.Errorf("argument %s: cellfed-agent has no flag --%s", a, name)
		}
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("cellfed-agent cannot parse the Deployment's args: %v", err)
	}
	return o, reg
}

// TestAgentManifests decodes the agent's manifests strictly and checks
// they fit together: the Deployment runs registration mode with its state
// in a Secret, as the agent's ServiceAccount, with flags cellfed-agent
// really has; the plane's ServiceAccount, ClusterRole and binding are the
// ones the agent looks for, with exactly the rules it would grant (so it
// never needs to write RBAC); every Secret the pod reads is mounted.
func TestAgentManifests(t *testing.T) {
	objs := agentObjects(t)
	var kinds []string
	var dep *appsv1.Deployment
	sas := map[string]*corev1.ServiceAccount{}
	namespaces := map[string]bool{}
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	clusterBindings := map[string]*rbacv1.ClusterRoleBinding{}
	for _, o := range objs {
		kinds = append(kinds, fmt.Sprintf("%T", o))
		switch o := o.(type) {
		case *corev1.Namespace:
			namespaces[o.Name] = true
		case *corev1.ServiceAccount:
			sas[o.Namespace+"/"+o.Name] = o
		case *appsv1.Deployment:
			dep = o
		case *rbacv1.ClusterRole:
			clusterRoles[o.Name] = o
		case *rbacv1.ClusterRoleBinding:
			clusterBindings[o.Name] = o
		}
	}
	slices.Sort(kinds)
	want := []string{"*v1.ClusterRole", "*v1.ClusterRole", "*v1.ClusterRoleBinding", "*v1.ClusterRoleBinding", "*v1.Deployment",
		"*v1.Namespace", "*v1.Namespace", "*v1.Role", "*v1.Role", "*v1.RoleBinding", "*v1.RoleBinding", "*v1.ServiceAccount", "*v1.ServiceAccount"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	spec := dep.Spec.Template.Spec
	if !namespaces[dep.Namespace] || sas[dep.Namespace+"/"+spec.ServiceAccountName] == nil {
		t.Errorf("deployment %s/%s runs as %q, which the manifests do not make there", dep.Namespace, dep.Name, spec.ServiceAccountName)
	}
	if dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("deployment strategy %q: two agents of one cluster would renew at once", dep.Spec.Strategy.Type)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	_, reg := agentFlags(t, c.Args)
	if !reg.Enabled() || reg.StateSecret == "" || reg.StateDir != "" {
		t.Errorf("the Deployment does not self-register with its state in a Secret: --plane-kubeconfig=%q --state-secret=%q --state-dir=%q", reg.PlaneKubeconfig, reg.StateSecret, reg.StateDir)
	}
	if ns, _, err := registration.ParseStateSecret(reg.StateSecret, ""); err == nil && ns != dep.Namespace {
		t.Errorf("--state-secret=%s is not in the agent's namespace %s", reg.StateSecret, dep.Namespace)
	}
	podNS := ""
	for _, e := range c.Env {
		if e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			podNS = dep.Namespace
		}
	}
	if podNS == "" {
		t.Errorf("the container has no POD_NAMESPACE from the downward API")
	}

	// The plane's access, as the agent looks for it.
	plane := reg.MemberServiceAccount
	if !namespaces[reg.MemberNamespace] || sas[reg.MemberNamespace+"/"+plane] == nil {
		t.Errorf("--member-namespace=%s --member-service-account=%s: the manifests make no such ServiceAccount", reg.MemberNamespace, plane)
	}
	if r := clusterRoles[plane]; r == nil || !reflect.DeepEqual(r.Rules, memberaccess.Rules) {
		t.Errorf("ClusterRole %s is not memberaccess.Rules (the agent would have to update it): %+v", plane, r)
	}
	if b := clusterBindings[plane]; b == nil || b.RoleRef.Name != plane || !reflect.DeepEqual(b.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: plane, Namespace: reg.MemberNamespace}}) {
		t.Errorf("ClusterRoleBinding %s does not bind ClusterRole %s to %s/%s: %+v", plane, plane, reg.MemberNamespace, plane, b)
	}

	mounted := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounted[m.Name] = m.MountPath
	}
	for _, v := range spec.Volumes {
		if v.Secret == nil || mounted[v.Name] == "" {
			t.Errorf("volume %s is not a mounted Secret", v.Name)
		}
	}
	for _, f := range []string{reg.PlaneKubeconfig, reg.BootstrapTokenFile} {
		ok := false
		for _, p := range mounted {
			ok = ok || strings.HasPrefix(f, p+"/")
		}
		if !ok {
			t.Errorf("%s is in no mounted volume", f)
		}
	}
}

// right is one thing an identity may do.
type right struct{ namespace, group, resource, verb, name string }

func (r right) String() string {
	return fmt.Sprintf("%s %s/%s %q in %q", r.verb, r.group, r.resource, r.name, r.namespace)
}

// TestAgentRBAC: the agent's ServiceAccount gets exactly the rights
// registration mode uses (TestAgentDeploymentIdentity in test/e2e shows
// they suffice), each named where Kubernetes allows it.
func TestAgentRBAC(t *testing.T) {
	objs := agentObjects(t)
	var dep *appsv1.Deployment
	roles := map[string][]rbacv1.PolicyRule{} // namespace/name or /name
	var granted []right
	bound := map[string]bool{}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			dep = o
		case *rbacv1.Role:
			roles[o.Namespace+"/"+o.Name] = o.Rules
		case *rbacv1.ClusterRole:
			roles["/"+o.Name] = o.Rules
		}
	}
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: dep.Spec.Template.Spec.ServiceAccountName, Namespace: dep.Namespace}
	add := func(ns, role string) {
		if bound[ns+"/"+role] {
			return
		}
		bound[ns+"/"+role] = true
		for _, r := range roles[role] {
			if len(r.NonResourceURLs) > 0 {
				t.Errorf("role %s grants non-resource URLs %v", role, r.NonResourceURLs)
			}
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						for _, n := range names {
							granted = append(granted, right{ns, g, res, v, n})
						}
					}
				}
			}
		}
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.RoleBinding:
			if slices.Contains(o.Subjects, sa) {
				ref := o.Namespace + "/" + o.RoleRef.Name
				if o.RoleRef.Kind == "ClusterRole" {
					ref = "/" + o.RoleRef.Name
				}
				add(o.Namespace, ref)
			}
		case *rbacv1.ClusterRoleBinding:
			if slices.Contains(o.Subjects, sa) {
				add("", "/"+o.RoleRef.Name)
			}
		}
	}
	spec := dep.Spec.Template.Spec
	_, reg := agentFlags(t, spec.Containers[0].Args)
	_, secret, err := registration.ParseStateSecret(reg.StateSecret, dep.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	plane, fedNS := reg.MemberServiceAccount, reg.MemberNamespace
	want := []right{
		// The state Secret; create cannot be restricted by name.
		{dep.Namespace, "", "secrets", "get", secret},
		{dep.Namespace, "", "secrets", "update", secret},
		{dep.Namespace, "", "secrets", "create", ""},
		// memberaccess.Ensure finds the plane's access made by the
		// manifests; the agent mints its token, and deletes the access
		// when the plane denies the registration.
		{"", "", "namespaces", "get", fedNS},
		{fedNS, "", "serviceaccounts", "get", plane},
		{fedNS, "", "serviceaccounts", "delete", plane},
		{fedNS, "", "serviceaccounts/token", "create", plane},
		{"", "rbac.authorization.k8s.io", "clusterroles", "get", plane},
		{"", "rbac.authorization.k8s.io", "clusterroles", "delete", plane},
		{"", "rbac.authorization.k8s.io", "clusterrolebindings", "get", plane},
		{"", "rbac.authorization.k8s.io", "clusterrolebindings", "delete", plane},
	}
	key := func(r right) string { return r.String() }
	got, wantS := make([]string, 0, len(granted)), make([]string, 0, len(want))
	for _, r := range granted {
		got = append(got, key(r))
	}
	for _, r := range want {
		wantS = append(wantS, key(r))
	}
	slices.Sort(got)
	slices.Sort(wantS)
	if !slices.Equal(got, wantS) {
		t.Errorf("the agent's ServiceAccount %s/%s may\n  %s\nwant exactly\n  %s", sa.Namespace, sa.Name, strings.Join(got, "\n  "), strings.Join(wantS, "\n  "))
	}
}
