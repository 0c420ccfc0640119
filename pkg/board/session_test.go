package board

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
)

// boardHTTP is a board served over real HTTP on a loopback port.
type boardHTTP struct {
	srv *Server
	url string
}

func startBoardHTTP(t *testing.T) boardHTTP {
	t.Helper()
	s, err := NewServer(context.Background(), Config{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return boardHTTP{srv: s, url: hs.URL}
}

// noRedirects is a client with jar that stops at the first answer.
func noRedirects(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, url string) (reply, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{StatusCode: resp.StatusCode, Header: resp.Header, cookies: resp.Cookies()}, string(b)
}

// reply is what a test reads of a response whose body get has read.
type reply struct {
	StatusCode int
	Header     http.Header
	cookies    []*http.Cookie
}

func (r reply) Cookies() []*http.Cookie { return r.cookies }

// TestLaunchToken checks the launch link over real HTTP: its token works
// once, gives a session cookie of another value with the board's own
// name (HttpOnly, SameSite=Strict, Path=/), and is refused afterwards.
func TestLaunchToken(t *testing.T) {
	b := startBoardHTTP(t)
	launch := b.url + "/w/shop?token=" + b.srv.Token()

	resp, body := get(t, noRedirects(nil), launch)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first use of the launch link: status %d, want 303: %s", resp.StatusCode, body)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("first use of the launch link set %d cookies, want 1: %v", len(cookies), resp.Header["Set-Cookie"])
	}
	c := cookies[0]
	for _, check := range []struct {
		name string
		ok   bool
	}{
		{"the value is not the launch token", c.Value != "" && c.Value != b.srv.Token() && !strings.Contains(c.Value, b.srv.Token())},
		{"HttpOnly", c.HttpOnly},
		{"SameSite=Strict", c.SameSite == http.SameSiteStrictMode},
		{"Path=/", c.Path == "/"},
		{"named after the prefix", strings.HasPrefix(c.Name, CookiePrefix) && len(c.Name) > len(CookiePrefix)},
	} {
		if !check.ok {
			t.Errorf("session cookie %q: %s does not hold (Set-Cookie %q)", c.Name, check.name, resp.Header.Get("Set-Cookie"))
		}
	}

	// The cookie signs in; the launch token alone no longer does.
	signedIn := noRedirects(nil)
	req, _ := http.NewRequest("GET", b.url+"/registrations/x/approve", nil)
	req.AddCookie(c)
	r2, err := signedIn.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("a request with the session cookie: status %d, want 405 (past the session check)", r2.StatusCode)
	}
	resp, body = get(t, noRedirects(nil), launch)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "used already") {
		t.Errorf("second use of the launch link from another browser: status %d %q, want 401 saying it was used already", resp.StatusCode, body)
	}
	if len(resp.Cookies()) != 0 {
		t.Errorf("second use of the launch link set cookies %v", resp.Header["Set-Cookie"])
	}
	// A cookie holding the launch token is no session.
	req, _ = http.NewRequest("GET", b.url+"/w/shop", nil)
	req.AddCookie(&http.Cookie{Name: c.Name, Value: b.srv.Token()})
	r3, err := noRedirects(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r3.Body.Close()
	if r3.StatusCode != http.StatusUnauthorized {
		t.Errorf("a cookie holding the launch token: status %d, want 401", r3.StatusCode)
	}
}

// TestTwoBoardsOneBrowser signs one browser (one cookie jar, which like a
// browser keeps cookies per host, not per port) in to two boards on two
// ports of 127.0.0.1: their cookie names differ and signing in to the
// second keeps the first signed in.
func TestTwoBoardsOneBrowser(t *testing.T) {
	first, second := startBoardHTTP(t), startBoardHTTP(t)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := noRedirects(jar)
	names := map[string]bool{}
	for _, b := range []boardHTTP{first, second} {
		resp, body := get(t, browser, b.url+"/w/shop?token="+b.srv.Token())
		if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
			t.Fatalf("signing in to %s: status %d, cookies %v: %s", b.url, resp.StatusCode, resp.Header["Set-Cookie"], body)
		}
		names[resp.Cookies()[0].Name] = true
	}
	if len(names) != 2 {
		t.Errorf("the two boards' session cookies are both named %v, want two names", names)
	}
	for _, b := range []boardHTTP{first, second} {
		// Past the session check, a GET of an action answers 405.
		resp, body := get(t, browser, b.url+"/registrations/x/approve")
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s after signing in to both boards: status %d, want 405 (signed in): %s", b.url, resp.StatusCode, body)
		}
	}
}
