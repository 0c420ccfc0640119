package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"
	"k8s.io/klog/v2"
	kmsservice "k8s.io/kms/pkg/service"
	"sigs.k8s.io/yaml"

	"github.com/cellfed/cellfed/pkg/kms"
)

// KMSProviderName is the name of the plane's KMS v2 provider in the
// encryption configuration; it is part of every encrypted value's prefix.
const KMSProviderName = "cellfed-kms"

// kmsPrefix starts every value the provider encrypted.
const kmsPrefix = "k8s:enc:kms:v2:" + KMSProviderName + ":"

// EncryptionOptions say how the plane encrypts resources at rest. By
// default Secrets are encrypted with KMS v2 through a plugin the plane runs
// in-process, with a key file in the data dir, so a copy of the database
// alone reveals no Secret.
type EncryptionOptions struct {
	// KeyFile is the in-process plugin's key file (default
	// <data-dir>/kms/keys); generated on the first start of a database
	// that holds nothing encrypted.
	KeyFile string
	// Endpoint is an external KMS v2 plugin (unix:///path.sock); when set
	// the plane runs no plugin of its own.
	Endpoint string
	// Resources are encrypted ("secrets", "configmaps", "widgets.example.com");
	// none turns encryption off.
	Resources []string
	// Timeout bounds each call to the plugin.
	Timeout time.Duration
}

// NewEncryptionOptions encrypts kms.DefaultResources with the in-process
// plugin.
func NewEncryptionOptions() *EncryptionOptions {
	return &EncryptionOptions{Resources: slices.Clone(kms.DefaultResources), Timeout: 3 * time.Second}
}

// AddFlags registers the encryption flags.
func (o *EncryptionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.KeyFile, "kms-key-file", o.KeyFile, "Key file of the in-process KMS v2 plugin (default <data-dir>/kms/keys; generated, mode 0600, on the first start of a database that holds nothing encrypted). Back it up: the database cannot be read without it.")
	fs.StringVar(&o.Endpoint, "kms-endpoint", o.Endpoint, "External KMS v2 plugin (unix:///path.sock, e.g. cellfed-kms serve) used instead of the in-process one.")
	fs.StringSliceVar(&o.Resources, "encrypted-resources", o.Resources, "Resources encrypted at rest with KMS v2 (e.g. secrets,configmaps,widgets.example.com); \"\" turns encryption off. Ignored with --encryption-provider-config.")
	fs.DurationVar(&o.Timeout, "kms-timeout", o.Timeout, "Timeout of each call to the KMS plugin.")
}

// Validate checks the flags alone.
func (o *EncryptionOptions) Validate() []error {
	var errs []error
	if o.Endpoint != "" && o.KeyFile != "" {
		errs = append(errs, errors.New("--kms-key-file and --kms-endpoint exclude each other: the key file is for the in-process plugin, an external plugin holds its own keys"))
	}
	if o.Endpoint != "" && !strings.HasPrefix(o.Endpoint, "unix:///") {
		errs = append(errs, fmt.Errorf("--kms-endpoint %q must be unix:///absolute/path.sock (KMS v2 plugins serve on unix sockets)", o.Endpoint))
	}
	for _, r := range nonEmpty(o.Resources) {
		if strings.ContainsAny(r, "/ *") || r != strings.ToLower(r) {
			errs = append(errs, fmt.Errorf("--encrypted-resources: %q is not a resource name (lowercase plural, with its group for API groups: secrets, widgets.example.com)", r))
		}
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--kms-timeout must be positive, got %s", o.Timeout))
	}
	return errs
}

// enabled is false when no resource is encrypted.
func (o *EncryptionOptions) enabled() bool {
	for _, r := range o.Resources {
		if r != "" {
			return true
		}
	}
	return false
}

// encryptionSetup is what setupEncryption started.
type encryptionSetup struct {
	configFile string
	server     *kms.Server // in-process plugin, nil for an external one
	generated  bool        // the key file was created by this start
}

func (s *encryptionSetup) stop() {
	if s != nil && s.server != nil {
		s.server.Stop()
	}
}

// setupEncryption connects the plane to its KMS plugin before the API
// server starts, and proves the plugin can decrypt what the database
// already holds; only then does it write the encryption configuration.
// Every failure leaves the database untouched.
func (o *Options) setupEncryption(ctx context.Context, raw *clientv3.Client) (*encryptionSetup, error) {
	enc := o.Encryption
	if o.ControlPlane.Etcd.EncryptionProviderConfigFilepath != "" || !enc.enabled() {
		return nil, nil
	}
	resources := nonEmpty(enc.Resources)
	found, err := scanEncrypted(ctx, raw, resources)
	if err != nil {
		return nil, err
	}
	setup := &encryptionSetup{}
	endpoint := enc.Endpoint
	source := "--kms-endpoint " + endpoint
	if endpoint == "" {
		keyFile := enc.KeyFile
		if keyFile == "" {
			keyFile = filepath.Join(o.DataDir, "kms", "keys")
		}
		source = "the key file " + keyFile
		if _, err := os.Stat(keyFile); errors.Is(err, fs.ErrNotExist) {
			if len(found.keyIDs) > 0 {
				return nil, fmt.Errorf("the database holds %s encrypted with KMS key(s) %s, but the key file %s does not exist: restore it from your backup (a new key cannot decrypt them), or point --kms-key-file or --kms-endpoint at the keys that encrypted them; nothing was written",
					found.describe(), strings.Join(found.keyIDs, ", "), keyFile)
			}
			id, err := kms.GenerateKeyFile(keyFile)
			if err != nil {
				return nil, fmt.Errorf("generating the KMS key file: %w", err)
			}
			setup.generated = true
			klog.InfoS("Generated the KMS key file; back it up with the database, which cannot be read without it", "file", keyFile, "keyID", id)
		}
		svc, err := kms.NewService(keyFile)
		if err != nil {
			return nil, err
		}
		sock, err := kmsSocketPath(o.DataDir)
		if err != nil {
			return nil, err
		}
		srv, err := kms.Start(ctx, "unix://"+sock, svc)
		if err != nil {
			return nil, fmt.Errorf("starting the in-process KMS plugin: %w", err)
		}
		setup.server = srv
		endpoint = srv.Endpoint()
	}
	if err := verifyKMS(ctx, endpoint, enc.Timeout, found, source); err != nil {
		setup.stop()
		return nil, err
	}
	if found.plaintext > 0 {
		klog.InfoS("Some objects of encrypted resources are stored unencrypted (written before encryption was on); `cellfedctl rotate-key` rewrites them encrypted",
			"count", found.plaintext, "resources", resources)
	}
	cfg, err := writeEncryptionConfig(filepath.Join(o.DataDir, "kms", "encryption-config.yaml"), resources, endpoint, enc.Timeout)
	if err != nil {
		setup.stop()
		return nil, err
	}
	setup.configFile = cfg
	o.ControlPlane.Etcd.EncryptionProviderConfigFilepath = cfg
	return setup, nil
}

// kmsSocketPath is the in-process plugin's socket: in the data dir, or in
// a private temporary directory when that path is too long for a socket.
func kmsSocketPath(dataDir string) (string, error) {
	p := filepath.Join(dataDir, "kms", "kms.sock")
	if len(p) <= 100 {
		return p, nil
	}
	dir, err := os.MkdirTemp("", "cellfed-kms-")
	if err != nil {
		return "", fmt.Errorf("creating a directory for the KMS socket: %w", err)
	}
	return filepath.Join(dir, "kms.sock"), nil
}

// encryptedRows is what the database holds of the encrypted resources.
type encryptedRows struct {
	// samples are encrypted values to try, at most a few per key ID.
	samples    []*kmstypes.EncryptedObject
	sampleKeys []string
	keyIDs     []string
	encrypted  int
	plaintext  int
	foreign    int // encrypted by another provider
}

func (f encryptedRows) describe() string {
	return fmt.Sprintf("%d object(s)", f.encrypted)
}

// etcdPrefix is where the API server stores a resource: /registry/<r>/
// for the core group, /registry/<group>/<r>/ otherwise.
func etcdPrefix(resource string) string {
	r, group, ok := strings.Cut(resource, ".")
	if !ok {
		return "/registry/" + resource + "/"
	}
	return "/registry/" + group + "/" + r + "/"
}

// scanEncrypted reads every stored object of the resources, in pages,
// without decrypting anything.
func scanEncrypted(ctx context.Context, raw *clientv3.Client, resources []string) (encryptedRows, error) {
	var out encryptedRows
	perKey := map[string]int{}
	seen := map[string]bool{}
	for _, r := range resources {
		prefix := etcdPrefix(r)
		end := clientv3.GetPrefixRangeEnd(prefix)
		key := prefix
		for {
			resp, err := raw.Get(ctx, key, clientv3.WithRange(end), clientv3.WithLimit(500))
			if err != nil {
				return out, fmt.Errorf("reading %s from the database: %w; nothing was written", prefix, err)
			}
			for _, kv := range resp.Kvs {
				v := kv.Value
				switch {
				case strings.HasPrefix(string(v), kmsPrefix):
					out.encrypted++
					var obj kmstypes.EncryptedObject
					if err := proto.Unmarshal(v[len(kmsPrefix):], &obj); err != nil {
						return out, fmt.Errorf("%s in the database is not a valid KMS v2 envelope: %w; nothing was written", kv.Key, err)
					}
					if !seen[obj.KeyID] {
						seen[obj.KeyID] = true
						out.keyIDs = append(out.keyIDs, obj.KeyID)
					}
					if perKey[obj.KeyID] < 3 {
						perKey[obj.KeyID]++
						out.samples = append(out.samples, &obj)
						out.sampleKeys = append(out.sampleKeys, string(kv.Key))
					}
				case strings.HasPrefix(string(v), "k8s:enc:"):
					out.foreign++
				default:
					out.plaintext++
				}
			}
			if !resp.More || len(resp.Kvs) == 0 {
				break
			}
			key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
	sort.Strings(out.keyIDs)
	return out, nil
}

// verifyKMS checks the plugin is healthy and unwraps the data keys of the
// sampled objects with it.
func verifyKMS(ctx context.Context, endpoint string, timeout time.Duration, found encryptedRows, source string) error {
	svc, err := kmsv2.NewGRPCService(ctx, endpoint, KMSProviderName, timeout)
	if err != nil {
		return fmt.Errorf("connecting to the KMS plugin at %s: %w; nothing was written", endpoint, err)
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	status, err := svc.Status(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("the KMS plugin at %s is unreachable: %v; start it (e.g. cellfed-kms serve --listen %s --key-file ...) or fix --kms-endpoint; nothing was written", endpoint, err, endpoint)
	}
	if status.Healthz != "ok" || status.Version != "v2" || status.KeyID == "" {
		return fmt.Errorf("the KMS plugin at %s is not a healthy KMS v2 plugin (version %q, healthz %q, key ID %q); fix the plugin; nothing was written", endpoint, status.Version, status.Healthz, status.KeyID)
	}
	for i, obj := range found.samples {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		_, err := svc.Decrypt(dctx, "cellfed-startup-check", &kmsservice.DecryptRequest{
			Ciphertext: obj.EncryptedDEKSource, KeyID: obj.KeyID, Annotations: obj.Annotations,
		})
		cancel()
		if err != nil {
			return fmt.Errorf("%s cannot decrypt %s in the database (KMS key %s): %v; start the plane with the keys that encrypted this database (restore the key file from your backup) — a plane with other keys could not read its Secrets; nothing was written",
				source, found.sampleKeys[i], obj.KeyID, err)
		}
	}
	klog.InfoS("KMS plugin ready", "endpoint", endpoint, "keyID", status.KeyID, "encryptedObjects", found.encrypted, "checkedKeys", len(found.keyIDs))
	return nil
}

// encryptionConfig is the EncryptionConfiguration the API server reads:
// KMS v2 for the resources, identity to read what was written before.
func writeEncryptionConfig(path string, resources []string, endpoint string, timeout time.Duration) (string, error) {
	cfg := map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "EncryptionConfiguration",
		"resources": []any{map[string]any{
			"resources": resources,
			"providers": []any{
				map[string]any{"kms": map[string]any{"apiVersion": "v2", "name": KMSProviderName, "endpoint": endpoint, "timeout": timeout.String()}},
				map[string]any{"identity": map[string]any{}},
			},
		}},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("encoding the encryption configuration: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", fmt.Errorf("writing the encryption configuration: %w", err)
	}
	return path, nil
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
