package admission

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"

	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

// CRDPluginName is the in-process plugin that keeps federated CRDs in the
// plane's shape.
const CRDPluginName = "CellfedFederatedCRDs"

// CRDConversion is where the plane serves the federated types' conversion
// webhook; the plane sets it once it knows its address.
type CRDConversion struct {
	config atomic.Pointer[apiextensionsv1.WebhookClientConfig]
}

// Set publishes the webhook's client configuration.
func (c *CRDConversion) Set(cfg apiextensionsv1.WebhookClientConfig) { c.config.Store(&cfg) }

// RegisterCRDs adds the plugin that rewrites a federated CRD written in
// KubeFed's shape (`kubefedctl enable`: v1beta1 only, no conversion) into
// the plane's two-version shape before it is validated, so KubeFed's tools
// can enable a type, or re-enable one the plane serves, without dropping
// v1beta2 (which the API server would refuse: it is the stored version).
func RegisterCRDs(plugins *admission.Plugins, conversion *CRDConversion) {
	plugins.Register(CRDPluginName, func(io.Reader) (admission.Interface, error) {
		return &crdPlugin{Handler: admission.NewHandler(admission.Create, admission.Update), conversion: conversion}, nil
	})
}

type crdPlugin struct {
	*admission.Handler
	conversion *CRDConversion
}

var _ admission.MutationInterface = &crdPlugin{}

func (p *crdPlugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != apiextensions.Resource("customresourcedefinitions") || a.GetSubresource() != "" {
		return nil
	}
	crd, ok := a.GetObject().(*apiextensions.CustomResourceDefinition)
	if !ok {
		return nil
	}
	hook := p.conversion.config.Load()
	if hook == nil {
		return nil // not serving yet: nothing writes federated CRDs before
	}
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := apiextensionsapiserver.Scheme.Convert(crd, &v1, nil); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reading CustomResourceDefinition %s: %w", crd.Name, err))
	}
	out, ok := federatedtypes.FromKubeFed(&v1, hook)
	if !ok {
		return nil
	}
	var rebuilt apiextensions.CustomResourceDefinition
	if err := apiextensionsapiserver.Scheme.Convert(out, &rebuilt, nil); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("rebuilding CustomResourceDefinition %s: %w", crd.Name, err))
	}
	*crd = rebuilt
	return nil
}
