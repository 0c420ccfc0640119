package servicestore

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	api "k8s.io/kubernetes/pkg/apis/core"
	svcreg "k8s.io/kubernetes/pkg/registry/core/service"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct {
		name     string
		svc, old api.ServiceSpec
		wantIP   string
		wantIPs  []string
		noOld    bool
	}{
		{name: "create without an address stays without", noOld: true},
		{name: "create headless: clusterIPs from clusterIP", noOld: true, svc: api.ServiceSpec{ClusterIP: "None"}, wantIP: "None", wantIPs: []string{"None"}},
		{name: "create with a chosen address keeps it", noOld: true, svc: api.ServiceSpec{ClusterIP: "10.0.0.10"}, wantIP: "10.0.0.10", wantIPs: []string{"10.0.0.10"}},
		{name: "update leaving both out keeps the stored ones", svc: api.ServiceSpec{}, old: api.ServiceSpec{ClusterIP: "None", ClusterIPs: []string{"None"}},
			wantIP: "None", wantIPs: []string{"None"}},
		{name: "update of an unallocated Service stays unallocated", svc: api.ServiceSpec{}, old: api.ServiceSpec{}},
		{name: "update to ExternalName takes nothing from the old", svc: api.ServiceSpec{Type: api.ServiceTypeExternalName},
			old: api.ServiceSpec{ClusterIP: "None", ClusterIPs: []string{"None"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := &api.Service{Spec: c.svc}
			var old *api.Service
			if !c.noOld {
				old = &api.Service{Spec: c.old}
			}
			Normalize(svc, old)
			if svc.Spec.ClusterIP != c.wantIP || !slices.Equal(svc.Spec.ClusterIPs, c.wantIPs) {
				t.Errorf("clusterIP %q, clusterIPs %q; want %q, %q", svc.Spec.ClusterIP, svc.Spec.ClusterIPs, c.wantIP, c.wantIPs)
			}
		})
	}
}

// TestValidateWithoutAllocation: what kube-apiserver validates after
// allocating passes unallocated here, and everything else is still
// refused.
func TestValidateWithoutAllocation(t *testing.T) {
	ctx := genericapirequest.WithNamespace(context.Background(), "shop")
	strategy := storeStrategy{RESTCreateUpdateStrategy: svcreg.Strategy, ResetFieldsStrategy: svcreg.Strategy}
	service := func(typ api.ServiceType, mutate func(*api.ServiceSpec)) *api.Service {
		s := &api.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: "1"},
			Spec: api.ServiceSpec{
				Type:            typ,
				Selector:        map[string]string{"app": "web"},
				Ports:           []api.ServicePort{{Port: 80, Protocol: api.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
				SessionAffinity: api.ServiceAffinityNone,
			},
		}
		if typ != api.ServiceTypeClusterIP {
			s.Spec.ExternalTrafficPolicy = api.ServiceExternalTrafficPolicyCluster
		}
		if typ == api.ServiceTypeLoadBalancer {
			yes := true
			s.Spec.AllocateLoadBalancerNodePorts = &yes
		}
		local := api.ServiceInternalTrafficPolicyCluster
		s.Spec.InternalTrafficPolicy = &local
		if mutate != nil {
			mutate(&s.Spec)
		}
		return s
	}
	localLB := service(api.ServiceTypeLoadBalancer, func(s *api.ServiceSpec) { s.ExternalTrafficPolicy = api.ServiceExternalTrafficPolicyLocal })
	if errs := svcreg.Strategy.Validate(ctx, localLB); len(errs) == 0 {
		t.Fatal("kube's own strategy accepts a LoadBalancer with externalTrafficPolicy Local and no healthCheckNodePort: AllocationErrors has nothing to do")
	}
	for _, c := range []struct {
		name  string
		svc   *api.Service
		valid bool
	}{
		{"ClusterIP without an address", service(api.ServiceTypeClusterIP, nil), true},
		{"NodePort without node ports", service(api.ServiceTypeNodePort, nil), true},
		{"LoadBalancer, Local, no health-check node port", localLB, true},
		{"a nodePort on a ClusterIP Service", service(api.ServiceTypeClusterIP, func(s *api.ServiceSpec) { s.Ports[0].NodePort = 30080 }), false},
		{"no ports", service(api.ServiceTypeClusterIP, func(s *api.ServiceSpec) { s.Ports = nil }), false},
		{"a bad clusterIP", service(api.ServiceTypeClusterIP, func(s *api.ServiceSpec) { s.ClusterIP, s.ClusterIPs = "300.1.1.1", []string{"300.1.1.1"} }), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := strategy.Validate(ctx, c.svc)
			if (len(errs) == 0) != c.valid {
				t.Errorf("valid %v, errors %v", c.valid, errs)
			}
			errs = strategy.ValidateUpdate(ctx, c.svc, service(api.ServiceTypeClusterIP, nil))
			if (len(errs) == 0) != c.valid {
				t.Errorf("update: valid %v, errors %v", c.valid, errs)
			}
		})
	}
}
