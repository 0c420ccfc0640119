package cellfedctl

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/pkg/doctor"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/registration"
	"github.com/cellfed/cellfed/pkg/rollout"
)

type doctorOptions struct {
	*options
	output       string
	fedNamespace string
	leaseName    string
	thresholds   doctor.Thresholds
	now          func() time.Time
}

func newDoctorCommand(o *options) *cobra.Command {
	d := &doctorOptions{options: o, thresholds: doctor.DefaultThresholds(), now: time.Now}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check a running federation end to end; print what is wrong and the command that fixes it",
		Long: `Check the plane and everything it federates, and print one finding
per problem: its name, what is wrong, and the command that fixes it or
digs further. The checks:

  plane              /readyz?verbose of the plane
  kms                the plane's KMS readiness checks
  database           a read through the plane to its database (--slow-database)
  controller         cellfed-controller's leader Lease and its lag (--controller-lag)
  clusters           each physical KubeFedCluster's Ready condition, direct or tunnelled
  cells              each Cell's Ready condition
  tunnel-agents      the plane's tunnel hub has an agent for every tunnelled cluster
  registrations      ClusterRegistrations pending or failed
  certificates       the plane's serving certificate, agent certificates, member
                     CAs, expiring within --certificate-warning
  federated-types    FederatedTypeConfigs without their CRD, and the reverse
  federated-objects  federated objects not propagated to every placed cell
  rollouts           rollouts paused, or past their progress deadline

Finding names are stable (e.g. member-unreachable, agent-disconnected,
certificate-expiring, rollout-stuck, registration-pending). A check the
caller may not read (RBAC) is listed as not checked, with why; it does not
fail the command. The exit code is 0 when nothing is wrong, 1 when there is
a finding or an error. -o json prints the report for scripts.`,
		Example: examples(o.name, "doctor", "doctor -o json | jq -r '.findings[].name'", "doctor --certificate-warning=720h"),
		Args:    maxArgs(0, "no arguments"),
		RunE:    func(c *cobra.Command, _ []string) error { return d.run(c.Context()) },
	}
	cmd.Flags().StringVarP(&d.output, "output", "o", "", "output format: empty for text, json or yaml")
	cmd.Flags().StringVar(&d.fedNamespace, "federation-namespace", federatedtypes.DefaultNamespace, "namespace of the KubeFedClusters, FederatedTypeConfigs and the controller's Lease")
	cmd.Flags().StringVar(&d.leaseName, "controller-lease", "cellfed-controller", "name of cellfed-controller's leader Lease (its --leader-elect-lease-name)")
	cmd.Flags().DurationVar(&d.thresholds.CertificateWarning, "certificate-warning", d.thresholds.CertificateWarning, "report certificates expiring within this")
	cmd.Flags().DurationVar(&d.thresholds.SlowDatabase, "slow-database", d.thresholds.SlowDatabase, "report a read through the plane to its database slower than this")
	cmd.Flags().DurationVar(&d.thresholds.ControllerLag, "controller-lag", d.thresholds.ControllerLag, "report federated objects changed longer ago than this that the controller has not seen")
	return cmd
}

func (d *doctorOptions) run(ctx context.Context) error {
	switch d.output {
	case "", "json", "yaml":
	default:
		return fmt.Errorf("-o %q is not an output format; use -o json, -o yaml, or no -o for text", d.output)
	}
	plane, err := d.planeClients()
	if err != nil {
		return err
	}
	facts, err := d.gather(ctx, plane)
	if err != nil {
		return err
	}
	report := doctor.Diagnose(facts)
	out := d.streams.Out
	switch d.output {
	case "json":
		b, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return withFix(err, "this is a bug in cellfed: please report it")
		}
		if _, err := fmt.Fprintf(out, "%s\n", b); err != nil {
			return err
		}
	case "yaml":
		b, err := yaml.Marshal(report)
		if err != nil {
			return withFix(err, "this is a bug in cellfed: please report it")
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
	default:
		if err := PrintDoctor(out, report); err != nil {
			return err
		}
	}
	if report.Failed() {
		return exitCode{code: doctor.ExitCodeFindings}
	}
	return nil
}

// PrintDoctor writes the report as text: findings first, then what was
// and was not checked.
func PrintDoctor(w io.Writer, r doctor.Report) error {
	var b strings.Builder
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "%-7s  %s  %s\n", strings.ToUpper(string(f.Severity)), f.Name, f.Object)
		fmt.Fprintf(&b, "         %s\n", f.Message)
		fmt.Fprintf(&b, "         fix: %s\n", f.Fix)
	}
	if len(r.Findings) > 0 {
		b.WriteByte('\n')
	}
	for _, c := range r.Checks {
		if c.Checked {
			fmt.Fprintf(&b, "checked      %-18s %s\n", c.Name, c.Summary)
		}
	}
	for _, c := range r.NotChecked() {
		fmt.Fprintf(&b, "not checked  %-18s %s\n", c.Name, c.Summary)
	}
	notChecked := ""
	if n := len(r.NotChecked()); n > 0 {
		notChecked = fmt.Sprintf("; %d check(s) not done", n)
	}
	if len(r.Findings) == 0 {
		fmt.Fprintf(&b, "No problems found%s.\n", notChecked)
	} else {
		fmt.Fprintf(&b, "%d problem(s) found%s.\n", len(r.Findings), notChecked)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// why says why a read failed, for "not checked".
func why(err error, doing string) string {
	switch {
	case apierrors.IsForbidden(err):
		return doing + " is forbidden to you (ask for RBAC read access)"
	case apierrors.IsUnauthorized(err):
		return doing + ": the plane does not accept your credentials"
	}
	return fmt.Sprintf("%s: %v", doing, oneLine(err.Error()))
}

// gather reads everything Diagnose needs. Only an unreachable plane is an
// error; a read that fails makes its part unchecked.
func (d *doctorOptions) gather(ctx context.Context, p *planeClients) (doctor.Facts, error) {
	f := doctor.Facts{Now: d.now(), Command: d.name, FederationNamespace: d.fedNamespace, Thresholds: d.thresholds}
	rc := p.kube.CoreV1().RESTClient()
	f.Plane = d.readyz(ctx, rc, p.host)
	if f.Plane.Unchecked != "" && strings.HasPrefix(f.Plane.Unchecked, "unreachable: ") {
		return f, withFix(fmt.Errorf("the plane at %s does not answer: %s", p.host, strings.TrimPrefix(f.Plane.Unchecked, "unreachable: ")),
			"is the plane running? check --kubeconfig and --context")
	}
	f.Database = d.database(ctx, p)
	f.Controller = d.lease(ctx, p)

	// Clusters and their CAs.
	var memberCAs []doctor.Certificate
	list, err := p.Dynamic.Resource(kubefed.KubeFedClustersResource).Namespace(d.fedNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.Clusters.Unchecked = why(err, "listing KubeFedClusters in "+d.fedNamespace)
	} else {
		f.Clusters.Items = []doctor.Cluster{}
		for i := range list.Items {
			c, err := decodeCluster(&list.Items[i])
			if err != nil {
				return f, err
			}
			if !IsPhysicalCluster(c) {
				continue
			}
			dc := doctor.Cluster{Name: c.Name, Endpoint: c.Spec.APIEndpoint,
				Tunnelled: c.Labels[registration.LabelTunnelled] == "true" || c.Spec.ProxyURL != ""}
			dc.Ready, dc.Reason, dc.Message = clusterReady(c.Status.Conditions)
			f.Clusters.Items = append(f.Clusters.Items, dc)
			for _, cert := range pemCertificates(c.Spec.CABundle) {
				memberCAs = append(memberCAs, doctor.Certificate{Kind: doctor.CertMemberCA, Owner: c.Name, Subject: cert.Subject.String(), NotAfter: cert.NotAfter})
			}
		}
	}
	cellList, partial, err := d.list(ctx, p, cellv1alpha1.CellsResource)
	if err != nil {
		f.Cells.Unchecked = why(err, "listing cells")
	} else {
		if partial != "" {
			f.Cells.Unchecked = "cells of other namespaces: " + partial
		}
		cells, err := decodeCells(cellList.Items)
		if err != nil {
			return f, err
		}
		for _, c := range BuildStatus(nil, cells).Cells {
			f.Cells.Items = append(f.Cells.Items, doctor.Cell{Namespace: c.Namespace, Name: c.Name, Cluster: c.Cluster, Ready: c.Ready, Reason: c.Reason, Message: c.Message})
		}
	}
	f.Agents = d.agents(ctx, rc, f.Plane)

	// Registrations and the agents' certificates.
	var agentCerts []doctor.Certificate
	regs, err := p.Dynamic.Resource(cellv1alpha1.ClusterRegistrationsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.Registrations.Unchecked = why(err, "listing ClusterRegistrations")
		f.Certificates.Unchecked = append(f.Certificates.Unchecked, "agent certificates: "+f.Registrations.Unchecked)
	} else {
		for i := range regs.Items {
			var r cellv1alpha1.ClusterRegistration
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(regs.Items[i].Object, &r); err != nil {
				return f, fmt.Errorf("decoding ClusterRegistration %s: %w", regs.Items[i].GetName(), err)
			}
			dr := doctor.Registration{Name: r.Name, Tenant: r.Spec.Tenant, Phase: string(r.Status.Phase)}
			for _, c := range r.Status.Conditions {
				if c.Type == cellv1alpha1.RegistrationConditionReady && c.Status != metav1.ConditionTrue {
					dr.Message = c.Message
				}
			}
			f.Registrations.Items = append(f.Registrations.Items, dr)
			if r.Status.Phase == cellv1alpha1.RegistrationRegistered && r.Status.CertificateExpiry != nil {
				agentCerts = append(agentCerts, doctor.Certificate{Kind: doctor.CertAgent, Owner: r.Name, Subject: "CN=" + r.Name, NotAfter: r.Status.CertificateExpiry.Time})
			}
		}
	}
	if cert, err := servingCertificate(ctx, p.config); err != nil {
		f.Certificates.Unchecked = append(f.Certificates.Unchecked, "the plane's serving certificate: "+oneLine(err.Error()))
	} else {
		f.Certificates.Items = append(f.Certificates.Items, doctor.Certificate{Kind: doctor.CertPlaneServing, Owner: p.host, Subject: cert.Subject.String(), NotAfter: cert.NotAfter})
	}
	f.Certificates.Items = append(append(f.Certificates.Items, agentCerts...), memberCAs...)
	if f.Clusters.Unchecked != "" {
		f.Certificates.Unchecked = append(f.Certificates.Unchecked, "member CAs: "+f.Clusters.Unchecked)
	}

	types, err := d.types(ctx, p, &f)
	if err != nil {
		return f, err
	}
	d.objects(ctx, p, types, &f)
	return f, nil
}

// readyz reads /readyz?verbose: a failing plane answers 500 with the
// same body.
func (d *doctorOptions) readyz(ctx context.Context, rc rest.Interface, host string) doctor.Plane {
	res := rc.Get().AbsPath("/readyz").Param("verbose", "").Do(ctx)
	body, err := res.Raw()
	var code int
	res.StatusCode(&code)
	if err != nil && code == 0 {
		return doctor.Plane{Unchecked: "unreachable: " + oneLine(err.Error())}
	}
	if code == 401 || code == 403 {
		return doctor.Plane{Unchecked: why(err, "reading /readyz")}
	}
	p := doctor.Plane{Host: host}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "[+]"):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "[+]"), " ")
			p.Checks = append(p.Checks, doctor.ReadyzCheck{Name: name, OK: true})
		case strings.HasPrefix(line, "[-]"):
			name, reason, _ := strings.Cut(strings.TrimPrefix(line, "[-]"), " ")
			p.Checks = append(p.Checks, doctor.ReadyzCheck{Name: name, Reason: strings.TrimPrefix(reason, "failed: ")})
		}
	}
	if len(p.Checks) == 0 && err != nil {
		return doctor.Plane{Unchecked: why(err, "reading /readyz?verbose")}
	}
	return p
}

// database times a few reads of one Namespace (default, else the
// caller's): a GET without a resourceVersion reaches the plane's
// database. The fastest counts.
func (d *doctorOptions) database(ctx context.Context, p *planeClients) doctor.Database {
	ns := "default"
	if _, err := p.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsForbidden(err) {
		if own, nsErr := d.namespace(); nsErr == nil {
			ns = own
		}
	}
	var best time.Duration
	for i := 0; i < 3; i++ {
		start := time.Now()
		_, err := p.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		took := time.Since(start)
		if err != nil {
			return doctor.Database{Unchecked: why(err, "reading namespace "+ns)}
		}
		if i == 0 || took < best {
			best = took
		}
	}
	return doctor.Database{Latency: best}
}

// lease reads the controller's leader Lease, and the lag is filled in by
// objects.
func (d *doctorOptions) lease(ctx context.Context, p *planeClients) doctor.Controller {
	c := doctor.Controller{LeaseName: d.leaseName}
	l, err := p.kube.CoordinationV1().Leases(d.fedNamespace).Get(ctx, d.leaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return c
	case err != nil:
		c.Unchecked = why(err, "reading Lease "+d.fedNamespace+"/"+d.leaseName)
		return c
	}
	c.Found = true
	if l.Spec.HolderIdentity != nil {
		c.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		c.RenewTime = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		c.LeaseDuration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return c
}

// agentsMetric is the plane's gauge of connected agents per cluster.
const agentsMetric = "cellfed_tunnel_agents"

// agents reads the tunnel hub's agents from the plane's /metrics. The
// gauge has no series before the first agent connects; then the plane's
// tunnel-hub readiness check tells a hub without agents from a plane
// without a hub.
func (d *doctorOptions) agents(ctx context.Context, rc rest.Interface, plane doctor.Plane) doctor.Agents {
	body, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return doctor.Agents{Unchecked: why(err, "reading the plane's /metrics")}
	}
	a := doctor.Agents{Connected: map[string]int{}}
	seen := false
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, agentsMetric+"{") {
			continue
		}
		seen = true
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, agentsMetric+"{"), "} ")
		if !ok {
			continue
		}
		cluster := labelValue(labels, "cluster")
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if cluster == "" || err != nil {
			continue
		}
		a.Connected[cluster] += int(n)
	}
	if !seen {
		hub := false
		for _, c := range plane.Checks {
			hub = hub || c.Name == "tunnel-hub"
		}
		if !hub && plane.Unchecked == "" {
			return doctor.Agents{Unchecked: "the plane runs no tunnel hub (no readiness check tunnel-hub): check the agents on the hub that serves them (cellfed-proxy)"}
		}
	}
	return a
}

// labelValue is the value of label name in a Prometheus label set.
func labelValue(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.TrimSpace(k) == name {
			if s, err := strconv.Unquote(strings.TrimSpace(v)); err == nil {
				return s
			}
		}
	}
	return ""
}

// servingCertificate is the leaf certificate the plane presents.
func servingCertificate(ctx context.Context, cfg *rest.Config) (*x509.Certificate, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the kubeconfig's server %q is not a URL", cfg.Host)
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("the plane is served over %s, not TLS", u.Scheme)
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("TLS configuration of the kubeconfig: %w", err)
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tlsConfig = tlsConfig.Clone()
	tlsConfig.InsecureSkipVerify = true // only to read the certificate: no request is sent
	tlsConfig.VerifyPeerCertificate = nil
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = u.Hostname()
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := (&tls.Dialer{Config: tlsConfig}).DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	defer func() { _ = conn.Close() }()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s presented no certificate", addr)
	}
	return certs[0], nil
}

// pemCertificates parses the certificates of a PEM bundle, skipping what
// does not parse (admission checks caBundle).
func pemCertificates(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for len(b) > 0 {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// types reads FederatedTypeConfigs and the federated CRDs; it returns
// the types whose objects to read.
func (d *doctorOptions) types(ctx context.Context, p *planeClients, f *doctor.Facts) ([]fedType, error) {
	ftcs, err := p.Dynamic.Resource(kubefed.FederatedTypeConfigsResource).Namespace(d.fedNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.Types.Unchecked = why(err, "listing FederatedTypeConfigs in "+d.fedNamespace)
		f.Objects.Unchecked = append(f.Objects.Unchecked, f.Types.Unchecked)
		f.Controller.LagUnchecked = f.Types.Unchecked
		return nil, nil
	}
	var types []fedType
	groups := map[string]bool{"types.kubefed.io": true}
	for i := range ftcs.Items {
		t := fedTypeOf(&ftcs.Items[i])
		if t.Plural == "" || t.Group == "" {
			continue
		}
		groups[t.Group] = true
		f.Types.Configs = append(f.Types.Configs, doctor.TypeConfig{Name: t.Name, CRD: t.Plural + "." + t.Group})
		if t.Enabled {
			types = append(types, t)
		}
	}
	crds, err := p.CRDs.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		f.Types.Unchecked = why(err, "listing CustomResourceDefinitions")
		return types, nil
	}
	have := map[string]bool{}
	for _, c := range crds.Items {
		if groups[c.Spec.Group] {
			f.Types.CRDs = append(f.Types.CRDs, c.Name)
			have[c.Name] = true
		}
	}
	sort.Strings(f.Types.CRDs)
	var present []fedType
	for _, t := range types {
		if have[t.Plural+"."+t.Group] {
			present = append(present, t)
		}
	}
	return present, nil
}

// objects reads every federated object of types: propagation, rollouts,
// and what the controller has not seen yet.
func (d *doctorOptions) objects(ctx context.Context, p *planeClients, types []fedType, f *doctor.Facts) {
	f.Objects.Types = len(types)
	var lagUnchecked []string
	for _, t := range types {
		gvr := schema.GroupVersionResource{Group: t.Group, Version: "v1beta2", Resource: t.Plural}
		list, partial, err := d.list(ctx, p, gvr)
		if err != nil {
			u := why(err, "listing "+t.Plural+"."+t.Group)
			f.Objects.Unchecked = append(f.Objects.Unchecked, u)
			lagUnchecked = append(lagUnchecked, u)
			continue
		}
		f.Objects.Read++
		if partial != "" {
			u := t.Plural + "." + t.Group + " of other namespaces: " + partial
			f.Objects.Unchecked = append(f.Objects.Unchecked, u)
			lagUnchecked = append(lagUnchecked, u)
		}
		for i := range list.Items {
			u := &list.Items[i]
			ref := t.ref(u.GetName())
			o := doctor.Object{Ref: ref, Namespace: u.GetNamespace()}
			if fo, err := rollout.Decode(u); err == nil && fo.Status != nil {
				for _, top := range fo.Status.Topologies {
					if top.Status != "" && top.Status != "OK" && top.Status != "HeldBack" {
						o.Failed = append(o.Failed, top.Name+": "+top.Status)
					}
				}
			}
			if s, err := rollout.SettingsOf(u); err == nil && s.Active {
				o.Rollout = &doctor.Rollout{Auto: s.Auto, Paused: s.Paused, PauseReason: s.PauseReason, State: s.State, Message: s.Message,
					ProgressDeadline: s.ProgressDeadline, ProgressSince: s.ProgressSince}
			}
			f.Objects.Items = append(f.Objects.Items, o)
			observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
			if u.GetGeneration() > observed {
				name := ref
				if u.GetNamespace() != "" {
					name = u.GetNamespace() + "/" + ref
				}
				f.Controller.Behind = append(f.Controller.Behind, doctor.Behind{Object: name, Since: specChanged(u)})
			}
		}
	}
	if len(lagUnchecked) > 0 && f.Controller.LagUnchecked == "" {
		f.Controller.LagUnchecked = strings.Join(lagUnchecked, "; ")
	}
}

// list lists gvr in every namespace or, when that is forbidden, in the
// caller's namespace (-n, else the context's); partial then says what
// was left out.
func (d *doctorOptions) list(ctx context.Context, p *planeClients, gvr schema.GroupVersionResource) (*unstructured.UnstructuredList, string, error) {
	l, err := p.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err == nil || !apierrors.IsForbidden(err) {
		return l, "", err
	}
	ns, nsErr := d.namespace()
	if nsErr != nil {
		return nil, "", err
	}
	l, nsErr = p.Dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if nsErr != nil {
		return nil, "", err
	}
	return l, "only namespace " + ns + " was read (listing every namespace is forbidden to you)", nil
}

// specChanged is when an object's spec was last written: the latest
// managedFields entry that is not a status write, else its creation.
func specChanged(u *unstructured.Unstructured) time.Time {
	t := u.GetCreationTimestamp().Time
	for _, m := range u.GetManagedFields() {
		if m.Subresource == "" && m.Time != nil && m.Time.After(t) {
			t = m.Time.Time
		}
	}
	return t
}
