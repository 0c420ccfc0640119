package cellfedctl

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cellfed/cellfed/pkg/kms"
)

type rotateKeyOptions struct {
	*options
	keyFile   string
	keyID     string
	resources []string
	// resourcesGiven is false for the defaults, of which a plane may not
	// serve all (FederatedSecrets before that type is enabled).
	resourcesGiven bool
	timeout        time.Duration
	workers        int
}

func newRotateKeyCommand(o *options) *cobra.Command {
	r := &rotateKeyOptions{options: o, resources: slices.Clone(kms.DefaultResources), timeout: 3 * time.Minute, workers: 4}
	cmd := &cobra.Command{
		Use:   "rotate-key [--key-file=<plane key file>] [--key-id=<new key>] [--resources=<the plane's encrypted resources>]",
		Short: "Encrypt everything at rest with a new KMS key, so that the old one can be retired",
		Long: `rotate-key moves every encrypted object of the plane to a new KMS key:

1. With --key-file (the in-process plugin's key file, <data-dir>/kms/keys, or
   the file of a cellfed-kms plugin) it adds a new key, which becomes the one
   that encrypts; the old keys still decrypt. Without it, add the key to your
   KMS plugin yourself and pass its ID with --key-id.
2. It waits until the plane encrypts with the new key (KMS v2 API servers
   poll their plugin; this takes up to a minute).
3. It rewrites every object of --resources, with progress, so that each is
   stored encrypted with the new key (objects stored unencrypted, from before
   encryption was on, are encrypted too).

Afterwards the old keys hold nothing and can be removed
(cellfed-kms remove-key). With several plane replicas, give every replica
the new key file before running it, and wait for each (--key-id), e.g. by
running it against each replica's address with --server.`,
		Example: examples(o.name,
			"rotate-key --key-file=/var/lib/cellfed/kms/keys",
			"rotate-key --key-id=k-20261123T170000Z-1a2b --resources=secrets,configmaps"),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r.resourcesGiven = cmd.Flags().Changed("resources")
			return r.run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&r.keyFile, "key-file", r.keyFile, "KMS key file to add the new key to (on this machine); the plane must read the same file.")
	cmd.Flags().StringVar(&r.keyID, "key-id", r.keyID, "ID of a key already added to the plane's KMS plugin to wait for (default: the key --key-file adds; none: do not wait).")
	cmd.Flags().StringSliceVar(&r.resources, "resources", r.resources, "Resources the plane encrypts (its --encrypted-resources); by default the plane's defaults that it serves.")
	cmd.Flags().DurationVar(&r.timeout, "timeout", r.timeout, "How long to wait for the plane to encrypt with the new key.")
	cmd.Flags().IntVar(&r.workers, "workers", r.workers, "Objects rewritten in parallel.")
	return cmd
}

func (r *rotateKeyOptions) run(ctx context.Context) error {
	if r.keyFile != "" && r.keyID != "" {
		return errors.New("--key-file adds a new key and waits for it; --key-id waits for a key added otherwise: give one of them")
	}
	if r.workers < 1 {
		return fmt.Errorf("--workers must be at least 1, got %d", r.workers)
	}
	cfg, err := r.config.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("reading kubeconfig: %w", err)
	}
	// client-go's default of 5 requests a second would make the rewrite
	// of 500 Secrets take 100 s; the workers bound the load instead.
	cfg.QPS, cfg.Burst = 200, 400
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// Resolve the resources before touching the key file.
	mapper, err := r.config.ToRESTMapper()
	if err != nil {
		return fmt.Errorf("discovering the plane's resources: %w", err)
	}
	var gvrs []schema.GroupVersionResource
	for _, name := range r.resources {
		gvr, err := mapper.ResourceFor(schema.ParseGroupResource(name).WithVersion(""))
		if err != nil {
			if !r.resourcesGiven {
				continue // a default the plane does not serve yet (say, FederatedSecrets not enabled) has nothing to rewrite
			}
			return fmt.Errorf("--resources: the plane serves no resource %q: %v", name, err)
		}
		gvrs = append(gvrs, gvr)
	}
	// A plane without a KMS v2 provider would never pick the key up:
	// refuse before the key file is touched.
	metrics, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("reading the plane's /metrics (rotate-key needs an administrator's kubeconfig): %w", err)
	}
	if !hasKeyStatus(metrics, "") {
		return errors.New(`the plane reports no KMS v2 provider: it runs with --encrypted-resources="" or an --encryption-provider-config without kms v2, so there is no key to rotate; no key was added`)
	}
	out := r.streams.Out
	keyID := r.keyID
	if r.keyFile != "" {
		id, err := kms.AddKey(r.keyFile)
		if err != nil {
			return err
		}
		keyID = id
		fmt.Fprintf(out, "added key %s to %s; it encrypts from now on, the older keys still decrypt\n", id, r.keyFile)
	}
	if keyID != "" {
		start := time.Now()
		fmt.Fprintf(out, "waiting for the plane to encrypt with key %s (KMS v2 API servers poll their plugin; up to a minute)...\n", keyID)
		if err := waitForKey(ctx, kube, keyID, r.timeout); err != nil {
			return err
		}
		fmt.Fprintf(out, "the plane encrypts with key %s (after %s)\n", keyID, time.Since(start).Round(time.Second))
	} else {
		fmt.Fprintln(r.streams.ErrOut, "warning: no --key-file or --key-id: rewriting without waiting for a new key")
	}
	total := 0
	for _, gvr := range gvrs {
		n, err := rewriteAll(ctx, dyn, gvr, r.workers, out)
		total += n
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "rewrote %d object(s); every one is now encrypted with the newest key", total)
	if r.keyFile != "" {
		fmt.Fprintf(out, "; retire the old keys with: cellfed-kms remove-key --key-file=%s --key-id=<old key>", r.keyFile)
	}
	fmt.Fprintln(out)
	return nil
}

// waitForKey polls until the plane's KMS provider reports keyID: its
// health check (which asks the plugin for its key when it last asked long
// enough ago) is run, then the API server's metrics are searched for the
// key's hash in the status metric. The health check that records the new
// key also switches encryption to it before it answers.
func waitForKey(ctx context.Context, kube kubernetes.Interface, keyID string, timeout time.Duration) error {
	want := fmt.Sprintf(`key_id_hash="sha256:%x"`, sha256.Sum256([]byte(keyID)))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rc := kube.Discovery().RESTClient()
	var lastErr error
	for {
		// The result does not matter: the request makes the check run.
		_, _ = rc.Get().AbsPath("/readyz").DoRaw(ctx)
		body, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			lastErr = err
		} else if hasKeyStatus(body, want) {
			_, err := rc.Get().AbsPath("/readyz").DoRaw(ctx)
			if err == nil {
				return nil
			}
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("the plane did not report key %s within %s (last error: %v); check that it reads the key file you changed (or that --key-id is the ID its KMS plugin reports), then run rotate-key again with --key-id=%s", keyID, timeout, lastErr, keyID)
			}
			return fmt.Errorf("the plane did not report key %s within %s; check that it reads the key file you changed (or that --key-id is the ID its KMS plugin reports), then run rotate-key again with --key-id=%s", keyID, timeout, keyID)
		case <-time.After(2 * time.Second):
		}
	}
}

func hasKeyStatus(metrics []byte, want string) bool {
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds{") && strings.Contains(line, want) {
			return true
		}
	}
	return false
}

// rewriteAll updates every object of gvr unchanged: the API server stores
// an object again when it was encrypted with a key that is no longer the
// newest (or not at all), so each ends up under the newest key.
func rewriteAll(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, workers int, out interface{ Write([]byte) (int, error) }) (int, error) {
	name := gvr.GroupResource().String()
	client := dyn.Resource(gvr)
	var items []unstructured.Unstructured
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.List(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("listing %s: %w", name, err)
		}
		items = append(items, list.Items...)
		if list.GetContinue() == "" {
			break
		}
		opts.Continue = list.GetContinue()
	}
	total := len(items)
	fmt.Fprintf(out, "%s: rewriting %d object(s)\n", name, total)
	var done atomic.Int64
	var mu sync.Mutex
	var failed []string
	var firstErr error
	work := make(chan unstructured.Unstructured)
	var wg sync.WaitGroup
	start := time.Now()
	var lastReport atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range work {
				if err := rewriteOne(ctx, client, obj); err != nil {
					mu.Lock()
					failed = append(failed, obj.GetNamespace()+"/"+obj.GetName())
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
				n := done.Add(1)
				if now := time.Now().UnixNano(); n == int64(total) || now-lastReport.Load() > int64(2*time.Second) {
					lastReport.Store(now)
					fmt.Fprintf(out, "%s: %d/%d rewritten (%s)\n", name, n, total, time.Since(start).Round(time.Millisecond))
				}
			}
		}()
	}
	for _, obj := range items {
		select {
		case work <- obj:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return int(done.Load()), fmt.Errorf("interrupted after %d of %d %s; run rotate-key again (with --key-id) to finish", done.Load(), total, name)
	}
	if len(failed) > 0 {
		return total - len(failed), fmt.Errorf("%d of %d %s could not be rewritten (first: %s: %v); run rotate-key again with --key-id before retiring the old key", len(failed), total, name, failed[0], firstErr)
	}
	return total, nil
}

func rewriteOne(ctx context.Context, client dynamic.NamespaceableResourceInterface, obj unstructured.Unstructured) error {
	ri := dynamic.ResourceInterface(client)
	if ns := obj.GetNamespace(); ns != "" {
		ri = client.Namespace(ns)
	}
	cur := &obj
	for attempt := 0; ; attempt++ {
		_, err := ri.Update(ctx, cur, metav1.UpdateOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err) && attempt < 5:
			// Changed meanwhile: that write already used the new key, but
			// rewrite the latest to be sure.
			cur, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}
