package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
	"github.com/cellfed/cellfed/test/framework"
)

// TestSecretRevisions releases a FederatedSecret as an app team (rollout
// start, a change the controller records, undo) and reads its rollout
// history as everyone else would: no row of the plane's SQLite database
// holds the secret in clear (TemplateRevisions are KMS-encrypted, their
// data Secrets too), a viewer's `kubectl get templaterevisions`, its
// `cellfedctl rollout history` and its board's diff show digests only and
// the viewer cannot read the data Secrets, while the app team's undo
// restores the old value.
func TestSecretRevisions(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 2)
	f.ctl.ok(t, "tenant", "grant", "alice", "-n", "shop", "--role=app-team")
	f.ctl.ok(t, "tenant", "grant", "vera", "-n", "shop", "--role=viewer")
	alice := newCellfedctl(t, f.plane.Kubeconfig)
	asAlice := []string{"--as=alice"}
	secretV2 := fedResource("federatedsecrets", "v1beta2")

	first, second := "first-canary-5d1e9a", "second-canary-77b0c4"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	clear := []string{first, second, b64(first), b64(second)}
	f.kubectl.MustRun(t, `apiVersion: types.kubefed.io/v1beta2
kind: FederatedSecret
metadata: {name: db, namespace: shop}
spec:
  placement: `+framework.CellPlacement("rz00a", "rz10a")+`
  template:
    type: Opaque
    data: {password: `+b64(first)+`, user: `+b64("admin")+`}
`, "apply", "-f", "-")
	f.waitSettled(t, secretV2, "shop", "db", map[string]string{"rz00a": "OK", "rz10a": "OK"})

	// The app team releases, changes the password, and undoes it.
	alice.ok(t, append([]string{"rollout", "start", "secret/db", "-n", "shop", "--cells=rz00a"}, asAlice...)...)
	f.kubectl.MustRun(t, "", "--as=alice", "-n", "shop", "patch", "federatedsecrets.v1beta2.types.kubefed.io", "db", "--type=merge",
		"-p", `{"spec":{"template":{"data":{"password":"`+b64(second)+`"}}}}`)
	ctx := context.Background()
	revisions := func() []unstructured.Unstructured {
		list, err := f.dyn.Resource(cellv1alpha1.TemplateRevisionsResource).Namespace("shop").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing template revisions: %v", err)
		}
		return list.Items
	}
	eventually(t, "the controller records the second template", func() (bool, string) {
		n := len(revisions())
		return n == 2, strings.Repeat("revision ", n)
	})
	out := alice.ok(t, append([]string{"rollout", "undo", "secret/db", "-n", "shop"}, asAlice...)...)
	if !strings.Contains(out, "template restored to revision 1") {
		t.Errorf("rollout undo as the app team printed %q", out)
	}
	obj, err := f.dyn.Resource(secretV2).Namespace("shop").Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "data", "password"); got != b64(first) {
		t.Errorf("after undo the FederatedSecret's password is %q, want the first one %q", got, b64(first))
	}

	t.Run("the database holds no secret value in clear", func(t *testing.T) {
		db := framework.OpenRawDatabase(t, f.plane.DataDir, "")
		for _, r := range framework.RawRows(t, db, "") {
			for _, c := range clear {
				if bytes.Contains(r.Value, []byte(c)) {
					t.Errorf("row %d (%s) of the database holds %q in clear", r.ID, r.Name, c)
				}
			}
		}
		latest := framework.LatestRawRows(framework.RawRows(t, db, "/registry/core.cellfed.io/templaterevisions/shop/"))
		if len(latest) == 0 {
			t.Fatal("no TemplateRevision rows in the database")
		}
		for name, r := range latest {
			if !r.Deleted && !bytes.HasPrefix(r.Value, []byte("k8s:enc:kms:v2:cellfed-kms:")) {
				t.Errorf("%s is stored without KMS encryption: %q", name, r.Value[:min(len(r.Value), 40)])
			}
		}
	})

	t.Run("a viewer reads digests, never the data", func(t *testing.T) {
		got := f.kubectl.MustRun(t, "", "--as=vera", "-n", "shop", "get", "templaterevisions", "-o", "json")
		for _, c := range clear {
			if strings.Contains(got, c) {
				t.Errorf("the viewer's kubectl get templaterevisions shows %q:\n%s", c, got)
			}
		}
		if !strings.Contains(got, "(redacted sha256:") {
			t.Errorf("the viewer's templaterevisions show no digest:\n%s", got)
		}
		for _, r := range revisions() {
			name := r.GetAnnotations()["rollout.cellfed.io/data-secret"]
			if name == "" {
				t.Errorf("revision %s names no data Secret", r.GetName())
				continue
			}
			if _, err := f.kubectl.Run(ctx, "", "--as=vera", "-n", "shop", "get", "secret", name); err == nil || !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("the viewer reading data Secret %s: %v, want forbidden", name, err)
			}
		}
		// Nor the FederatedSecret itself: reading it needs get on
		// Secrets, which a viewer lacks (RBAC alone would allow it).
		if out, err := f.kubectl.Run(ctx, "", "--as=vera", "-n", "shop", "get", "federatedsecrets", "-o", "json"); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("the viewer listing federatedsecrets: %v, want forbidden:\n%s", err, out)
		}
		if out, err := f.kubectl.Run(ctx, "", "--as=vera", "-n", "shop", "get", "federatedsecret", "db", "-o", "json"); err == nil || !strings.Contains(err.Error(), "needs get on secrets") {
			t.Errorf("the viewer reading federatedsecret db: %v, want forbidden naming get on secrets:\n%s", err, out)
		}
		hist, histErr, _ := alice.run(t, "rollout", "history", "secret/db", "-n", "shop", "--as=vera")
		hist += histErr
		for _, c := range clear {
			if strings.Contains(hist, c) {
				t.Errorf("the viewer's rollout history shows %q:\n%s", c, hist)
			}
		}
		if hist := alice.ok(t, "rollout", "history", "secret/db", "-n", "shop"); rowOf(hist, "3") == nil {
			t.Errorf("the app team's rollout history lacks revision 3 (the undone-to template):\n%s", hist)
		}
	})

	// The board's diff redacts Secret data for everyone (the app team
	// here); a viewer's board leaves FederatedSecrets off altogether.
	for _, tc := range []struct {
		user     string
		readable bool
	}{{"alice", true}, {"vera", false}} {
		t.Run("the board of "+tc.user+" shows which value changed, not what", func(t *testing.T) {
			board := startBoard(t, f.plane.Kubeconfig, "-n", "shop", "--as="+tc.user)
			jar, err := cookiejar.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Jar: jar}
			read := func(url string) (int, string) {
				resp, err := client.Get(url)
				if err != nil {
					t.Fatalf("GET %s: %v", url, err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			if code, body := read(board.url); code != http.StatusOK { // the launch link: sets the session cookie
				t.Fatalf("GET %s: %d %s", board.url, code, body)
			}
			code, page := read(board.origin() + "/w/shop/o/federatedsecrets/db")
			page = html.UnescapeString(page)
			for _, c := range clear {
				if strings.Contains(page, c) {
					t.Errorf("%s's object page shows %q", tc.user, c)
				}
			}
			switch {
			case tc.readable && code != http.StatusOK:
				t.Errorf("%s's object page: %d, want 200:\n%s", tc.user, code, page)
			case tc.readable && (!strings.Contains(page, "-    password: (redacted sha256:") || !strings.Contains(page, "+    password: (redacted sha256:")):
				t.Errorf("the object page's diff does not show the password's digests changing:\n%s", page)
			case !tc.readable && code == http.StatusOK:
				t.Errorf("%s's board serves federatedsecrets/db (200), want it left off the board:\n%s", tc.user, page)
			}
		})
	}
}
