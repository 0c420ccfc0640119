package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cellfed/cellfed/test/framework"
)

// nativeManifest is what an app team ships: every native kind the plane
// stores, Services of each type among them, and a token Secret for a
// ServiceAccount.
const nativeManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:17"}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: "busybox:1.37"}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: migrate, image: "busybox:1.37", command: ["true"]}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: shop}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: OnFailure, containers: [{name: report, image: "busybox:1.37"}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec:
  rules:
  - host: shop.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{ports: [{port: 80}]}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web-nodeport, namespace: shop}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web-lb, namespace: shop}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: deployer, namespace: shop}
---
apiVersion: v1
kind: Secret
metadata:
  name: deployer-token
  namespace: shop
  annotations: {kubernetes.io/service-account.name: deployer}
type: kubernetes.io/service-account-token
---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
stringData: {password: native-canary-5e1d}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: shop}
data: {color: blue}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: uploads, namespace: shop}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
`

// nativeKinds are the resources of nativeManifest, as kubectl names them.
var nativeKinds = []string{
	"deployments.apps", "statefulsets.apps", "daemonsets.apps", "replicasets.apps",
	"jobs.batch", "cronjobs.batch",
	"ingresses.networking.k8s.io", "networkpolicies.networking.k8s.io",
	"poddisruptionbudgets.policy", "horizontalpodautoscalers.autoscaling",
	"services", "serviceaccounts", "secrets", "configmaps", "persistentvolumeclaims",
}

// TestNativeObjects: the plane stores the native kinds an app team ships,
// served as kube-apiserver serves them (discovery, OpenAPI, kubectl
// explain, client- and server-side apply, strict field validation), and
// runs none of them: no ReplicaSets or Pods, no allocated Service
// addresses or ports, no token minted into a token Secret. An app team
// writes them in its workspace and nowhere else; Secrets are stored
// KMS-encrypted.
func TestNativeObjects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plane := framework.StartPlane(t, framework.PlaneOptions{DataDir: dir})
	k := framework.Kubectl{Kubeconfig: plane.Kubeconfig}
	ctl := newCellfedctl(t, plane.Kubeconfig)
	ctl.ok(t, "tenant", "create", "shop", "--tenant=acme", "--workspace=prod")
	ctl.ok(t, "tenant", "create", "other", "--tenant=beta", "--workspace=prod")
	ctl.ok(t, "tenant", "grant", "alice", "-n", "shop", "--role=app-team")
	ctl.ok(t, "tenant", "grant", "bob", "-n", "shop", "--role=viewer")
	alice := func(args ...string) []string { return append([]string{"--as=alice"}, args...) }

	t.Run("discovery lists the native kinds and no pods", func(t *testing.T) {
		resources := k.MustRun(t, "", "api-resources", "-o", "name")
		for _, r := range nativeKinds {
			if !containsLine(resources, r) {
				t.Errorf("kubectl api-resources does not list %s", r)
			}
		}
		for _, r := range []string{"pods", "nodes", "replicationcontrollers", "endpoints", "persistentvolumes",
			"controllerrevisions.apps", "ingressclasses.networking.k8s.io", "ipaddresses.networking.k8s.io", "servicecidrs.networking.k8s.io"} {
			if containsLine(resources, r) {
				t.Errorf("kubectl api-resources lists %s, which the plane must not serve", r)
			}
		}
		versions := k.MustRun(t, "", "api-versions")
		for _, v := range []string{"apps/v1", "batch/v1", "networking.k8s.io/v1", "policy/v1", "autoscaling/v2"} {
			if !containsLine(versions, v) {
				t.Errorf("kubectl api-versions does not list %s", v)
			}
		}
		if out, err := k.Run(context.Background(), "", "get", "pods", "-n", "shop"); err == nil || !strings.Contains(err.Error(), `the server doesn't have a resource type "pods"`) {
			t.Errorf("kubectl get pods: %q, %v; want: the server doesn't have a resource type", out, err)
		}
	})

	t.Run("kubectl explain reads the OpenAPI", func(t *testing.T) {
		out := k.MustRun(t, "", "explain", "deployment.spec.replicas")
		if !strings.Contains(out, "GROUP:      apps") || !strings.Contains(out, "FIELD: replicas <integer>") {
			t.Errorf("kubectl explain deployment.spec.replicas:\n%s", out)
		}
		out = k.MustRun(t, "", "explain", "service.spec.clusterIP")
		if !strings.Contains(out, "FIELD: clusterIP <string>") {
			t.Errorf("kubectl explain service.spec.clusterIP:\n%s", out)
		}
	})

	t.Run("an app team applies them in its workspace", func(t *testing.T) {
		k.MustRun(t, nativeManifest, alice("apply", "-f", "-")...)
		got := k.MustRun(t, "", alice("-n", "shop", "get", "-o", "name", strings.Join(nativeKinds, ","))...)
		for _, want := range []string{"deployment.apps/web", "statefulset.apps/db", "daemonset.apps/agent", "job.batch/migrate",
			"cronjob.batch/report", "ingress.networking.k8s.io/web", "networkpolicy.networking.k8s.io/web",
			"poddisruptionbudget.policy/web", "horizontalpodautoscaler.autoscaling/web", "service/web", "service/web-nodeport",
			"service/web-lb", "service/db", "serviceaccount/deployer", "secret/deployer-token", "secret/db", "configmap/web",
			"persistentvolumeclaim/uploads"} {
			if !containsLine(got, want) {
				t.Errorf("alice: kubectl get lists no %s:\n%s", want, got)
			}
		}
		// Applying the same manifest again fails nothing and leaves the
		// Services and the Deployment alone (a Service kept as written,
		// nothing allocated to keep). Kinds with int-or-string fields or
		// stringData are "configured" again, by kube-apiserver too.
		out := k.MustRun(t, nativeManifest, alice("apply", "-f", "-")...)
		for _, o := range []string{"deployment.apps/web", "service/web", "service/web-nodeport", "service/web-lb", "service/db"} {
			if !containsLine(out, o+" unchanged") {
				t.Errorf("re-applying the manifest: no %q:\n%s", o+" unchanged", out)
			}
		}
		// The viewer reads them, Secrets aside, and writes nothing.
		k.MustRun(t, "", "--as=bob", "-n", "shop", "get", "deployments,services,jobs,persistentvolumeclaims,configmaps")
		for _, c := range []struct{ verb, resource, subresource, ns, as, want string }{
			{"get", "secrets", "", "shop", "bob", "no"},
			{"list", "deployments.apps", "", "shop", "bob", "yes"},
			{"create", "deployments.apps", "", "shop", "bob", "no"},
			{"list", "secrets", "", "shop", "alice", "yes"},
			{"delete", "services", "", "shop", "alice", "yes"},
			{"patch", "deployments.apps", "status", "shop", "alice", "no"},
			{"patch", "services", "status", "shop", "alice", "no"},
			{"patch", "deployments.apps", "scale", "shop", "alice", "yes"},
			{"create", "deployments.apps", "", "other", "alice", "no"},
			{"create", "deployments.apps", "", "default", "alice", "no"},
		} {
			as := []string{"--as=" + c.as}
			if c.subresource != "" {
				as = append(as, "--subresource="+c.subresource)
			}
			if got := canI(t, k, as, c.verb, c.resource, c.ns); got != c.want {
				t.Errorf("%s: can-i %s %s (subresource %q) -n %s = %s, want %s", c.as, c.verb, c.resource, c.subresource, c.ns, got, c.want)
			}
		}
		other := strings.ReplaceAll(nativeManifest, "namespace: shop", "namespace: other")
		if out, err := k.Run(context.Background(), other, alice("apply", "-f", "-")...); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("alice applied the manifest in another tenant's workspace: %q, %v", out, err)
		}
	})

	t.Run("server-side apply and strict field validation", func(t *testing.T) {
		api := strings.Replace(nativeManifest[:strings.Index(nativeManifest, "\n---\n")], "name: web,", "name: api,", 1)
		k.MustRun(t, api, alice("apply", "--server-side", "-f", "-")...)
		if got := k.MustRun(t, "", "-n", "shop", "get", "deployment", "api", "--show-managed-fields", "-o",
			`jsonpath={.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}`); got != "kubectl Apply" {
			t.Errorf("deployment shop/api managed fields: %q, want kubectl Apply", got)
		}
		// A conflict with another manager is refused, as kube-apiserver does.
		scaled := strings.Replace(api, "replicas: 3", "replicas: 5", 1)
		if _, err := k.Run(context.Background(), scaled, alice("apply", "--server-side", "--field-manager=other", "-f", "-")...); err == nil || !strings.Contains(err.Error(), "conflict") {
			t.Errorf("a second manager changing spec.replicas: %v, want a conflict", err)
		}
		bad := strings.Replace(api, "replicas: 3", "replicas: 3\n  replicaz: 4", 1)
		// kube-apiserver's words: strict field validation on create and
		// update, the apply schema on server-side apply.
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"apply", "-f", "-"}, `unknown field "spec.replicaz"`},
			{[]string{"create", "--validate=strict", "-f", "-"}, `unknown field "spec.replicaz"`},
			{[]string{"apply", "--server-side", "-f", "-"}, ".spec.replicaz: field not declared in schema"},
		} {
			_, err := k.Run(context.Background(), bad, alice(c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("kubectl %s with spec.replicaz: %v, want %q", strings.Join(c.args, " "), err, c.want)
			}
		}
		// kube's validation runs: a Deployment without a selector is refused.
		invalid := strings.Replace(api, "  selector: {matchLabels: {app: web}}\n", "", 1)
		if _, err := k.Run(context.Background(), invalid, alice("apply", "--server-side", "--force-conflicts", "-f", "-")...); err == nil || !strings.Contains(err.Error(), "spec.selector") {
			t.Errorf("a Deployment without a selector: %v, want spec.selector refused", err)
		}
	})

	t.Run("Services are stored as written, nothing allocated", func(t *testing.T) {
		for _, c := range []struct{ name, want string }{
			{"web", "ClusterIP|||"},
			{"web-nodeport", "NodePort|||"},
			{"web-lb", "LoadBalancer|||"},
			{"db", "ClusterIP|None|None|"},
		} {
			got := k.MustRun(t, "", "-n", "shop", "get", "service", c.name, "-o",
				`jsonpath={.spec.type}|{.spec.clusterIP}|{.spec.clusterIPs[*]}|{.spec.ports[*].nodePort}{.spec.healthCheckNodePort}`)
			if got != c.want {
				t.Errorf("service shop/%s: type|clusterIP|clusterIPs|nodePorts = %q, want %q", c.name, got, c.want)
			}
		}
		// Status is a subresource the plane's controllers write back.
		k.MustRun(t, "", "-n", "shop", "patch", "service", "web-lb", "--subresource=status", "--type=merge",
			"-p", `{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.10"}]}}}`)
		k.MustRun(t, "", "-n", "shop", "patch", "deployment", "web", "--subresource=status", "--type=merge",
			"-p", `{"status":{"replicas":3,"readyReplicas":3}}`)
		if got := k.MustRun(t, "", "-n", "shop", "get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}"); got != "3" {
			t.Errorf("deployment shop/web status.readyReplicas = %q after a status patch, want 3", got)
		}
	})

	t.Run("Secrets are stored KMS-encrypted", func(t *testing.T) {
		db := framework.OpenRawDatabase(t, dir, "")
		latest := framework.LatestRawRows(framework.RawRows(t, db, "/registry/secrets/shop/"))
		row, ok := latest["/registry/secrets/shop/db"]
		if !ok {
			t.Fatalf("no row /registry/secrets/shop/db; rows: %d", len(latest))
		}
		if !bytes.HasPrefix(row.Value, []byte("k8s:enc:kms:v2:cellfed-kms:")) || bytes.Contains(row.Value, []byte("native-canary-5e1d")) {
			t.Errorf("secret shop/db is stored without KMS encryption: %q", row.Value[:min(len(row.Value), 30)])
		}
	})

	t.Run("nothing runs them", func(t *testing.T) {
		// The plane's core controllers are running: a new namespace gets
		// its default ServiceAccount and root CA. Only then does the
		// absence of what a controller would write mean something.
		k.MustRun(t, "", "create", "namespace", "probe")
		waitFor(t, "the core controllers in namespace probe", func(ctx context.Context) (bool, error) {
			_, err := k.Run(ctx, "", "-n", "probe", "get", "serviceaccount/default", "configmap/kube-root-ca.crt")
			return err == nil, nil
		})
		never(t, 15*time.Second, func(ctx context.Context) error {
			out, err := k.Run(ctx, "", "-n", "shop", "get", "replicasets,jobs", "-o", "name")
			if err != nil {
				return nil // a failed read proves nothing either way
			}
			if strings.Contains(out, "replicaset") || strings.Count(out, "job.batch/") != 1 {
				return fmt.Errorf("replicasets or jobs appeared in shop:\n%s", out)
			}
			// Key names only: a test never prints a token.
			keys, err := k.Run(ctx, "", "-n", "shop", "get", "secret", "deployer-token", "-o", "go-template={{range $k, $v := .data}}{{$k}} {{end}}")
			if err == nil && keys != "" {
				return fmt.Errorf("the plane minted a token into secret shop/deployer-token: keys %s", keys)
			}
			sa, err := k.Run(ctx, "", "-n", "shop", "get", "serviceaccount", "deployer", "-o", "jsonpath={.secrets}")
			if err == nil && sa != "" {
				return fmt.Errorf("serviceaccount shop/deployer was given secrets %s", sa)
			}
			return nil
		})
		if got := k.MustRun(t, "", "-n", "shop", "get", "deployment", "web", "-o", "jsonpath={.status.observedGeneration}"); got != "" {
			t.Errorf("deployment shop/web status.observedGeneration = %q: something reconciled it", got)
		}
	})
}

// never polls cond for d and fails the test as soon as cond reports what
// must not happen: the one kind of check that has to wait out a period.
func never(t *testing.T, d time.Duration, cond func(context.Context) error) {
	t.Helper()
	var seen error
	_ = framework.Poll(context.Background(), time.Second, d, func(ctx context.Context) (bool, error) {
		seen = cond(ctx)
		return seen != nil, nil
	})
	if seen != nil {
		t.Fatal(seen)
	}
}
