package cellproxy

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fedv1b1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	"github.com/cellfed/cellfed/pkg/federatedtypes"
	"github.com/cellfed/cellfed/pkg/memberaccess"
	"github.com/cellfed/cellfed/pkg/proxy"
)

// AnnotationMemberNamespace on a KubeFedCluster names the namespace of the
// plane's ServiceAccounts in the member (cellfedctl join records it); the
// proxy's identity lives there too.
const AnnotationMemberNamespace = "cellfed.io/member-namespace"

// Options tune member connections.
type Options struct {
	// DialTimeout bounds connecting to a member (directly or through the
	// tunnel hub); past it the caller gets 503 naming the cluster.
	DialTimeout time.Duration
	// TokenTTL is the lifetime asked for the proxy identity's tokens; they
	// are renewed at two thirds of it.
	TokenTTL time.Duration
	// MemberRBAC keeps tenants' roles bound on the members in the
	// namespaces their cells place there; MemberRBACResync is how often
	// it checks without a change.
	MemberRBAC       bool
	MemberRBACResync time.Duration
	// MaxWatchesPerUser bounds the watches one user holds open through
	// the proxy (0: no bound); the next one is refused with 429.
	MaxWatchesPerUser int
}

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{DialTimeout: 10 * time.Second, TokenTTL: time.Hour, MemberRBAC: true, MemberRBACResync: time.Minute,
		MaxWatchesPerUser: DefaultMaxWatchesPerUser}
}

// TunnelDialer opens connections to tunnelled members (proxy.Dialer).
type TunnelDialer interface {
	DialCluster(ctx context.Context, cluster string) (net.Conn, error)
}

// SecretReader reads the Secret a KubeFedCluster names (the controller's
// member token, used only to set up the proxy's own identity).
type SecretReader func(ctx context.Context, name string) (map[string][]byte, error)

// Members keeps one connection setup per member cluster: its address,
// TLS, dialer and the proxy identity's token.
type Members struct {
	opts    Options
	tunnel  TunnelDialer // nil: no tunnel hub
	secrets SecretReader

	mu sync.Mutex
	m  map[string]*member
}

// NewMembers returns an empty set of member connections.
func NewMembers(opts Options, tunnel TunnelDialer, secrets SecretReader) *Members {
	return &Members{opts: opts, tunnel: tunnel, secrets: secrets, m: map[string]*member{}}
}

// UnreachableError is a member that could not be reached: the caller
// gets 503 with this message.
type UnreachableError struct {
	Cluster string
	Tunnel  bool
	Err     error
}

func (e *UnreachableError) Error() string {
	how := "directly"
	if e.Tunnel {
		how = "through its tunnel"
	}
	return fmt.Sprintf("cluster %s is unreachable %s: %v", e.Cluster, how, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

type member struct {
	cluster string
	key     string
	// src is the KubeFedCluster last seen with this access (the
	// informer's object: a change replaces it).
	src       *fedv1b1.KubeFedCluster
	base      *url.URL
	tunnel    bool
	transport *http.Transport
	// pingTimeout is how long the HTTP/2 health check waits for a ping.
	pingTimeout time.Duration
	restCfg     *rest.Config // without credentials
	namespace   string       // member namespace of the proxy's ServiceAccount
	secret      string

	mu     sync.Mutex
	token  string
	renew  time.Time
	expiry time.Time

	// admin is the client with the cluster's own access, for the token
	// adminToken (adminClient).
	adminMu    sync.Mutex
	admin      kubernetes.Interface
	adminHTTP  *http.Client
	adminToken string
}

func accessKey(c *fedv1b1.KubeFedCluster) string {
	h := sha256.New()
	for _, s := range []string{c.Spec.APIEndpoint, string(c.Spec.CABundle), c.Spec.ProxyURL, c.Spec.SecretRef.Name, c.Annotations[AnnotationMemberNamespace]} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	for _, v := range c.Spec.DisabledTLSValidations {
		fmt.Fprintf(h, "%s;", v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// get returns the member connection for c, built anew when c's access
// changed.
func (ms *Members) get(c *fedv1b1.KubeFedCluster) (*member, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m := ms.m[c.Name]
	if m != nil && m.src == c {
		return m, nil // the same cached object: its access has not changed
	}
	key := accessKey(c)
	if m != nil && m.key == key {
		m.src = c
		return m, nil
	}
	built, err := ms.build(c, key)
	if err != nil {
		return nil, err
	}
	if m != nil {
		m.transport.CloseIdleConnections()
		m.adminMu.Lock()
		if m.adminHTTP != nil {
			m.adminHTTP.CloseIdleConnections()
		}
		m.adminMu.Unlock()
	}
	built.src = c
	ms.m[c.Name] = built
	return built, nil
}

func (ms *Members) build(c *fedv1b1.KubeFedCluster, key string) (*member, error) {
	endpoint := c.Spec.APIEndpoint
	if endpoint != "" && !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	base, err := url.Parse(strings.TrimSuffix(endpoint, "/"))
	if err != nil || base.Host == "" || base.Scheme != "https" {
		return nil, fmt.Errorf("cluster %s: spec.apiEndpoint %q is not an https URL", c.Name, c.Spec.APIEndpoint)
	}
	if len(c.Spec.DisabledTLSValidations) > 0 {
		return nil, fmt.Errorf("cluster %s disables TLS validation (spec.disabledTLSValidations); the API proxy only reaches members whose certificate it verifies: set spec.caBundle instead", c.Name)
	}
	var roots *x509.CertPool
	if len(c.Spec.CABundle) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(c.Spec.CABundle) {
			return nil, fmt.Errorf("cluster %s: spec.caBundle holds no PEM certificate", c.Name)
		}
	}
	m := &member{cluster: c.Name, key: key, base: base, secret: c.Spec.SecretRef.Name,
		namespace: c.Annotations[AnnotationMemberNamespace]}
	if m.namespace == "" {
		m.namespace = federatedtypes.DefaultNamespace
	}
	var dial func(ctx context.Context, network, address string) (net.Conn, error)
	if tunnelCluster, ok := proxy.ClusterFromProxyURL(c.Spec.ProxyURL); ok {
		if ms.tunnel == nil {
			return nil, fmt.Errorf("cluster %s is tunnelled, but this plane runs no tunnel gRPC frontend; start it with --tunnel-grpc-port", c.Name)
		}
		m.tunnel = true
		dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return ms.tunnel.DialCluster(ctx, tunnelCluster)
		}
	} else if c.Spec.ProxyURL != "" {
		return nil, fmt.Errorf("cluster %s is reached through the HTTP proxy %s, which the API proxy does not use", c.Name, c.Spec.ProxyURL)
	} else {
		var d net.Dialer
		dial = d.DialContext
	}
	timeout := ms.opts.DialTimeout
	timedDial := func(ctx context.Context, network, address string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		conn, err := dial(ctx, network, address)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("no connection within %v (the member, or its tunnel's agent, does not answer)", timeout)
			}
			return nil, &UnreachableError{Cluster: c.Name, Tunnel: m.tunnel, Err: err}
		}
		return conn, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: base.Hostname()}
	// One HTTP/2 connection per member carries all requests. A link that
	// goes silent (no FIN, no RST: a dropped route, a stopped agent) would
	// hold them until TCP gives up; a ping after half the dial timeout
	// without a frame, answered within the other half, closes it sooner,
	// so callers get 503 within the dial timeout.
	readIdle, ping := HealthCheck(timeout)
	m.pingTimeout = ping
	m.transport = utilnet.SetOldTransportDefaults(&http.Transport{
		DialContext:         timedDial,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: timeout,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		Proxy:               func(*http.Request) (*url.URL, error) { return nil, nil },
		ForceAttemptHTTP2:   true,
		HTTP2:               &http.HTTP2Config{SendPingTimeout: readIdle, PingTimeout: ping},
	})
	m.restCfg = &rest.Config{Host: base.String(), Timeout: 30 * time.Second, UserAgent: "cellfed-apiserver/api-proxy",
		TLSClientConfig: rest.TLSClientConfig{CAData: c.Spec.CABundle, ServerName: base.Hostname()}, Dial: timedDial}
	return m, nil
}

// HealthCheck splits the dial timeout into the HTTP/2 connection's read
// idle timeout (a ping is sent after it passes without a frame) and its
// ping timeout (the connection is closed when the ping is not answered).
func HealthCheck(dialTimeout time.Duration) (readIdle, ping time.Duration) {
	readIdle = dialTimeout / 2
	return readIdle, dialTimeout - readIdle
}

// tokenFor returns a token of the proxy's identity in m's member, setting
// the identity up on first use: a ServiceAccount with ProxyRules only,
// created with the controller's member token, which never carries a
// proxied request.
func (ms *Members) tokenFor(ctx context.Context, m *member) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if m.token != "" && now.Before(m.renew) {
		return m.token, nil
	}
	token, expiry, err := ms.setUp(ctx, m)
	if err != nil {
		if m.token != "" && now.Before(m.expiry) {
			klog.ErrorS(err, "Renewing the API proxy's member token; using the current one", "cluster", m.cluster)
			return m.token, nil
		}
		return "", err
	}
	m.token, m.expiry = token, expiry
	m.renew = now.Add(time.Until(expiry) * 2 / 3)
	return token, nil
}

func (ms *Members) setUp(ctx context.Context, m *member) (string, time.Time, error) {
	admin, err := ms.adminClient(ctx, m)
	if err != nil {
		return "", time.Time{}, err
	}
	g := memberaccess.Grant{
		Namespace: m.namespace, ServiceAccount: ServiceAccount, Rules: ProxyRules,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "cellfed-apiserver", "app.kubernetes.io/component": "api-proxy"},
		Where:  " in cluster " + m.cluster,
	}
	wrap := func(err error, doing string) error {
		return fmt.Errorf("setting up the API proxy's identity: %s: %w", doing, err)
	}
	created, updated, err := memberaccess.Ensure(ctx, admin, g, func(string, func(context.Context) error) {}, wrap)
	if err != nil {
		return "", time.Time{}, unreachable(err)
	}
	token, expiry, err := memberaccess.MintToken(ctx, admin, m.namespace, ServiceAccount, ms.opts.TokenTTL)
	if err != nil {
		return "", time.Time{}, unreachable(fmt.Errorf("token for %s/%s: %w", m.namespace, ServiceAccount, err))
	}
	if created+updated > 0 {
		if err := waitMayImpersonate(ctx, m, token); err != nil {
			return "", time.Time{}, err
		}
	}
	klog.InfoS("API proxy identity ready", "cluster", m.cluster, "serviceAccount", m.namespace+"/"+ServiceAccount, "expires", expiry)
	return token, expiry, nil
}

// unreachable marks connection failures as such (503), keeping others.
func unreachable(err error) error {
	var u *UnreachableError
	if errors.As(err, &u) {
		return u
	}
	return err
}

// waitMayImpersonate waits until the member's RBAC cache lets the new
// identity impersonate.
func waitMayImpersonate(ctx context.Context, m *member, token string) error {
	cfg := rest.CopyConfig(m.restCfg)
	cfg.BearerToken = token
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("cluster %s: %w", m.cluster, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users"}},
		}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("cluster %s: the API proxy's ServiceAccount %s/%s may not impersonate yet: %w", m.cluster, m.namespace, ServiceAccount, err)
	}
	return nil
}
