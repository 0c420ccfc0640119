package e2e

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/cellfed/cellfed/pkg/doctor"
	"github.com/cellfed/cellfed/test/framework"
)

// doctorArgs keep the timing checks out of a loaded CI machine's way: a
// slow read there is the machine, not the federation.
var doctorArgs = []string{"doctor", "-o", "json", "--slow-database=1m", "--controller-lag=10m"}

// TestDoctor runs `cellfedctl doctor` against a real federation — the
// plane with its tunnel hub, cellfed-controller, two members joined
// directly and one reached only through its agent's tunnel — first
// healthy (exit 0, no finding, every check done), then with faults
// injected one after another, each reported by its name with its fix: the
// plane's serving certificate replaced by one expiring in two days, an
// automatic rollout stuck at its progress deadline, the agent stopped,
// and a member stopped.
func TestDoctor(t *testing.T) {
	t.Parallel()
	tunnelArgs, ports := framework.TunnelPlaneArgs(t, "0.0.0.0")
	f := startFederationWith(t, 2, framework.PlaneOptions{Args: append(tunnelArgs, framework.AllowHandIssuedAgents)})
	edge := startTunnelledMember(t, f.plane, ports, "edge-1")
	framework.JoinMember(t, f.plane, edge.member, "edge-1")

	// An object released and ready on two cells, to roll out later.
	f.kubectl.MustRun(t, deployment("shop", "web", "app:1", []string{"rz00a", "rz10a"}, ""), "apply", "-f", "-")
	f.waitSettled(t, fedDeployV2, "shop", "web", map[string]string{"rz00a": "OK", "rz10a": "OK"})
	for i := range 2 {
		f.patchMemberStatus(t, i, deployments, "shop", "web", deploymentStatus(1, 2, 2))
	}

	// Healthy: clean, exit 0, nothing left unchecked.
	var last string
	r := waitDoctor(t, f, "a clean report", func(r doctor.Report, code int) bool {
		last = fmt.Sprintf("exit %d, findings %v, not checked %v", code, r.Findings, r.NotChecked())
		return code == 0 && len(r.Findings) == 0
	})
	if nc := r.NotChecked(); len(nc) != 0 {
		t.Errorf("a platform admin's doctor left checks undone: %v (%s)", nc, last)
	}
	for _, want := range []string{"clusters", "tunnel-agents", "kms", "certificates", "rollouts"} {
		found := false
		for _, c := range r.Checks {
			found = found || (c.Name == want && c.Checked)
		}
		if !found {
			t.Errorf("check %s missing from %v", want, r.Checks)
		}
	}
	if !strings.Contains(fmt.Sprint(r.Checks), "1 through a tunnel") {
		t.Errorf("the clusters check does not say how each is reached: %v", r.Checks)
	}
	if out := f.ctl.ok(t, "doctor", "--slow-database=1m"); !strings.Contains(out, "No problems found.") {
		t.Errorf("doctor on a healthy federation printed:\n%s", out)
	}

	// A certificate about to expire: the plane's serving certificate,
	// replaced in place (the plane reloads it) by one valid two days.
	shortenServingCert(t, f.plane, 48*time.Hour)
	waitFinding(t, f, doctor.CertificateExpiring, "the plane's serving certificate", "serving.crt")

	// A stuck rollout: member-0 never reports the new pods ready.
	f.ctl.ok(t, "rollout", "start", "deployment/web", "-n", "shop", "--auto", "--batch=1", "--progress-deadline=3s")
	f.setImage(t, "web", "app:2")
	waitFinding(t, f, doctor.RolloutStuck, "shop/federateddeployment/web", "rollout resume federateddeployment/web -n shop")

	// The agent stopped.
	edge.agent.Kill()
	waitFinding(t, f, doctor.AgentDisconnected, "cluster edge-1", "logs deploy/cellfed-agent")

	// A member stopped.
	f.members[1].Kill()
	waitFinding(t, f, doctor.MemberUnreachable, "cluster member-1", "get --raw /readyz")

	// Every fault at once, in text: name, object and fix of each; exit 1.
	out, errOut, code := f.ctl.run(t, "doctor", "--slow-database=1m", "--controller-lag=10m")
	t.Logf("doctor with the faults:\n%s", out)
	if code != doctor.ExitCodeFindings {
		t.Errorf("doctor with faults exited %d, want %d: %s", code, doctor.ExitCodeFindings, errOut)
	}
	for _, want := range []string{
		"certificate-expiring  the plane's serving certificate", "rollout-stuck  shop/federateddeployment/web",
		"agent-disconnected  cluster edge-1", "member-unreachable  cluster member-1", "fix: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's text output lacks %q:\n%s", want, out)
		}
	}
}

// waitDoctor runs doctor -o json every 2 s until ok holds for its report
// and exit code, for up to controllerTimeout; it returns the report.
func waitDoctor(t *testing.T, f *federation, what string, ok func(doctor.Report, int) bool) doctor.Report {
	t.Helper()
	var r doctor.Report
	var last string
	err := framework.Poll(context.Background(), 2*time.Second, controllerTimeout, func(context.Context) (bool, error) {
		out, errOut, code := f.ctl.run(t, doctorArgs...)
		r = doctor.Report{}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			last = fmt.Sprintf("exit %d, output is not JSON (%v): %s%s", code, err, out, errOut)
			return false, nil
		}
		last = fmt.Sprintf("exit %d: %s%s", code, out, errOut)
		return ok(r, code), nil
	})
	if err != nil {
		t.Fatalf("doctor did not give %s: %v; last:\n%s", what, err, last)
	}
	return r
}

// waitFinding waits until doctor reports finding name about object with
// a fix containing fix, and exits non-zero.
func waitFinding(t *testing.T, f *federation, name, object, fix string) {
	t.Helper()
	waitDoctor(t, f, name+" for "+object, func(r doctor.Report, code int) bool {
		for _, fd := range r.Findings {
			if fd.Name == name && fd.Object == object && strings.Contains(fd.Fix, fix) && fd.Message != "" {
				return code == doctor.ExitCodeFindings
			}
		}
		return false
	})
}

// shortenServingCert rewrites the plane's serving certificate in place:
// same key, names and CA, valid for validity from now.
func shortenServingCert(t *testing.T, plane *framework.Server, validity time.Duration) {
	t.Helper()
	files := plane.PKI()
	parse := func(path string) *x509.Certificate {
		certs, err := certutil.CertsFromFile(path)
		if err != nil || len(certs) == 0 {
			t.Fatalf("reading %s: %v", path, err)
		}
		return certs[0]
	}
	signer := func(path string) crypto.Signer {
		k, err := keyutil.PrivateKeyFromFile(path)
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			t.Fatalf("%s is not a signing key", path)
		}
		return s
	}
	ca, caKey := parse(files.CACert()), signer(files.CAKey())
	old, key := parse(files.ServingCert()), signer(files.ServingKey())
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      old.Subject, DNSNames: old.DNSNames, IPAddresses: old.IPAddresses,
		NotBefore: now.Add(-5 * time.Minute), NotAfter: now.Add(validity),
		KeyUsage: old.KeyUsage, ExtKeyUsage: old.ExtKeyUsage,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := certutil.EncodeCertificates(cert)
	if err != nil {
		t.Fatal(err)
	}
	tmp := files.ServingCert() + ".new"
	if err := os.WriteFile(tmp, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, files.ServingCert()); err != nil {
		t.Fatal(err)
	}
}
