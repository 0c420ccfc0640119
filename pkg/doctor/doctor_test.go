package doctor

import (
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)

// healthy is a federation with nothing wrong: two direct clusters, one
// tunnelled with its agent, cells ready, a leader, certificates far from
// expiry, types and CRDs matching, an object propagated everywhere.
func healthy() Facts {
	return Facts{
		Now: now, Command: "cellfedctl", FederationNamespace: "kube-federation-system", Thresholds: DefaultThresholds(),
		Plane:      Plane{Host: "https://plane:6443", Checks: []ReadyzCheck{{Name: "etcd", OK: true}, {Name: "kms-providers", OK: true}, {Name: "tunnel-hub", OK: true}}},
		Database:   Database{Latency: 3 * time.Millisecond},
		Controller: Controller{LeaseName: "cellfed-controller", Found: true, Holder: "ctl-0", RenewTime: now.Add(-2 * time.Second), LeaseDuration: 15 * time.Second},
		Clusters: Clusters{Items: []Cluster{
			{Name: "member-0", Endpoint: "https://10.0.0.1:6443", Ready: "True", Reason: "ClusterReady"},
			{Name: "member-1", Endpoint: "https://10.0.0.2:6443", Ready: "True", Reason: "ClusterReady"},
			{Name: "edge-1", Endpoint: "https://edge:6443", Tunnelled: true, Ready: "True", Reason: "ClusterReady"},
		}},
		Cells:         Cells{Items: []Cell{{Namespace: "shop", Name: "rz00a", Cluster: "member-0", Ready: "True"}}},
		Agents:        Agents{Connected: map[string]int{"edge-1": 1}},
		Registrations: Registrations{Items: []Registration{{Name: "edge-1", Tenant: "acme", Phase: "Registered"}}},
		Certificates: Certificates{Items: []Certificate{
			{Kind: CertPlaneServing, Owner: "https://plane:6443", Subject: "CN=cellfed-apiserver", NotAfter: now.Add(300 * 24 * time.Hour)},
			{Kind: CertAgent, Owner: "edge-1", Subject: "CN=edge-1", NotAfter: now.Add(20 * 24 * time.Hour)},
		}},
		Types: Types{Configs: []TypeConfig{{Name: "deployments.apps", CRD: "federateddeployments.types.kubefed.io"}},
			CRDs: []string{"federateddeployments.types.kubefed.io"}},
		Objects: Objects{Types: 1, Read: 1, Items: []Object{{Ref: "federateddeployment/web", Namespace: "shop"}}},
	}
}

func names(r Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Name+" "+f.Object)
	}
	return out
}

func TestDiagnose(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(f *Facts)
		// want are "<finding> <object>"; fix is a part of the first
		// finding's fix.
		want []string
		fix  string
	}{
		{name: "healthy", break_: func(*Facts) {}},
		{name: "readyz check fails", break_: func(f *Facts) {
			f.Plane.Checks = append(f.Plane.Checks, ReadyzCheck{Name: "poststarthook/federation", Reason: "reason withheld"})
		}, want: []string{"plane-not-ready readyz check poststarthook/federation"}, fix: "kubectl get --raw '/readyz?verbose'"},
		{name: "kms check fails", break_: func(f *Facts) { f.Plane.Checks[1].OK = false },
			want: []string{"kms-unhealthy readyz check kms-providers"}, fix: "/readyz/kms-providers"},
		{name: "slow database", break_: func(f *Facts) { f.Database.Latency = 3 * time.Second },
			want: []string{"database-slow database"}, fix: "etcd_request_duration_seconds"},
		{name: "no lease", break_: func(f *Facts) { f.Controller = Controller{LeaseName: "cellfed-controller"} },
			want: []string{"controller-no-leader lease kube-federation-system/cellfed-controller"}, fix: "start cellfed-controller"},
		{name: "stale lease", break_: func(f *Facts) { f.Controller.RenewTime = now.Add(-time.Minute) },
			want: []string{"controller-no-leader lease kube-federation-system/cellfed-controller"}, fix: "kubectl -n kube-federation-system get lease cellfed-controller"},
		{name: "controller lagging", break_: func(f *Facts) {
			f.Controller.Behind = []Behind{{Object: "shop/federateddeployment/web", Since: now.Add(-10 * time.Minute)}, {Object: "shop/federateddeployment/new", Since: now.Add(-time.Second)}}
		}, want: []string{"controller-lagging controller"}, fix: "workqueue_depth"},
		{name: "member unreachable", break_: func(f *Facts) {
			f.Clusters.Items[1].Ready, f.Clusters.Items[1].Reason, f.Clusters.Items[1].Message = "False", "ClusterNotReachable", "connection refused"
		}, want: []string{"member-unreachable cluster member-1"}, fix: "kubectl --server=https://10.0.0.2:6443 get --raw /readyz"},
		{name: "member not ready", break_: func(f *Facts) {
			f.Clusters.Items[0].Ready, f.Clusters.Items[0].Reason = "False", "ClusterNotReady"
		}, want: []string{"member-not-ready cluster member-0"}, fix: "cellfedctl status"},
		{name: "member not probed", break_: func(f *Facts) { f.Clusters.Items[0].Ready, f.Clusters.Items[0].Reason = "Unknown", "" },
			want: []string{"member-not-probed cluster member-0"}, fix: "cellfed-controller"},
		{name: "member misconfigured", break_: func(f *Facts) {
			f.Clusters.Items[0].Ready, f.Clusters.Items[0].Reason = "False", "ConfigMalformed"
		}, want: []string{"member-misconfigured cluster member-0"}, fix: "cellfedctl join member-0"},
		{name: "agent stopped: one finding, not also unreachable", break_: func(f *Facts) {
			f.Agents.Connected = map[string]int{}
			f.Clusters.Items[2].Ready, f.Clusters.Items[2].Reason = "False", "ClusterNotReachable"
		}, want: []string{"agent-disconnected cluster edge-1"}, fix: "logs deploy/cellfed-agent"},
		{name: "tunnelled unreachable with its agent", break_: func(f *Facts) {
			f.Clusters.Items[2].Ready, f.Clusters.Items[2].Reason = "False", "ClusterNotReachable"
		}, want: []string{"member-unreachable cluster edge-1"}, fix: "in edge-1:"},
		{name: "cell not ready", break_: func(f *Facts) { f.Cells.Items[0].Ready, f.Cells.Items[0].Reason = "False", "ClusterNotReady" },
			want: []string{"cell-not-ready cell shop/rz00a"}, fix: "kubectl -n shop get cell rz00a"},
		{name: "registration pending", break_: func(f *Facts) {
			f.Registrations.Items = append(f.Registrations.Items, Registration{Name: "edge-2", Tenant: "acme", Phase: "Pending"})
		}, want: []string{"registration-pending registration edge-2"}, fix: "cellfedctl registration approve edge-2"},
		{name: "registration failed", break_: func(f *Facts) {
			f.Registrations.Items = append(f.Registrations.Items, Registration{Name: "edge-2", Phase: "Failed", Message: "signing failed"})
		}, want: []string{"registration-failed registration edge-2"}, fix: "kubectl get clusterregistration edge-2"},
		{name: "agent certificate expiring", break_: func(f *Facts) { f.Certificates.Items[1].NotAfter = now.Add(48 * time.Hour) },
			want: []string{"certificate-expiring the agent certificate of edge-1"}, fix: "cellfedctl registration revoke edge-1"},
		{name: "plane certificate expired", break_: func(f *Facts) { f.Certificates.Items[0].NotAfter = now.Add(-time.Hour) },
			want: []string{"certificate-expired the plane's serving certificate"}, fix: "serving.crt"},
		{name: "member CA expiring", break_: func(f *Facts) {
			f.Certificates.Items = append(f.Certificates.Items, Certificate{Kind: CertMemberCA, Owner: "member-0", Subject: "CN=ca", NotAfter: now.Add(time.Hour)})
		}, want: []string{"certificate-expiring the CA of cluster member-0"}, fix: "cellfedctl join member-0"},
		{name: "type without CRD", break_: func(f *Facts) { f.Types.CRDs = nil },
			want: []string{"type-without-crd federatedtypeconfig deployments.apps"}, fix: "cellfedctl enable deployments.apps"},
		{name: "CRD without type", break_: func(f *Facts) { f.Types.CRDs = append(f.Types.CRDs, "federatedwidgets.types.kubefed.io") },
			want: []string{"crd-without-type crd federatedwidgets.types.kubefed.io"}, fix: "kubectl delete crd federatedwidgets.types.kubefed.io"},
		{name: "propagation failed", break_: func(f *Facts) { f.Objects.Items[0].Failed = []string{"rz00a: UpdateFailed"} },
			want: []string{"propagation-failed shop/federateddeployment/web"}, fix: "cellfedctl status federateddeployment/web -n shop"},
		{name: "rollout paused", break_: func(f *Facts) {
			f.Objects.Items[0].Rollout = &Rollout{Auto: true, Paused: true, PauseReason: "progress deadline 1m0s exceeded"}
		}, want: []string{"rollout-stuck shop/federateddeployment/web"}, fix: "cellfedctl rollout resume federateddeployment/web -n shop"},
		{name: "rollout past its deadline, not paused", break_: func(f *Facts) {
			f.Objects.Items[0].Rollout = &Rollout{Auto: true, State: "Progressing", ProgressDeadline: time.Minute, ProgressSince: now.Add(-5 * time.Minute)}
		}, want: []string{"rollout-stuck shop/federateddeployment/web"}, fix: "cellfedctl rollout status federateddeployment/web -n shop"},
		{name: "rollout progressing within its deadline", break_: func(f *Facts) {
			f.Objects.Items[0].Rollout = &Rollout{Auto: true, State: "Progressing", ProgressDeadline: time.Hour, ProgressSince: now.Add(-5 * time.Minute)}
		}},
		{name: "unreadable parts are not findings", break_: func(f *Facts) {
			f.Database.Unchecked = "forbidden"
			f.Controller.Unchecked = "forbidden"
			f.Clusters = Clusters{Unchecked: "forbidden"}
			f.Registrations = Registrations{Unchecked: "forbidden"}
			f.Objects = Objects{Unchecked: []string{"forbidden"}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy()
			tc.break_(&f)
			r := Diagnose(f)
			if got := names(r); !slices.Equal(got, tc.want) {
				t.Fatalf("findings %q, want %q", got, tc.want)
			}
			if r.Failed() != (len(tc.want) > 0) {
				t.Errorf("Failed() = %v with findings %q", r.Failed(), tc.want)
			}
			if tc.fix != "" && !strings.Contains(r.Findings[0].Fix, tc.fix) {
				t.Errorf("fix %q, want it to contain %q", r.Findings[0].Fix, tc.fix)
			}
			for _, fd := range r.Findings {
				if fd.Message == "" || fd.Fix == "" || (fd.Severity != Error && fd.Severity != Warning) {
					t.Errorf("finding %+v lacks a message, a fix or a severity", fd)
				}
			}
		})
	}
}

// TestDiagnoseSaysWhatItCouldNotCheck: each part that could not be read
// is a check not done, with why, and never a finding.
func TestDiagnoseSaysWhatItCouldNotCheck(t *testing.T) {
	f := healthy()
	f.Controller = Controller{Unchecked: "reading Lease is forbidden to you"}
	f.Agents = Agents{Unchecked: "reading the plane's /metrics is forbidden to you"}
	f.Types = Types{Unchecked: "listing CustomResourceDefinitions is forbidden to you"}
	f.Certificates.Unchecked = []string{"agent certificates: forbidden"}
	r := Diagnose(f)
	if len(r.Findings) != 0 {
		t.Fatalf("findings %q, want none", names(r))
	}
	var got []string
	for _, c := range r.NotChecked() {
		got = append(got, c.Name+": "+c.Summary)
	}
	want := []string{
		"controller: reading Lease is forbidden to you",
		"tunnel-agents: reading the plane's /metrics is forbidden to you",
		"certificates: agent certificates: forbidden",
		"federated-types: listing CustomResourceDefinitions is forbidden to you",
	}
	if !slices.Equal(got, want) {
		t.Errorf("not checked:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDiagnoseOrder: errors first, then by name, so output is stable.
func TestDiagnoseOrder(t *testing.T) {
	f := healthy()
	f.Registrations.Items = append(f.Registrations.Items, Registration{Name: "b", Phase: "Pending"}, Registration{Name: "a", Phase: "Pending"})
	f.Clusters.Items[0].Ready, f.Clusters.Items[0].Reason = "False", "ClusterNotReachable"
	got := names(Diagnose(f))
	want := []string{"member-unreachable cluster member-0", "registration-pending registration a", "registration-pending registration b"}
	if !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
}
