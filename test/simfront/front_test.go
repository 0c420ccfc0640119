package simfront_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cellfed/cellfed/test/framework"
	"github.com/cellfed/cellfed/test/simfront"
)

// TestFront runs two logical members on one real kube-apiserver: each
// sees its own namespace and objects under their logical names, lists
// and watches only its own, and the real server holds both apart.
func TestFront(t *testing.T) {
	t.Parallel()
	real := framework.StartMember(t, "member-0")
	f, err := simfront.Start(real.RESTConfig(t), t.TempDir(), []string{"lm000", "lm001"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	ctx := context.Background()
	client := func(m simfront.Member) kubernetes.Interface {
		return kubernetes.NewForConfigOrDie(&rest.Config{Host: m.Endpoint, BearerToken: m.Token,
			TLSClientConfig: rest.TLSClientConfig{CAData: f.CABundle}})
	}
	a, b := client(f.Members[0]), client(f.Members[1])
	labels := map[string]string{"kubefed.io/managed": "true"}

	// Both members create namespace shop and a config map web in it (the
	// typed client sends protobuf).
	watchA, err := a.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{LabelSelector: "kubefed.io/managed=true"})
	if err != nil {
		t.Fatalf("watching through lm000: %v", err)
	}
	defer watchA.Stop()
	for i, c := range []kubernetes.Interface{a, b} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("member %d: creating namespace shop: %v", i, err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: labels}, Data: map[string]string{"member": f.Members[i].Name}}
		got, err := c.CoreV1().ConfigMaps("shop").Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("member %d: creating shop/web: %v", i, err)
		}
		if got.Namespace != "shop" || got.Labels[simfront.MemberLabel] != "" || got.Labels["kubefed.io/managed"] != "true" {
			t.Errorf("member %d: created object reads back as namespace %q, labels %v", i, got.Namespace, got.Labels)
		}
	}

	// Each reads its own, by name and in a cluster-wide list.
	for i, c := range []kubernetes.Interface{a, b} {
		got, err := c.CoreV1().ConfigMaps("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || got.Data["member"] != f.Members[i].Name {
			t.Errorf("member %d: get shop/web = %v, %v; want its own", i, got.Data, err)
		}
		list, err := c.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: "kubefed.io/managed=true"})
		if err != nil || len(list.Items) != 1 || list.Items[0].Namespace != "shop" || list.Items[0].Data["member"] != f.Members[i].Name {
			t.Errorf("member %d: cluster-wide list = %+v, %v; want its one object in shop", i, list, err)
		}
		ns, err := c.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
		if err != nil || ns.Name != "shop" || ns.Labels["kubernetes.io/metadata.name"] != "shop" {
			t.Errorf("member %d: namespace shop = %v, %v", i, ns, err)
		}
	}

	// The watch of lm000 saw its own object only.
	select {
	case ev := <-watchA.ResultChan():
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok || cm.Namespace != "shop" || cm.Data["member"] != "lm000" {
			t.Errorf("lm000's watch: %v %#v", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Error("lm000's watch saw nothing in 30 s")
	}

	// An update through the member keeps the member's label on the real
	// object; a missing namespace is reported under its logical name.
	cm, err := a.CoreV1().ConfigMaps("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["v"] = "2"
	if _, err := a.CoreV1().ConfigMaps("shop").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating through lm000: %v", err)
	}
	realObj, err := real.Client(t).CoreV1().ConfigMaps("lm000-shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || realObj.Labels[simfront.MemberLabel] != "lm000" || realObj.Data["v"] != "2" {
		t.Errorf("real lm000-shop/web = %v, %v; want the update with the member label", realObj, err)
	}
	_, err = a.CoreV1().ConfigMaps("nowhere").Get(ctx, "web", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || strings.Contains(err.Error(), "lm000") {
		t.Errorf("get in a missing namespace: %v; want NotFound without the real name", err)
	}

	// A wrong token, or impersonation, is refused.
	bad := kubernetes.NewForConfigOrDie(&rest.Config{Host: f.Members[0].Endpoint, BearerToken: f.Members[1].Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: f.CABundle}})
	if _, err := bad.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("lm001's token at lm000: %v; want Unauthorized", err)
	}
	imp := &rest.Config{Host: f.Members[0].Endpoint, BearerToken: f.Members[0].Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: f.CABundle}, Impersonate: rest.ImpersonationConfig{UserName: "someone"}}
	if _, err := kubernetes.NewForConfigOrDie(imp).CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("impersonating through the front: %v; want Forbidden", err)
	}
	// A body in another encoding is refused with 415, not stored unmapped.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.Members[0].Endpoint+"/api/v1/namespaces/shop/configmaps", strings.NewReader("name: x"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.Members[0].Token)
	req.Header.Set("Content-Type", "application/yaml")
	tr, err := rest.TransportFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: f.CABundle}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("YAML create: %d, want 415", resp.StatusCode)
	}
}
