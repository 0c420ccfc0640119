package manifests

import (
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

	"github.com/cellfed/cellfed/pkg/proxy/agent"
)

// TestAgentManifests decodes the agent's manifests strictly and checks
// they fit together: one namespace for all, the Deployment's service
// account and Secrets, and flags cellfed-agent really has.
func TestAgentManifests(t *testing.T) {
	docs, err := AgentDocuments()
	if err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var kinds []string
	var objs []runtime.Object
	for _, d := range docs {
		obj, gvk, err := dec.Decode(d, nil, nil)
		if err != nil {
			t.Fatalf("decoding %q: %v", d, err)
		}
		kinds = append(kinds, gvk.Kind)
		objs = append(objs, obj)
	}
	slices.Sort(kinds)
	if want := []string{"Deployment", "Namespace", "Role", "RoleBinding", "ServiceAccount"}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	var ns, sa string
	var dep *appsv1.Deployment
	var role *rbacv1.Role
	var binding *rbacv1.RoleBinding
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Namespace:
			ns = o.Name
		case *corev1.ServiceAccount:
			sa = o.Name
		case *appsv1.Deployment:
			dep = o
		case *rbacv1.Role:
			role = o
		case *rbacv1.RoleBinding:
			binding = o
		}
	}
	for _, o := range []interface{ GetNamespace() string }{dep, role, binding} {
		if o.GetNamespace() != ns {
			t.Errorf("%T is in namespace %q, not the agent's %q", o, o.GetNamespace(), ns)
		}
	}
	spec := dep.Spec.Template.Spec
	if spec.ServiceAccountName != sa {
		t.Errorf("deployment runs as %q, the manifests make %q", spec.ServiceAccountName, sa)
	}
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != sa || binding.Subjects[0].Namespace != ns {
		t.Errorf("the RoleBinding does not bind role %s to %s/%s: %+v", role.Name, ns, sa, binding)
	}
	// Every flag in the Deployment exists in cellfed-agent.
	fs := pflag.NewFlagSet("cellfed-agent", pflag.ContinueOnError)
	agent.NewOptions().AddFlags(fs)
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	mounted := map[string]string{}
	for _, m := range spec.Containers[0].VolumeMounts {
		mounted[m.Name] = m.MountPath
	}
	for _, v := range spec.Volumes {
		if v.Secret == nil || mounted[v.Name] == "" {
			t.Errorf("volume %s is not a mounted Secret", v.Name)
		}
	}
	for _, a := range spec.Containers[0].Args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if fs.Lookup(name) == nil {
			t.Errorf("argument %s: cellfed-agent has no flag --%s", a, name)
		}
	}
	if err := fs.Parse(spec.Containers[0].Args); err != nil {
		t.Errorf("cellfed-agent cannot parse the Deployment's args: %v", err)
	}
}
