package apiserver

import (
	"context"
	"fmt"
	"net"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
	go func() {
		if err := inf.Run(hookCtx); err != nil {
			klog.ErrorS(err, "API proxy not started")
			return
		}
		h.handler.Start(inf, members)
		klog.InfoS("API proxy serving", "prefix", cellproxy.Prefix, "tunnel", tunnel != nil)
	}()
	return nil
}
