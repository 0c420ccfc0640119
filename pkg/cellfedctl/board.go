package cellfedctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/pkg/board"
	"github.com/cellfed/cellfed/pkg/federatedtypes"
)

type boardOptions struct {
	*options
	address      string
	fedNamespace string
}

func newBoardCommand(o *options) *cobra.Command {
	b := &boardOptions{options: o}
	cmd := &cobra.Command{
		Use:   "board",
		Short: "Open the release board: every object of a workspace against every cell, live, on localhost",
		Long: `Serve the release board on localhost with your kubeconfig credentials,
like kubectl proxy: a web page with every federated object of a workspace
against every cell (released, held back, updating, ready n/m, failed, and
the template revision), each object's rollout and history, the cells and
clusters with pending registrations, and buttons for rollout
start/next/pause/resume/finish/undo and registration approve/deny.

Every read and every action goes to the plane as you, through the same
code as the matching cellfedctl command, so the plane's RBAC decides what
you see and may do. Open the printed address: it carries a one-time
token, exchanged on first use for a session cookie of this board alone
(a second use of the address is refused; restart the board for a new
one). Ctrl-C stops the board.`,
		Example: examples(o.name,
			"board -n shop",
			"board -n shop --address=127.0.0.1:8765",
		),
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error { return b.run(c) },
	}
	cmd.Flags().StringVar(&b.address, "address", "127.0.0.1:8765", "loopback address (host:port) to serve on; port 0 picks a free one")
	cmd.Flags().StringVar(&b.fedNamespace, "federation-namespace", federatedtypes.DefaultNamespace, "namespace of the FederatedTypeConfigs and KubeFedClusters")
	return cmd
}

// loopback says whether addr's host is a loopback address (or localhost).
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--address=%q is not host:port (e.g. 127.0.0.1:8765): %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--address=%q is not a loopback address: the board acts with your credentials, so it serves on this machine only (127.0.0.1 or ::1)", addr)
}

func (b *boardOptions) run(c *cobra.Command) error {
	if err := loopback(b.address); err != nil {
		return err
	}
	cfg, err := b.restConfig()
	if err != nil {
		return err
	}
	ns, err := b.namespace()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making a client for the plane: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making a client for the plane: %w", err)
	}
	// The board's commands get the same kubeconfig flags this one got.
	var inherited []string
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Changed || f.Name == "namespace" {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				inherited = append(inherited, "--"+f.Name+"="+v)
			}
			return
		}
		inherited = append(inherited, "--"+f.Name+"="+f.Value.String())
	})
	var mu sync.Mutex
	runner := func(ctx context.Context, args ...string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		var out bytes.Buffer
		root := NewCommand(b.name, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		root.SetArgs(append(append([]string{}, args...), inherited...))
		if err := root.ExecuteContext(ctx); err != nil {
			return out.String(), errors.New(oneLine(err.Error()))
		}
		return out.String(), nil
	}
	raw, _ := b.config.ToRawKubeConfigLoader().RawConfig()
	user := raw.Contexts[raw.CurrentContext].AuthInfo
	if b.config.Context != nil && *b.config.Context != "" && raw.Contexts[*b.config.Context] != nil {
		user = raw.Contexts[*b.config.Context].AuthInfo
	}
	if b.config.Impersonate != nil && *b.config.Impersonate != "" {
		user = *b.config.Impersonate
	}
	ctx, cancel := context.WithCancel(c.Context())
	defer cancel()
	srv, err := board.NewServer(ctx, board.Config{Dynamic: dyn, Kube: kube, Run: runner, FedNamespace: b.fedNamespace, Namespace: ns, User: user})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", b.address)
	if err != nil {
		return fmt.Errorf("serving the board on %s: %w; pick another port with --address", b.address, err)
	}
	srv.AllowHost(ln.Addr().String())
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = hs.Shutdown(sctx)
	}()
	printf(b.streams.Out, "Release board of workspace %s for %s: http://%s/?token=%s\n", ns, user, ln.Addr(), srv.Token())
	printf(b.streams.Out, "Open it in a browser; Ctrl-C stops the board.\n")
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the board: %w", err)
	}
	return nil
}
