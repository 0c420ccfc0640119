// Member clusters as the plane knows them: what join stored for a
// KubeFedCluster and its conditions.

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	"github.com/cellfed/cellfed/test/framework"
)

// joinedCluster reads what join stored in the plane: the KubeFedCluster's
// endpoint, CA bundle and secret name, and the token.
type joinedCluster struct {
	endpoint, secret, token string
	caBundle                []byte
	resourceVersion         string
	secretResourceVersion   string
}

func readJoined(t *testing.T, dyn dynamic.Interface, kube kubernetes.Interface, name string) joinedCluster {
	t.Helper()
	ctx := context.Background()
	u, err := dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("KubeFedCluster %s: %v", name, err)
	}
	var j joinedCluster
	j.endpoint, _, _ = unstructured.NestedString(u.Object, "spec", "apiEndpoint")
	j.secret, _, _ = unstructured.NestedString(u.Object, "spec", "secretRef", "name")
	ca, _, _ := unstructured.NestedString(u.Object, "spec", "caBundle")
	j.resourceVersion = u.GetResourceVersion()
	if j.caBundle, err = base64.StdEncoding.DecodeString(ca); err != nil {
		t.Fatalf("caBundle of %s is not base64: %v", name, err)
	}
	s, err := kube.CoreV1().Secrets(framework.KubeFedNamespace).Get(ctx, j.secret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Secret %s of KubeFedCluster %s: %v", j.secret, name, err)
	}
	j.token, j.secretResourceVersion = string(s.Data["token"]), s.ResourceVersion
	return j
}

// asPlane is a client of the member made only of what the plane stores:
// endpoint, CA bundle and token.
func (j joinedCluster) asPlane(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: j.endpoint, BearerToken: j.token, TLSClientConfig: rest.TLSClientConfig{CAData: j.caBundle}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkWorks proves endpoint, CA and token: the plane's credentials list
// and create configmaps in the member.
func (j joinedCluster) checkWorks(t *testing.T, cmName string) {
	t.Helper()
	c := j.asPlane(t)
	err := framework.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		if _, err := c.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
			return false, err
		}
		_, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName}}, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), err
	})
	if err != nil {
		t.Fatalf("the stored endpoint %s, CA and token do not work in the member: %v", j.endpoint, err)
	}
}

// clusterCondition is the status of a KubeFedCluster's condition.
func clusterCondition(ctx context.Context, dyn dynamic.Interface, name, condType string) (string, error) {
	c, err := dyn.Resource(kubefed.KubeFedClustersResource).Namespace(framework.KubeFedNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
	for _, cond := range conds {
		if m, ok := cond.(map[string]any); ok && m["type"] == condType {
			return fmt.Sprint(m["status"]), nil
		}
	}
	return "", nil
}
