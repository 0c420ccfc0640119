// Command member-apiserver is a real kube-apiserver (k8s.io/kubernetes'
// own cmd/kube-apiserver/app) on kine with a SQLite file, used by tests as
// a member cluster. It generates its certificates, service-account key and
// admin kubeconfig in --data-dir on first start; all other flags go to
// kube-apiserver unchanged.
//
// --token-controller also runs Kubernetes' own service-account token
// controller (kube-controller-manager's "serviceaccount-token") in the
// process: it fills Secrets of type kubernetes.io/service-account-token
// with a token signed by the member's service-account key, the member's CA
// and namespace, as a real cluster does. `kubefedctl join` (KubeFed
// v0.10.0) creates such a Secret in the joining cluster and waits for it.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/storage"
	_ "github.com/cellfed/cellfed/pkg/version" // a version kubectl parses, also without the Makefile's -ldflags
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "member-apiserver: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	// Our flags are taken out; everything else goes to kube-apiserver.
	var dataDir string
	var port int
	var tokenController bool
	var rest []string
	for _, a := range os.Args[1:] {
		switch {
		case a == "--token-controller" || a == "--token-controller=true":
			tokenController = true
		case a == "--token-controller=false":
		case strings.HasPrefix(a, "--data-dir="):
			dataDir = strings.TrimPrefix(a, "--data-dir=")
		case strings.HasPrefix(a, "--secure-port="):
			p, err := strconv.Atoi(strings.TrimPrefix(a, "--secure-port="))
			if err != nil {
				return fmt.Errorf("--secure-port: %w", err)
			}
			port = p
		default:
			rest = append(rest, a)
		}
	}
	if dataDir == "" || port == 0 {
		return fmt.Errorf("usage: member-apiserver --data-dir=DIR --secure-port=PORT [--token-controller] [kube-apiserver flags]")
	}
	files := pki.Files{Dir: filepath.Join(dataDir, "pki")}
	if err := pki.Ensure(files, pki.Options{AdminUser: "member-admin"}); err != nil {
		return err
	}
	server := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := pki.WriteAdminKubeconfig(filepath.Join(dataDir, "admin.kubeconfig"), files, server, "member"); err != nil {
		return err
	}

	// kine must outlive kube-apiserver, or the server hangs on shutdown.
	ctx, stopStorage := context.WithCancel(context.Background())
	defer stopStorage()
	so := storage.NewOptions()
	so.DataDir = dataDir
	backend, err := storage.Start(ctx, so)
	if err != nil {
		return err
	}

	if tokenController {
		go func() {
			if err := runTokenController(ctx, filepath.Join(dataDir, "admin.kubeconfig"), files); err != nil {
				fmt.Fprintf(os.Stderr, "member-apiserver: token controller: %v\n", err)
				os.Exit(1)
			}
		}()
	}

	cmd := app.NewAPIServerCommand()
	args := []string{
		"--etcd-servers=" + backend.Endpoints[0],
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + files.ServingCert(),
		"--tls-private-key-file=" + files.ServingKey(),
		"--client-ca-file=" + files.CACert(),
		"--service-account-issuer=https://member.local",
		"--service-account-key-file=" + files.ServiceAccountKey(),
		"--service-account-signing-key-file=" + files.ServiceAccountKey(),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--enable-priority-and-fairness=false",
	}
	cmd.SetArgs(append(args, rest...))
	return cmd.Execute()
}
