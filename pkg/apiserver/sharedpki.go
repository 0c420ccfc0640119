package apiserver

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cellfed/cellfed/pkg/kms"
	"github.com/cellfed/cellfed/pkg/pki"
	"github.com/cellfed/cellfed/pkg/proxy"
)

// SharedPKIFiles are the PKI files every replica on one database shares;
// each replica generates its own serving certificate from the CA.
var SharedPKIFiles = []string{"ca.crt", "ca.key", "sa.key", "agent-ca.crt", "agent-ca.key", "tunnel-connect.secret"}

// copySharedPKI copies the shared PKI into the data dir's PKI directory.
// A file already there must be identical: a data dir from another plane
// is refused instead of overwritten.
func copySharedPKI(src string, files pki.Files) error {
	var missing []string
	for _, name := range SharedPKIFiles {
		if _, err := os.Stat(filepath.Join(src, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--shared-pki-dir %s lacks %s: it must hold %s (`cellfed-apiserver init --dir DIR` writes a set)",
			src, strings.Join(missing, ", "), strings.Join(SharedPKIFiles, ", "))
	}
	if err := os.MkdirAll(files.Dir, 0o700); err != nil {
		return fmt.Errorf("creating certificate directory %s: %w", files.Dir, err)
	}
	// Check every file before writing any.
	todo := map[string][]byte{}
	for _, name := range SharedPKIFiles {
		want, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return fmt.Errorf("reading the shared PKI: %w", err)
		}
		dst := filepath.Join(files.Dir, name)
		have, err := os.ReadFile(dst)
		switch {
		case err == nil && bytes.Equal(have, want):
		case err == nil:
			return fmt.Errorf("%s differs from %s in --shared-pki-dir: this data dir belongs to another plane; move its pki directory away (its serving and admin certificates are then re-issued from the shared CA)", dst, filepath.Join(src, name))
		case errors.Is(err, fs.ErrNotExist):
			todo[name] = want
		default:
			return fmt.Errorf("reading %s: %w", dst, err)
		}
	}
	for name, b := range todo {
		mode := os.FileMode(0o600)
		if strings.HasSuffix(name, ".crt") {
			mode = 0o644
		}
		if err := os.WriteFile(filepath.Join(files.Dir, name), b, mode); err != nil {
			return fmt.Errorf("copying the shared PKI into %s: %w", files.Dir, err)
		}
	}
	return nil
}

// InitSharedFiles writes into dir a new set of the files replicas share:
// the PKI (SharedPKIFiles) and a KMS key file named kms-keys. It refuses a
// dir that already holds any of them. The admin client certificate goes to
// dir/admin/, apart from what the replicas mount.
func InitSharedFiles(dir, adminUser string) error {
	for _, name := range append(append([]string{}, SharedPKIFiles...), "kms-keys") {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("%s already exists in %s; choose an empty directory (init never overwrites keys)", name, dir)
		}
	}
	work, err := os.MkdirTemp("", "cellfed-init-")
	if err != nil {
		return fmt.Errorf("creating a work directory: %w", err)
	}
	defer os.RemoveAll(work)
	files := pki.Files{Dir: work}
	if err := pki.Ensure(files, pki.Options{AdminUser: adminUser}); err != nil {
		return err
	}
	if _, _, err := pki.EnsureAgentCA(files); err != nil {
		return err
	}
	if _, err := proxy.LoadOrCreateSecret(TunnelConnectSecretFile(files)); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "admin"), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	copies := map[string]string{"admin.crt": filepath.Join("admin", "admin.crt"), "admin.key": filepath.Join("admin", "admin.key")}
	for _, name := range SharedPKIFiles {
		copies[name] = name
	}
	for from, to := range copies {
		b, err := os.ReadFile(filepath.Join(work, from))
		if err != nil {
			return fmt.Errorf("reading the generated %s: %w", from, err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", to, err)
		}
	}
	if _, err := kms.GenerateKeyFile(filepath.Join(dir, "kms-keys")); err != nil {
		return err
	}
	return nil
}
