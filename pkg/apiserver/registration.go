package apiserver

import (
	"fmt"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	registrationcontroller "github.com/cellfed/cellfed/pkg/controller/registration"
	"github.com/cellfed/cellfed/pkg/pki"
)

// registrationHook runs the registration controller in the plane: it
// needs the agent CA's key, which only the plane's data dir holds.
type registrationHook struct {
	opts   registrationcontroller.Options
	files  pki.Files
	tunnel registrationcontroller.Tunnel
	access registrationcontroller.Access
	// started receives the controller once it runs (the hub asks it
	// whether a cluster's registration is revoked).
	started func(*registrationcontroller.Controller)
	// leaderElect runs the controller's workers only while holding the
	// kube-system/cellfed-registrations Lease; its caches (the hub's
	// admission) run in every replica.
	leaderElect bool
}

const registrationsLease = "cellfed-registrations"

func (h registrationHook) start(hookCtx genericapiserver.PostStartHookContext) error {
	cfg := rest.CopyConfig(hookCtx.LoopbackClientConfig)
	cfg.UserAgent = "cellfed-registrations"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("registration controller: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("registration controller: %w", err)
	}
	c, err := registrationcontroller.New(h.opts, kube, dyn, h.files, h.tunnel, h.access)
	if err != nil {
		return err
	}
	if h.started != nil {
		h.started(c)
	}
	ctx := hookCtx.Context
	c.StartInformers(ctx)
	if !h.leaderElect {
		go func() {
			c.RunWorkers(ctx)
			klog.InfoS("Registration controller stopped")
		}()
		return nil
	}
	return runLeaderElected(ctx, kube, registrationsLease, c.RunWorkers)
}
