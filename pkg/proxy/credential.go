package proxy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// secretSize is the length of the CONNECT secret in bytes.
const secretSize = 32

// LoadOrCreateSecret reads the CONNECT frontend's secret from path,
// creating it (mode 0600) when the file does not exist.
func LoadOrCreateSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if len(b) < secretSize {
			return nil, fmt.Errorf("tunnel CONNECT secret %s is shorter than %d bytes; delete it to create a new one (every tunnelled cluster's proxyURL must then be rewritten)", path, secretSize)
		}
		return b, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("reading tunnel CONNECT secret: %w", err)
	}
	b = make([]byte, secretSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generating tunnel CONNECT secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating directory for tunnel CONNECT secret: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // created concurrently
			return LoadOrCreateSecret(path)
		}
		return nil, fmt.Errorf("creating tunnel CONNECT secret: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing tunnel CONNECT secret: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("writing tunnel CONNECT secret: %w", err)
	}
	return b, nil
}

// ConnectCredential is cluster's password on the CONNECT frontend at a
// credential generation: an HMAC-SHA256 of the cluster name (and, from
// generation 1 on, the generation) under the hub secret. The hub stores
// nothing per cluster, a credential opens only its own cluster, and
// raising one cluster's generation (its ClusterRegistration's
// spec.proxyCredentialGeneration) revokes that cluster's credential alone.
// Generation 0 is the credential of clusters that never rotated.
func ConnectCredential(secret []byte, cluster string, generation int64) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("cellfed-tunnel-connect\x00"))
	m.Write([]byte(cluster))
	if generation != 0 {
		m.Write([]byte("\x00" + strconv.FormatInt(generation, 10)))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkConnectCredential compares in constant time.
func checkConnectCredential(secret []byte, cluster string, generation int64, password string) bool {
	want := ConnectCredential(secret, cluster, generation)
	return subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1
}

// staleConnectCredential reports whether password is cluster's credential
// of one of the (at most 64) generations before current: a rotated
// credential, worth logging.
func staleConnectCredential(secret []byte, cluster string, current int64, password string) bool {
	for g := current - 1; g >= 0 && g >= current-64; g-- {
		if checkConnectCredential(secret, cluster, g, password) {
			return true
		}
	}
	return false
}

// ConnectProxyURL is the spec.proxyURL of a tunnelled cluster: the CONNECT
// frontend at hostPort (https unless plainHTTP), with the cluster as the
// proxy user and its credential of generation as the password.
func ConnectProxyURL(secret []byte, hostPort, cluster string, generation int64, plainHTTP bool) string {
	scheme := "https"
	if plainHTTP {
		scheme = "http"
	}
	u := url.URL{Scheme: scheme, User: url.UserPassword(cluster, ConnectCredential(secret, cluster, generation)), Host: hostPort}
	return u.String()
}

// ClusterFromProxyURL returns the cluster a tunnelled cluster's proxy URL
// names (its proxy user), or false when the URL has no user.
func ClusterFromProxyURL(proxyURL string) (string, bool) {
	u, err := url.Parse(proxyURL)
	if err != nil || u.User == nil || u.User.Username() == "" {
		return "", false
	}
	return u.User.Username(), true
}

// parseProxyAuthorization decodes a Basic Proxy-Authorization header.
func parseProxyAuthorization(h string) (user, password string, ok bool) {
	scheme, rest, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
	if err != nil {
		return "", "", false
	}
	user, password, ok = strings.Cut(string(raw), ":")
	if !ok || user == "" {
		return "", "", false
	}
	// Go's http.Transport sends the URL's user info unescaped.
	return user, password, true
}
