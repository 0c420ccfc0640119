package storage

import (
	"strings"
	"testing"
)

func TestRedactKineMessage(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "failed txn carries a secret",
			in:   `error in txn compare:<key:"/registry/secrets/default/db" > success:<request_put:<key:"/registry/secrets/default/db" value:"password: hunter2" > >: database is locked`,
			want: "error in txn (request redacted): database is locked",
		},
		{
			name: "failed put",
			in:   `error in put key:"/registry/secrets/a/b" value:"token" : invalid connection`,
			want: "error in put (request redacted): invalid connection",
		},
		{
			name: "other messages pass unchanged",
			in:   "Kine available at unix:///tmp/kine.sock",
			want: "Kine available at unix:///tmp/kine.sock",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redactKineMessage(tt.in)
			if got != tt.want {
				t.Errorf("redactKineMessage() = %q, want %q", got, tt.want)
			}
			for _, secret := range []string{"hunter2", "token"} {
				if strings.Contains(tt.in, "error in") && strings.Contains(got, secret) {
					t.Errorf("redacted message still contains %q", secret)
				}
			}
		})
	}
}
