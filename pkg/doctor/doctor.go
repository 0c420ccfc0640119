// Package doctor decides what is wrong with a running federation from
// facts gathered about it (`cellfedctl doctor` gathers them): per finding
// a stable name, a severity, what is wrong and the command that fixes it
// or digs further. It does no I/O: Diagnose is a pure function of Facts.
package doctor

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// ExitCodeFindings is `cellfedctl doctor`'s exit code when a finding is
// an error or a warning.
const ExitCodeFindings = 1

// Severity of a finding. Errors and warnings make `doctor` exit non-zero.
type Severity string

// Severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Finding names, stable so scripts and tests can match them.
const (
	PlaneNotReady         = "plane-not-ready"
	KMSUnhealthy          = "kms-unhealthy"
	DatabaseSlow          = "database-slow"
	ControllerNoLeader    = "controller-no-leader"
	ControllerLagging     = "controller-lagging"
	MemberUnreachable     = "member-unreachable"
	MemberNotReady        = "member-not-ready"
	MemberNotProbed       = "member-not-probed"
	MemberMisconfigured   = "member-misconfigured"
	AgentDisconnected     = "agent-disconnected"
	CellNotReady          = "cell-not-ready"
	RegistrationPending   = "registration-pending"
	RegistrationFailed    = "registration-failed"
	CertificateExpiring   = "certificate-expiring"
	CertificateExpired    = "certificate-expired"
	TypeWithoutCRD        = "type-without-crd"
	CRDWithoutType        = "crd-without-type"
	PropagationFailed     = "propagation-failed"
	RolloutStuck          = "rollout-stuck"
	checkPlane            = "plane"
	checkKMS              = "kms"
	checkDatabase         = "database"
	checkController       = "controller"
	checkClusters         = "clusters"
	checkCells            = "cells"
	checkAgents           = "tunnel-agents"
	checkRegistrations    = "registrations"
	checkCertificates     = "certificates"
	checkTypes            = "federated-types"
	checkObjects          = "federated-objects"
	checkRollouts         = "rollouts"
	clusterReasonNotReach = "ClusterNotReachable"
	clusterReasonConfig   = "ConfigMalformed"
	clusterReasonNotProbe = "NotProbedYet"
)

// Finding is one thing wrong.
type Finding struct {
	// Name is stable: e.g. member-unreachable, rollout-stuck.
	Name     string   `json:"name"`
	Severity Severity `json:"severity"`
	// Object is what the finding is about, e.g. "cluster member-1".
	Object string `json:"object"`
	// Message says what is wrong.
	Message string `json:"message"`
	// Fix is the command that fixes it or digs further.
	Fix string `json:"fix"`
}

// Check is one check and its outcome.
type Check struct {
	Name string `json:"name"`
	// Checked is false when the check could not be done; Summary then
	// says why.
	Checked bool   `json:"checked"`
	Summary string `json:"summary"`
}

// Report is what Diagnose decides.
type Report struct {
	Findings []Finding `json:"findings"`
	Checks   []Check   `json:"checks"`
}

// Failed says whether any finding is an error or a warning.
func (r Report) Failed() bool {
	for _, f := range r.Findings {
		if f.Severity == Error || f.Severity == Warning {
			return true
		}
	}
	return false
}

// NotChecked lists the checks that could not be done.
func (r Report) NotChecked() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Checked {
			out = append(out, c)
		}
	}
	return out
}

// Thresholds decide when a measured value is a finding.
type Thresholds struct {
	// CertificateWarning: a certificate expiring within it is reported.
	CertificateWarning time.Duration
	// SlowDatabase: a plane round trip to its database slower than it is
	// reported.
	SlowDatabase time.Duration
	// ControllerLag: a federated object whose spec changed longer ago
	// than it and that the controller has not seen yet is reported.
	ControllerLag time.Duration
}

// DefaultThresholds are doctor's defaults.
func DefaultThresholds() Thresholds {
	return Thresholds{CertificateWarning: 7 * 24 * time.Hour, SlowDatabase: time.Second, ControllerLag: 2 * time.Minute}
}

// Facts are what was gathered. A part whose Unchecked is not empty could
// not be read; Unchecked says why (e.g. "forbidden: ...").
type Facts struct {
	Now time.Time
	// Command is the program name fixes are written with ("cellfedctl").
	Command string
	// FederationNamespace holds KubeFedClusters, FTCs and the Lease.
	FederationNamespace string
	Thresholds          Thresholds

	Plane         Plane
	Database      Database
	Controller    Controller
	Clusters      Clusters
	Cells         Cells
	Agents        Agents
	Registrations Registrations
	Certificates  Certificates
	Types         Types
	Objects       Objects
}

// Plane is the plane's /readyz?verbose.
type Plane struct {
	Unchecked string
	Host      string
	Checks    []ReadyzCheck
}

// ReadyzCheck is one line of /readyz?verbose.
type ReadyzCheck struct {
	Name string
	OK   bool
	// Reason is the failure the plane gives, if any.
	Reason string
}

// Database is the plane's round trip to its storage.
type Database struct {
	Unchecked string
	// Latency is the fastest of a few reads that reach the database.
	Latency time.Duration
}

// Controller is cellfed-controller's leader Lease and what it has not
// caught up with.
type Controller struct {
	Unchecked string
	LeaseName string
	// Found is false when there is no Lease.
	Found         bool
	Holder        string
	RenewTime     time.Time
	LeaseDuration time.Duration
	// LagUnchecked says why Behind could not be read (if so).
	LagUnchecked string
	// Behind are federated objects whose generation the controller has
	// not observed, with when their spec last changed.
	Behind []Behind
}

// Behind is an object the controller has not caught up with.
type Behind struct {
	Object string
	Since  time.Time
}

// Clusters are the physical KubeFedClusters.
type Clusters struct {
	Unchecked string
	Items     []Cluster
}

// Cluster is one physical KubeFedCluster.
type Cluster struct {
	Name     string
	Endpoint string
	// Tunnelled: reached through an agent's tunnel (proxyURL or the
	// tunnelled label).
	Tunnelled bool
	// Ready is the Ready condition: True, False or Unknown.
	Ready   string
	Reason  string
	Message string
}

// Cells are every namespace's cells.
type Cells struct {
	Unchecked string
	Items     []Cell
}

// Cell is one Cell.
type Cell struct {
	Namespace, Name, Cluster string
	Ready, Reason, Message   string
}

// Agents are the tunnel agents the plane's hub has connected, per
// cluster (its cellfed_tunnel_agents metric).
type Agents struct {
	Unchecked string
	Connected map[string]int
}

// Registrations are the ClusterRegistrations.
type Registrations struct {
	Unchecked string
	Items     []Registration
}

// Registration is one ClusterRegistration.
type Registration struct {
	Name, Tenant, Phase, Message string
}

// Certificates are the certificates found, with the parts that could not
// be read.
type Certificates struct {
	Items     []Certificate
	Unchecked []string
}

// Certificate kinds, which decide the fix.
const (
	CertPlaneServing = "plane-serving"
	CertAgent        = "agent"
	CertMemberCA     = "member-ca"
)

// Certificate is one certificate and where it was found.
type Certificate struct {
	Kind string
	// Owner is the cluster (agent, member CA) or the plane's host.
	Owner    string
	Subject  string
	NotAfter time.Time
}

// Types are FederatedTypeConfigs and the CRDs of types.kubefed.io.
type Types struct {
	Unchecked string
	Configs   []TypeConfig
	// CRDs are the names of the CRDs in the federated types' group.
	CRDs []string
}

// TypeConfig is one FederatedTypeConfig.
type TypeConfig struct {
	Name string
	// CRD is the federated CRD it needs: <plural>.<group>.
	CRD string
}

// Objects are federated objects of every enabled type.
type Objects struct {
	// Unchecked lists types that could not be read, with why.
	Unchecked []string
	// Types is the number of enabled types, Read of those whose objects
	// were read (in every namespace, or the caller's).
	Types, Read int
	Items       []Object
}

// Object is one federated object's propagation and rollout state.
type Object struct {
	// Ref is <federated kind>/<name>, as `cellfedctl rollout` takes it.
	Ref       string
	Namespace string
	// Failed are topologies whose status is neither OK nor HeldBack, as
	// "<cell>: <status>".
	Failed []string
	// Rollout is set while a rollout is active.
	Rollout *Rollout
}

// Rollout is an active rollout's state.
type Rollout struct {
	Auto             bool
	Paused           bool
	PauseReason      string
	State, Message   string
	ProgressDeadline time.Duration
	ProgressSince    time.Time
}

// Diagnose decides the findings from facts.
func Diagnose(f Facts) Report {
	d := &diagnosis{f: f, cmd: f.Command}
	if d.cmd == "" {
		d.cmd = "cellfedctl"
	}
	d.plane()
	d.database()
	d.controller()
	d.clusters()
	d.cells()
	d.registrations()
	d.certificates()
	d.types()
	d.objects()
	sort.SliceStable(d.r.Findings, func(i, j int) bool {
		a, b := d.r.Findings[i], d.r.Findings[j]
		if a.Severity != b.Severity {
			return a.Severity == Error
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Object < b.Object
	})
	if d.r.Findings == nil {
		d.r.Findings = []Finding{}
	}
	return d.r
}

type diagnosis struct {
	f   Facts
	cmd string
	r   Report
}

func (d *diagnosis) add(name string, sev Severity, object, msg, fix string) {
	d.r.Findings = append(d.r.Findings, Finding{Name: name, Severity: sev, Object: object, Message: msg, Fix: fix})
}

func (d *diagnosis) checked(name, format string, args ...any) {
	d.r.Checks = append(d.r.Checks, Check{Name: name, Checked: true, Summary: fmt.Sprintf(format, args...)})
}

func (d *diagnosis) notChecked(name, why string) {
	d.r.Checks = append(d.r.Checks, Check{Name: name, Summary: why})
}

func (d *diagnosis) plane() {
	p := d.f.Plane
	if p.Unchecked != "" {
		d.notChecked(checkPlane, p.Unchecked)
		d.notChecked(checkKMS, "the plane's /readyz was not read: "+p.Unchecked)
		return
	}
	failed, kms := 0, 0
	for _, c := range p.Checks {
		isKMS := strings.Contains(c.Name, "kms")
		if isKMS {
			kms++
		}
		if c.OK {
			continue
		}
		failed++
		msg := fmt.Sprintf("the plane's readiness check %s fails", c.Name)
		if c.Reason != "" {
			msg += ": " + c.Reason
		}
		if isKMS {
			d.add(KMSUnhealthy, Error, "readyz check "+c.Name,
				msg+"; Secrets and other encrypted resources cannot be read or written",
				fmt.Sprintf("kubectl get --raw '/readyz/%s?verbose'; check that cellfed-kms runs and its socket is the one the plane's --kms-* flags name", c.Name))
			continue
		}
		d.add(PlaneNotReady, Error, "readyz check "+c.Name, msg, fmt.Sprintf("kubectl get --raw '/readyz?verbose'; then the plane's log around %q", c.Name))
	}
	d.checked(checkPlane, "%s: %d readiness checks, %d failing", p.Host, len(p.Checks), failed)
	if kms == 0 {
		d.notChecked(checkKMS, "the plane's /readyz has no KMS check (encryption at rest through KMS is not configured)")
	} else {
		d.checked(checkKMS, "%d KMS readiness check(s)", kms)
	}
}

func (d *diagnosis) database() {
	db := d.f.Database
	if db.Unchecked != "" {
		d.notChecked(checkDatabase, db.Unchecked)
		return
	}
	if lim := d.f.Thresholds.SlowDatabase; lim > 0 && db.Latency > lim {
		d.add(DatabaseSlow, Warning, "database", fmt.Sprintf("a read through the plane to its database takes %s (more than %s)", round(db.Latency), lim),
			"kubectl get --raw /metrics | grep -E '^etcd_request_duration_seconds_(sum|count)'; check the database's load and the network to it")
	}
	d.checked(checkDatabase, "a read reaching the database took %s", round(db.Latency))
}

func (d *diagnosis) controller() {
	c := d.f.Controller
	if c.Unchecked != "" {
		d.notChecked(checkController, c.Unchecked)
		return
	}
	lease := d.f.FederationNamespace + "/" + c.LeaseName
	leaseCmd := fmt.Sprintf("kubectl -n %s get lease %s -o yaml", d.f.FederationNamespace, c.LeaseName)
	switch {
	case !c.Found:
		d.add(ControllerNoLeader, Error, "lease "+lease,
			"no cellfed-controller has ever held its leader Lease: nothing propagates federated objects or probes clusters",
			"start cellfed-controller against the plane (kubectl -n "+d.f.FederationNamespace+" get leases shows the Lease once it runs)")
	case c.Holder == "":
		d.add(ControllerNoLeader, Error, "lease "+lease, "the controller's leader Lease has no holder: no replica leads", leaseCmd+"; then the cellfed-controller replicas' logs")
	default:
		age := d.f.Now.Sub(c.RenewTime)
		if c.LeaseDuration > 0 && age > c.LeaseDuration {
			d.add(ControllerNoLeader, Error, "lease "+lease,
				fmt.Sprintf("the leader %s last renewed the Lease %s ago (lease duration %s): it is gone or stuck", c.Holder, round(age), c.LeaseDuration),
				leaseCmd+"; then the log of cellfed-controller "+c.Holder)
		}
	}
	summary := "no leader"
	if c.Found && c.Holder != "" {
		summary = fmt.Sprintf("leader %s, renewed %s ago", c.Holder, round(d.f.Now.Sub(c.RenewTime)))
	}
	if c.LagUnchecked != "" {
		summary += "; lag not checked: " + c.LagUnchecked
	} else {
		var late []string
		var worst time.Duration
		for _, b := range c.Behind {
			if lag := d.f.Now.Sub(b.Since); lag > d.f.Thresholds.ControllerLag {
				late = append(late, b.Object)
				worst = max(worst, lag)
			}
		}
		if len(late) > 0 {
			sort.Strings(late)
			d.add(ControllerLagging, Warning, "controller",
				fmt.Sprintf("%d federated object(s) changed up to %s ago and not yet seen by the controller: %s", len(late), round(worst), list(late, 5)),
				"kubectl get --raw /metrics on the controller's --health-address (workqueue_depth); then its log")
		}
		summary += fmt.Sprintf("; %d object(s) waiting for it", len(c.Behind))
	}
	d.checked(checkController, "%s", summary)
}

func (d *diagnosis) clusters() {
	cs := d.f.Clusters
	if cs.Unchecked != "" {
		d.notChecked(checkClusters, cs.Unchecked)
		d.notChecked(checkAgents, "clusters not read: "+cs.Unchecked)
		return
	}
	agents := d.f.Agents
	direct, tunnelled, ready, tunnelledDown := 0, 0, 0, 0
	for _, c := range cs.Items {
		obj := "cluster " + c.Name
		how := "reached directly at " + c.Endpoint
		if c.Tunnelled {
			tunnelled++
			how = "reached through its agent's tunnel"
		} else {
			direct++
		}
		status := fmt.Sprintf("%s %s", d.cmd, "status")
		noAgent := c.Tunnelled && agents.Unchecked == "" && agents.Connected[c.Name] == 0
		if noAgent {
			tunnelledDown++
			d.add(AgentDisconnected, Error, obj,
				fmt.Sprintf("no cellfed-agent of %s is connected to the plane's tunnel hub: the plane cannot reach the cluster", c.Name),
				fmt.Sprintf("in %s: kubectl -n kube-federation-system logs deploy/cellfed-agent (start it if it is not running); then %s", c.Name, status))
		}
		switch {
		case c.Ready == "True":
			ready++
		case noAgent:
			// Said above: the agent is why.
		case c.Reason == clusterReasonConfig:
			d.add(MemberMisconfigured, Error, obj, "the cluster's KubeFedCluster or its Secret is malformed: "+c.Message,
				fmt.Sprintf("kubectl -n %s get kubefedcluster %s -o yaml; rejoin with %s join %s --kubeconfig-member=<its kubeconfig>", d.f.FederationNamespace, c.Name, d.cmd, c.Name))
		case c.Ready == "Unknown" || c.Ready == "" || c.Reason == clusterReasonNotProbe:
			d.add(MemberNotProbed, Warning, obj, "the controller has not probed the cluster yet ("+how+")",
				fmt.Sprintf("check that cellfed-controller runs; then %s", status))
		case c.Reason == clusterReasonNotReach || c.Reason == "Offline":
			d.add(MemberUnreachable, Error, obj, fmt.Sprintf("the cluster does not answer (%s): %s", how, orNone(c.Message)),
				memberFix(c, d.cmd))
		default:
			d.add(MemberNotReady, Error, obj, fmt.Sprintf("the cluster answers but is not ready (%s): %s", how, orNone(c.Message)),
				memberFix(c, d.cmd))
		}
	}
	d.checked(checkClusters, "%d cluster(s), %d ready: %d reached directly, %d through a tunnel", len(cs.Items), ready, direct, tunnelled)
	if agents.Unchecked != "" {
		d.notChecked(checkAgents, agents.Unchecked)
	} else {
		d.checked(checkAgents, "%d tunnelled cluster(s), %d without an agent", tunnelled, tunnelledDown)
	}
}

func memberFix(c Cluster, cmd string) string {
	if c.Tunnelled {
		return fmt.Sprintf("in %s: kubectl -n kube-federation-system logs deploy/cellfed-agent and kubectl get --raw /readyz; then %s status", c.Name, cmd)
	}
	return fmt.Sprintf("kubectl --server=%s get --raw /readyz (with the member's credentials); then %s status", c.Endpoint, cmd)
}

func (d *diagnosis) cells() {
	cs := d.f.Cells
	if cs.Unchecked != "" {
		d.notChecked(checkCells, cs.Unchecked)
		return
	}
	ready := 0
	for _, c := range cs.Items {
		if c.Ready == "True" {
			ready++
			continue
		}
		msg := fmt.Sprintf("the cell on cluster %s is not ready", c.Cluster)
		if c.Reason != "" || c.Message != "" {
			msg += fmt.Sprintf(" (%s): %s", orNone(c.Reason), orNone(c.Message))
		}
		d.add(CellNotReady, Warning, fmt.Sprintf("cell %s/%s", c.Namespace, c.Name), msg,
			fmt.Sprintf("kubectl -n %s get cell %s -o yaml; %s status", c.Namespace, c.Name, d.cmd))
	}
	d.checked(checkCells, "%d cell(s), %d ready", len(cs.Items), ready)
}

func (d *diagnosis) registrations() {
	rs := d.f.Registrations
	if rs.Unchecked != "" {
		d.notChecked(checkRegistrations, rs.Unchecked)
		return
	}
	pending := 0
	for _, r := range rs.Items {
		obj := "registration " + r.Name
		switch r.Phase {
		case "", "Pending":
			pending++
			d.add(RegistrationPending, Warning, obj,
				fmt.Sprintf("cluster %s (tenant %s) asks to join and waits for a decision", r.Name, orNone(r.Tenant)),
				fmt.Sprintf("%s registration approve %s (or: %s registration deny %s)", d.cmd, r.Name, d.cmd, r.Name))
		case "Failed":
			d.add(RegistrationFailed, Error, obj, "the plane could not complete the approved registration: "+orNone(r.Message),
				fmt.Sprintf("kubectl get clusterregistration %s -o yaml; %s registration list", r.Name, d.cmd))
		}
	}
	d.checked(checkRegistrations, "%d registration(s), %d pending", len(rs.Items), pending)
}

func (d *diagnosis) certificates() {
	cs := d.f.Certificates
	warn := d.f.Thresholds.CertificateWarning
	soon := 0
	for _, c := range cs.Items {
		left := c.NotAfter.Sub(d.f.Now)
		if left > warn {
			continue
		}
		soon++
		what, fix := certificateFix(c, d.f.FederationNamespace, d.cmd)
		if left <= 0 {
			d.add(CertificateExpired, Error, what, fmt.Sprintf("%s (%s) expired on %s", what, c.Subject, c.NotAfter.UTC().Format(time.RFC3339)), fix)
			continue
		}
		d.add(CertificateExpiring, Warning, what,
			fmt.Sprintf("%s (%s) expires in %s, on %s", what, c.Subject, round(left), c.NotAfter.UTC().Format(time.RFC3339)), fix)
	}
	if len(cs.Items) > 0 || len(cs.Unchecked) == 0 {
		d.checked(checkCertificates, "%d certificate(s), %d expiring within %s", len(cs.Items), soon, warn)
	}
	for _, u := range cs.Unchecked {
		d.notChecked(checkCertificates, u)
	}
}

// certificateFix names a certificate and says how to replace it.
func certificateFix(c Certificate, fedNS, cmd string) (what, fix string) {
	switch c.Kind {
	case CertPlaneServing:
		return "the plane's serving certificate",
			"give the plane a new one: with its generated PKI, delete <data-dir>/pki/serving.crt and serving.key and restart it (it signs a new pair, reloaded without a restart when written in place); with --tls-cert-file, replace that file"
	case CertAgent:
		return "the agent certificate of " + c.Owner,
			fmt.Sprintf("agents renew at two thirds of the validity: in %s, kubectl -n kube-federation-system logs deploy/cellfed-agent; if it cannot renew, %s registration revoke %s and register it again with a new token", c.Owner, cmd, c.Owner)
	case CertMemberCA:
		return "the CA of cluster " + c.Owner,
			fmt.Sprintf("renew the member's CA, then %s join %s --kubeconfig-member=<its new kubeconfig> (updates spec.caBundle of kubefedcluster %s/%s)", cmd, c.Owner, fedNS, c.Owner)
	}
	return "certificate " + c.Subject, "replace it"
}

func (d *diagnosis) types() {
	ts := d.f.Types
	if ts.Unchecked != "" {
		d.notChecked(checkTypes, ts.Unchecked)
		return
	}
	crds := map[string]bool{}
	for _, c := range ts.CRDs {
		crds[c] = true
	}
	wanted := map[string]bool{}
	for _, tc := range ts.Configs {
		wanted[tc.CRD] = true
		if !crds[tc.CRD] {
			d.add(TypeWithoutCRD, Error, "federatedtypeconfig "+tc.Name,
				fmt.Sprintf("the type is enabled but its federated CRD %s does not exist: its objects cannot be created or propagated", tc.CRD),
				fmt.Sprintf("%s enable %s (creates the CRD again), or %s disable %s", d.cmd, tc.Name, d.cmd, tc.Name))
		}
	}
	for _, c := range ts.CRDs {
		if !wanted[c] {
			d.add(CRDWithoutType, Warning, "crd "+c,
				"a federated CRD with no FederatedTypeConfig: its objects are never propagated",
				fmt.Sprintf("%s enable <type> for the type it federates, or kubectl delete crd %s if it is no longer used", d.cmd, c))
		}
	}
	d.checked(checkTypes, "%d FederatedTypeConfig(s), %d federated CRD(s)", len(ts.Configs), len(ts.CRDs))
}

func (d *diagnosis) objects() {
	objs := d.f.Objects
	failing, active := 0, 0
	for _, o := range objs.Items {
		obj := o.Ref
		if o.Namespace != "" {
			obj = o.Namespace + "/" + o.Ref
		}
		nsFlag := ""
		if o.Namespace != "" {
			nsFlag = " -n " + o.Namespace
		}
		if len(o.Failed) > 0 {
			failing++
			d.add(PropagationFailed, Error, obj, "not propagated to "+list(o.Failed, 5),
				fmt.Sprintf("%s status %s%s; kubectl get %s%s -o yaml", d.cmd, o.Ref, nsFlag, o.Ref, nsFlag))
		}
		r := o.Rollout
		if r == nil {
			continue
		}
		active++
		status := fmt.Sprintf("%s rollout status %s%s", d.cmd, o.Ref, nsFlag)
		resume := fmt.Sprintf("%s rollout resume %s%s", d.cmd, o.Ref, nsFlag)
		undo := fmt.Sprintf("%s rollout undo %s%s", d.cmd, o.Ref, nsFlag)
		switch {
		case r.Paused:
			d.add(RolloutStuck, Warning, obj, "the rollout is paused: "+orNone(r.PauseReason),
				fmt.Sprintf("%s; fix the cause, then %s (or %s)", status, resume, undo))
		case r.Auto && r.ProgressDeadline > 0 && !r.ProgressSince.IsZero() && d.f.Now.Sub(r.ProgressSince) > r.ProgressDeadline && r.State != "Finished":
			d.add(RolloutStuck, Warning, obj,
				fmt.Sprintf("the current batch started %s ago, past its progress deadline %s, and the rollout controller has not paused it: %s",
					round(d.f.Now.Sub(r.ProgressSince)), r.ProgressDeadline, orNone(r.Message)),
				fmt.Sprintf("%s; check that cellfed-controller runs", status))
		}
	}
	for _, u := range objs.Unchecked {
		d.notChecked(checkObjects, u)
	}
	if objs.Read == 0 && len(objs.Unchecked) > 0 {
		d.notChecked(checkRollouts, "no federated type could be read")
		return
	}
	d.checked(checkObjects, "%d object(s) of %d of %d type(s), %d not propagated everywhere", len(objs.Items), objs.Read, objs.Types, failing)
	d.checked(checkRollouts, "%d active rollout(s)", active)
}

// list joins the first n items and says how many more there are.
func list(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Second:
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
