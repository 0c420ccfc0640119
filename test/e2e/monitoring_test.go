package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cellfed/cellfed/manifests/monitoring"
	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/test/framework"
)

// TestMonitoringMetrics holds manifests/monitoring against the binaries:
// a federation with a tunnelled member, an approved registration and a
// rollout holding a cell back exports, on the plane's and the
// controller's /metrics, every metric and label each alert, recording
// rule, dashboard panel and dashboard variable reads. Then Debian's
// Prometheus scrapes both with the rules loaded, and every panel query
// returns data (Grafana itself is not packaged for Debian: this is what
// its panels would show).
func TestMonitoringMetrics(t *testing.T) {
	t.Parallel()
	promBin := prometheusBinary(t)
	args, ports := framework.TunnelPlaneArgs(t, "0.0.0.0")
	f := startFederationWith(t, 2, framework.PlaneOptions{Args: append(args, framework.AllowHandIssuedAgents)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// A tunnelled member (cellfed_tunnel_*).
	startTunnelledMember(t, f.plane, ports, "edge-1")
	// A registration, approved: its certificate is signed
	// (cellfed_registration_*).
	reg := &regFixture{plane: f.plane, ctl: f.ctl, dyn: f.dyn, agentKubeconfig: filepath.Join(t.TempDir(), "plane-agent.kubeconfig")}
	_ = bootstrapAsync(ctx, reg.agentOptions(t, f.members[1], "edge-2", reg.token(t, "--tenant=acme")))
	reg.waitPhase(t, "edge-2", cellv1alpha1.RegistrationPending)
	f.ctl.ok(t, "registration", "approve", "edge-2")
	if err := framework.Poll(ctx, 200*time.Millisecond, 60*time.Second, func(context.Context) (bool, error) {
		return reg.registration(t, "edge-2").Status.CertificateExpiry != nil, nil
	}); err != nil {
		t.Fatalf("the approved registration got no certificate: %v", err)
	}
	// A release to two cells, one of them held back by a rollout
	// (cellfed_controller_*, cellfed_rollout*, cellfed_cell_*).
	f.kubectl.MustRun(t, deployment("shop", "web", "app:1", []string{"rz00a", "rz10a"}, ""), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "web", map[string]string{"rz00a": "OK", "rz10a": "OK"})
	f.ctl.ok(t, "rollout", "start", "deployment/web", "-n", "shop", "--cells=rz00a")

	rf, err := monitoring.Rules()
	if err != nil {
		t.Fatal(err)
	}
	records, err := monitoring.RecordedLabels(rf)
	if err != nil {
		t.Fatal(err)
	}
	queries, err := monitoring.RuleQueries()
	if err != nil {
		t.Fatal(err)
	}
	panels, err := monitoring.PanelQueries()
	if err != nil {
		t.Fatal(err)
	}
	vars, varSels, err := monitoring.VariableSelectors()
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string]monitoring.Use{}
	for _, q := range append(queries, panels...) {
		u, err := monitoring.Parse(q.Expr)
		if err != nil {
			t.Fatalf("%s: %v", q.Source, err)
		}
		uses[q.Source] = u
	}
	for i, q := range vars {
		uses[q.Source] = monitoring.Use{Selectors: []monitoring.Selector{varSels[i]}}
	}

	t.Run("every metric and label the rules and dashboards read is exported", func(t *testing.T) {
		var missing map[string][]string
		// Series appear as the federation settles (the rollout's cells,
		// the registration's certificate): poll until nothing is missing.
		err := framework.Poll(ctx, time.Second, 120*time.Second, func(ctx context.Context) (bool, error) {
			exp, err := scrapeFederation(ctx, t, f)
			if err != nil {
				return false, err
			}
			missing = map[string][]string{}
			for src, u := range uses {
				if m := exp.Missing(u, records); len(m) > 0 {
					missing[src] = m
				}
			}
			return len(missing) == 0, nil
		})
		if err != nil {
			srcs := make([]string, 0, len(missing))
			for src := range missing {
				srcs = append(srcs, src)
			}
			sort.Strings(srcs)
			for _, src := range srcs {
				t.Errorf("%s reads what no binary exports: %s", src, strings.Join(missing[src], ", "))
			}
			t.Fatalf("waiting for every metric: %v", err)
		}
		t.Logf("%d rule expressions, %d panel queries and %d variables read only exported metrics and labels", len(queries), len(panels), len(vars))
	})

	t.Run("Prometheus answers every panel query", func(t *testing.T) {
		prom := startPrometheus(t, promBin, f)
		answers := make([]string, len(panels))
		for i, q := range panels {
			var last string
			err := framework.Poll(ctx, time.Second, 120*time.Second, func(ctx context.Context) (bool, error) {
				n, body, err := prom.query(ctx, q.Expr)
				last = body
				return err == nil && n > 0, nil
			})
			if err != nil {
				t.Errorf("%s: no data for %s: %v (last answer %s)", q.Source, q.Expr, err, last)
			}
			answers[i] = last
		}
		t.Logf("%d panel queries answered with data by Prometheus", len(panels))
		// The member label names a KubeFedCluster (a physical one where
		// one reaches the member), not the controller's access hash:
		// it is what an alert's summary tells the person paged.
		_, body, err := prom.query(ctx, `count by (member) (cellfed_controller_member_request_duration_seconds_count)`)
		if err != nil {
			t.Fatal(err)
		}
		var members struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &members); err != nil {
			t.Fatal(err)
		}
		list, err := f.dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, c := range list.Items {
			if c.GetLabels()[cellv1alpha1.LabelTopologyType] == "" {
				names[c.GetName()] = true
			}
		}
		if len(members.Data.Result) == 0 {
			t.Errorf("no member label in %s", body)
		}
		for _, r := range members.Data.Result {
			if !names[r.Metric["member"]] {
				t.Errorf("member request metrics name member %q: want one of the physical KubeFedClusters %v", r.Metric["member"], names)
			}
		}
		// CELLFED_MONITORING_ANSWERS=<file> keeps what Prometheus
		// answered, as the page docs/monitoring-panels.md shows.
		if out := os.Getenv("CELLFED_MONITORING_ANSWERS"); out != "" && !t.Failed() {
			if err := os.WriteFile(out, []byte(panelAnswers(panels, answers)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// prometheusBinary is Debian's prometheus (make prometheus installs it).
func prometheusBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/prometheus", "/usr/local/bin/prometheus"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("prometheus is not installed: run make prometheus (Debian's prometheus package)")
	return ""
}

// scrapeFederation reads the plane's and the controller's /metrics.
func scrapeFederation(ctx context.Context, t *testing.T, f *federation) (monitoring.Exposition, error) {
	body, err := f.plane.Client(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("the plane's /metrics: %w", err)
	}
	exp, err := monitoring.ParseExposition(string(body))
	if err != nil {
		return nil, fmt.Errorf("the plane's /metrics: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.controller.HealthURL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the controller's /metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("the controller's /metrics: %w", err)
	}
	ctrl, err := monitoring.ParseExposition(string(b))
	if err != nil {
		return nil, fmt.Errorf("the controller's /metrics: %w", err)
	}
	exp.Merge(ctrl)
	return exp, nil
}

// prometheus is a running Prometheus server.
type prometheus struct{ url string }

// startPrometheus runs prometheus scraping the plane (with the admin's
// client certificate) and the controller every 2 s, with
// manifests/monitoring/rules.yaml loaded.
func startPrometheus(t *testing.T, bin string, f *federation) prometheus {
	t.Helper()
	dir := t.TempDir()
	planeURL, err := url.Parse(f.plane.RESTConfig(t).Host)
	if err != nil {
		t.Fatal(err)
	}
	ctrlURL, err := url.Parse(f.controller.HealthURL)
	if err != nil {
		t.Fatal(err)
	}
	pki := f.plane.PKI()
	config := fmt.Sprintf(`global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: [%q]
scrape_configs:
- job_name: cellfed-apiserver
  scheme: https
  tls_config: {ca_file: %q, cert_file: %q, key_file: %q, server_name: localhost}
  static_configs: [{targets: [%q]}]
- job_name: cellfed-controller
  static_configs: [{targets: [%q]}]
`, filepath.Join(framework.RepoRoot(t), "manifests", "monitoring", "rules.yaml"), pki.CACert(), pki.AdminCert(), pki.AdminKey(), planeURL.Host, ctrlURL.Host)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	port := framework.FreePort(t)
	p := framework.StartProcess(t, "prometheus", filepath.Join(dir, "prometheus.log"), bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port))
	prom := prometheus{url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := framework.Poll(ctx, time.Second, 2*time.Minute, func(ctx context.Context) (bool, error) {
		n, _, err := prom.query(ctx, `sum(up{job=~"cellfed-apiserver|cellfed-controller"}) == 2`)
		return err == nil && n == 1, nil
	}); err != nil {
		t.Fatalf("prometheus does not scrape the plane and the controller: %v\n%s", err, p.Tail(20))
	}
	return prom
}

// query runs an instant query and returns how many series it answered.
func (p prometheus) query(ctx context.Context, expr string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Status != "success" {
		return 0, string(b), fmt.Errorf("query %s: %s (%v)", expr, b, err)
	}
	return len(r.Data.Result), string(b), nil
}

// panelAnswers is a Markdown table of each panel query and what
// Prometheus answered it: the number of series and the first one.
func panelAnswers(panels []monitoring.Query, answers []string) string {
	var b strings.Builder
	b.WriteString("| panel | query | series | first series = value |\n|---|---|---:|---|\n")
	for i, q := range panels {
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  []any             `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		_ = json.Unmarshal([]byte(answers[i]), &r)
		first := ""
		if res := r.Data.Result; len(res) > 0 {
			var labels []string
			for k, v := range res[0].Metric {
				labels = append(labels, k+"="+strconv.Quote(v))
			}
			sort.Strings(labels)
			value := ""
			if len(res[0].Value) == 2 {
				value = fmt.Sprint(res[0].Value[1])
			}
			first = "`{" + strings.Join(labels, ", ") + "}` = " + value
		}
		fmt.Fprintf(&b, "| %s | `%s` | %d | %s |\n", strings.ReplaceAll(q.Source, "|", "\\|"),
			strings.ReplaceAll(q.Expr, "|", "\\|"), len(r.Data.Result), strings.ReplaceAll(first, "|", "\\|"))
	}
	return b.String()
}
