package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// tokenGetter lets the service-account authenticator validate tokens from
// informer caches. The plane has no pods or nodes, so tokens bound to them
// are always rejected as not found.
type tokenGetter struct {
	secrets         corelisters.SecretLister
	serviceAccounts corelisters.ServiceAccountLister
}

func newTokenGetter(f informers.SharedInformerFactory) serviceaccount.ServiceAccountTokenGetter {
	return tokenGetter{
		secrets:         f.Core().V1().Secrets().Lister(),
		serviceAccounts: f.Core().V1().ServiceAccounts().Lister(),
	}
}

func (g tokenGetter) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return g.serviceAccounts.ServiceAccounts(namespace).Get(name)
}

func (g tokenGetter) GetSecret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	return g.secrets.Secrets(namespace).Get(name)
}

func (tokenGetter) GetPod(_ context.Context, _, name string) (*corev1.Pod, error) {
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

func (tokenGetter) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}
