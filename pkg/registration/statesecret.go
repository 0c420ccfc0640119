package registration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// Keys of the state Secret, and its annotation for State.Since.
const (
	SecretKeyCert       = corev1.TLSCertKey
	SecretKeyKey        = corev1.TLSPrivateKeyKey
	SecretKeyPendingKey = "pending.key"
	// AnnotationCertificateSince is when the agent received the
	// certificate in the state Secret (RFC 3339).
	AnnotationCertificateSince = "cellfed.io/agent-certificate-since"
)

// inClusterNamespaceFile names the namespace of a pod's ServiceAccount.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ParseStateSecret splits --state-secret=[<namespace>/]<name>; without a
// namespace it is defaultNS (the pod's), which must then be known.
func ParseStateSecret(flag, defaultNS string) (namespace, name string, err error) {
	ns, name, ok := strings.Cut(flag, "/")
	if !ok {
		ns, name = defaultNS, flag
	}
	switch {
	case !cellv1alpha1.IsDNSLabel(name) && !isDNSSubdomain(name):
		return "", "", fmt.Errorf("--state-secret=%q: %q is not a Secret name", flag, name)
	case ns == "":
		return "", "", fmt.Errorf("--state-secret=%q names no namespace and the agent does not run in a pod (no $POD_NAMESPACE, no %s): pass <namespace>/<name>", flag, inClusterNamespaceFile)
	case !cellv1alpha1.IsDNSLabel(ns):
		return "", "", fmt.Errorf("--state-secret=%q: %q is not a namespace name", flag, ns)
	}
	return ns, name, nil
}

func isDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !cellv1alpha1.IsDNSLabel(l) {
			return false
		}
	}
	return true
}

// podNamespace is the namespace the agent runs in: $POD_NAMESPACE (the
// downward API), else its ServiceAccount's, else "".
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile(inClusterNamespaceFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// secretStore keeps the State in a Secret of the member; every write is
// guarded by the resourceVersion last read, so a newer certificate
// stored by another agent (two pods during a rollout) is never lost.
type secretStore struct {
	client          kubernetes.Interface
	namespace, name string
	cluster         string
	// resourceVersion of the Secret as last read or written; "" when it
	// did not exist.
	resourceVersion string
}

// NewSecretStore returns a Store in Secret namespace/name of the cluster
// client reaches; labels name the cluster it is for.
func NewSecretStore(client kubernetes.Interface, namespace, name, cluster string) Store {
	return &secretStore{client: client, namespace: namespace, name: name, cluster: cluster}
}

func (s *secretStore) String() string { return "--state-secret " + s.namespace + "/" + s.name }

func (s *secretStore) Load(ctx context.Context) (State, error) {
	sec, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s.resourceVersion = ""
		return State{}, nil
	case err != nil:
		return State{}, s.wrap(err, "reading")
	}
	s.resourceVersion = sec.ResourceVersion
	return stateFromSecret(sec), nil
}

func stateFromSecret(sec *corev1.Secret) State {
	st := State{Cert: sec.Data[SecretKeyCert], Key: sec.Data[SecretKeyKey], PendingKey: sec.Data[SecretKeyPendingKey]}
	if t, err := time.Parse(time.RFC3339, sec.Annotations[AnnotationCertificateSince]); err == nil {
		st.Since = t
	}
	return st
}

// Save creates or updates the Secret at the resourceVersion last seen;
// on a conflict it reads it again, merges (MergeState) and retries.
func (s *secretStore) Save(ctx context.Context, want State) (State, error) {
	secrets := s.client.CoreV1().Secrets(s.namespace)
	for attempt := 0; ; attempt++ {
		sec := s.secretFor(want)
		var got *corev1.Secret
		var err error
		if s.resourceVersion == "" {
			got, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
		} else {
			sec.ResourceVersion = s.resourceVersion
			got, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		}
		switch {
		case err == nil:
			s.resourceVersion = got.ResourceVersion
			return want, nil
		case (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 5:
			stored, lerr := s.Load(ctx)
			if lerr != nil {
				return State{}, lerr
			}
			merged := MergeState(stored, want)
			klog.InfoS("The agent's state Secret changed since it was read (another agent of this cluster?); merged", "secret", s.namespace+"/"+s.name,
				"keptStoredCertificate", string(merged.Cert) != string(want.Cert))
			want = merged
		case s.resourceVersion == "":
			return State{}, s.wrap(err, "creating")
		default:
			return State{}, s.wrap(err, "updating")
		}
	}
}

func (s *secretStore) secretFor(st State) *corev1.Secret {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "cellfed-agent", "cellfed.io/registered-cluster": s.cluster}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{},
	}
	for k, v := range map[string][]byte{SecretKeyCert: st.Cert, SecretKeyKey: st.Key, SecretKeyPendingKey: st.PendingKey} {
		if v != nil {
			sec.Data[k] = v
		}
	}
	if st.Cert != nil && !st.Since.IsZero() {
		sec.Annotations = map[string]string{AnnotationCertificateSince: st.Since.UTC().Format(time.RFC3339)}
	}
	return sec
}

// wrap says which right the agent's identity lacks when it is refused.
func (s *secretStore) wrap(err error, doing string) error {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return fmt.Errorf("%s the agent's state Secret %s/%s: %w; the agent's identity needs get, create and update on it (manifests/agent/rbac.yaml grants them)", doing, s.namespace, s.name, err)
	}
	return fmt.Errorf("%s the agent's state Secret %s/%s: %w", doing, s.namespace, s.name, err)
}

var errNoStore = errors.New("pass --state-dir or --state-secret: where the agent keeps its key and certificate")
