package board

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSecurity checks what guards every request before any handler
// talks to the plane: the session token and cookie, the Host check, the
// CSRF token and Origin on actions, and the security headers.
func TestSecurity(t *testing.T) {
	s, err := NewServer(context.Background(), Config{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	s.AllowHost("127.0.0.1:8765")
	h := s.Handler()
	cookie := &http.Cookie{Name: s.CookieName(), Value: s.session}
	for _, tc := range []struct {
		name     string
		method   string
		target   string
		host     string
		signedIn bool
		header   map[string]string
		want     int
		wantBody string
	}{
		{name: "no session", method: "GET", target: "/w/shop", want: http.StatusUnauthorized, wantBody: "open the address `cellfedctl board` printed"},
		{name: "a wrong token", method: "GET", target: "/w/shop?token=abc", want: http.StatusUnauthorized, wantBody: "token is not valid"},
		{name: "the launch token becomes a cookie", method: "GET", target: "/w/shop?token=" + s.Token(), want: http.StatusSeeOther},
		{name: "another host (DNS rebinding)", method: "GET", target: "/w/shop", host: "evil.example:8765", signedIn: true, want: http.StatusMisdirectedRequest},
		{name: "localhost spelling of the port", method: "GET", target: "/static/board.css", host: "localhost:8765", want: http.StatusOK},
		{name: "static assets need no session", method: "GET", target: "/static/board.js", want: http.StatusOK},
		{name: "an action without CSRF token", method: "POST", target: "/registrations/edge-1/approve", signedIn: true, want: http.StatusForbidden, wantBody: "CSRF"},
		{name: "an action with a wrong CSRF token", method: "POST", target: "/registrations/edge-1/approve", signedIn: true,
			header: map[string]string{"X-CSRF-Token": "nope"}, want: http.StatusForbidden, wantBody: "CSRF"},
		{name: "an action from another origin", method: "POST", target: "/registrations/edge-1/approve", signedIn: true,
			header: map[string]string{"X-CSRF-Token": s.csrf, "Origin": "http://evil.example"}, want: http.StatusForbidden, wantBody: "cross-origin"},
		{name: "a same-origin action passes the guards", method: "POST", target: "/registrations/edge-1/revoke", signedIn: true,
			header: map[string]string{"X-CSRF-Token": s.csrf, "Origin": "http://127.0.0.1:8765"}, want: http.StatusBadRequest, wantBody: "approve or deny"},
		{name: "an action needs a session", method: "POST", target: "/registrations/edge-1/approve",
			header: map[string]string{"X-CSRF-Token": s.csrf}, want: http.StatusUnauthorized},
		{name: "GET does not act", method: "GET", target: "/registrations/edge-1/approve", signedIn: true, want: http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			r.Host = "127.0.0.1:8765"
			if tc.host != "" {
				r.Host = tc.host
			}
			if tc.signedIn {
				r.AddCookie(cookie)
			}
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body.String())
			}
			if !strings.Contains(w.Body.String(), tc.wantBody) {
				t.Errorf("body %q lacks %q", w.Body.String(), tc.wantBody)
			}
			csp := w.Header().Get("Content-Security-Policy")
			if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
				t.Errorf("Content-Security-Policy = %q", csp)
			}
			if w.Header().Get("X-Frame-Options") != "DENY" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers %v", w.Header())
			}
			if tc.want == http.StatusSeeOther {
				set := w.Header().Get("Set-Cookie")
				if !strings.Contains(set, s.CookieName()+"="+s.session) || !strings.Contains(set, "HttpOnly") || !strings.Contains(set, "SameSite=Strict") {
					t.Errorf("Set-Cookie = %q", set)
				}
				if loc := w.Header().Get("Location"); loc != "/w/shop" {
					t.Errorf("redirected to %q, want /w/shop (the token out of the address)", loc)
				}
			}
		})
	}
}
