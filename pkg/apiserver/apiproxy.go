package apiserver

import (
	"context"
	"fmt"
	"net"
	"strconv"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/cellproxy"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/proxy"
)

// apiProxyHook starts the API proxy's caches and its tunnel dialer (the
// same gRPC frontend of the hub cellfed-controller uses, with the plane's
// admin certificate).
type apiProxyHook struct {
	handler      *cellproxy.Handler
	opts         cellproxy.Options
	fedNamespace string
	files        pki.Files
	hub          *proxy.Hub
}

func (h apiProxyHook) start(hookCtx genericapiserver.PostStartHookContext) error {
	cfg := rest.CopyConfig(hookCtx.LoopbackClientConfig)
	cfg.UserAgent = "cellfed-apiserver/api-proxy"
	plane, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("API proxy: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("API proxy: %w", err)
	}
	var tunnel cellproxy.TunnelDialer
	if h.hub != nil {
		if addr, ok := h.hub.GRPCAddr().(*net.TCPAddr); ok && addr != nil {
			o := proxy.NewDialerOptions()
			host := addr.IP.String()
			if addr.IP.IsUnspecified() {
				host = "127.0.0.1"
			}
			o.Address = net.JoinHostPort(host, strconv.Itoa(addr.Port))
			o.CAFile, o.CertFile, o.KeyFile = h.files.CACert(), h.files.AdminCert(), h.files.AdminKey()
			d, err := proxy.NewDialer(o)
			if err != nil {
				return fmt.Errorf("API proxy: %w", err)
			}
			go func() {
				<-hookCtx.Done()
				_ = d.Close()
			}()
			tunnel = d
		}
	}
	secrets := func(ctx context.Context, name string) (map[string][]byte, error) {
		s, err := kube.CoreV1().Secrets(h.fedNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	}
	inf := cellproxy.NewInformers(plane, h.fedNamespace)
	members := cellproxy.NewMembers(h.opts, tunnel, secrets)
	// Member RBAC follows the plane's grants and cells.
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	if err := inf.OnChange(poke); err != nil {
		return err
	}
	rbac := informers.NewSharedInformerFactory(kube, 0)
	rbs := rbac.Rbac().V1().RoleBindings()
	if _, err := rbs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() },
	}); err != nil {
		return fmt.Errorf("API proxy: %w", err)
	}
	go func() {
		if err := inf.Run(hookCtx); err != nil {
			klog.ErrorS(err, "API proxy not started")
			return
		}
		h.handler.Start(inf, members)
		klog.InfoS("API proxy serving", "prefix", cellproxy.Prefix, "tunnel", tunnel != nil)
		if !h.opts.MemberRBAC {
			return
		}
		rbac.Start(hookCtx.Done())
		if !cache.WaitForCacheSync(hookCtx.Done(), rbs.Informer().HasSynced) {
			return
		}
		bindings := func() []*rbacv1.RoleBinding {
			list, err := rbs.Lister().List(labels.Everything())
			if err != nil {
				klog.ErrorS(err, "Listing RoleBindings")
			}
			return list
		}
		cellproxy.RunMemberRBAC(hookCtx, members, inf, bindings, trigger, h.opts.MemberRBACResync)
	}()
	return nil
}
