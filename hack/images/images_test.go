package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// The images `make images` builds, and what running each entrypoint shows.
// cellfed-webhook is checked with --help, which names it.
var images = []struct {
	name string
	args []string
	want string
}{
	{"cellfed-apiserver", []string{"--version"}, "+cellfed"},
	{"cellfed-controller", []string{"--version"}, "+cellfed"},
	{"cellfed-agent", []string{"--version"}, "+cellfed"},
	{"cellfed-kms", []string{"--version"}, "+cellfed"},
	{"cellfed-webhook", []string{"--help"}, "cellfed-webhook"},
	{"cellfed-proxy", []string{"--version"}, "+cellfed"},
}

// TestImages takes each image tarball as `docker load` would (manifest.json,
// the config and the layers it names), checks the config (non-root user,
// entrypoint, OCI labels) and unpacks the layers into a directory: the
// image's root file system. It checks that the entrypoint is a static
// executable and runs it with --version (--help) from that root: as root it
// runs chrooted into it as the image's user, so the image holds everything
// the binary needs; there cellfed-apiserver also serves, on SQLite.
//
// It uses the tarballs `make images` left in _output/images (make test
// builds them first) if they are of the commit checked out, and otherwise
// builds them into a temporary directory, which takes a minute or more.
// CELLFED_IMAGES_DIR names a directory of tarballs to test as they are.
func TestImages(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	version, err := releaseVersion(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	dir, given := os.LookupEnv("CELLFED_IMAGES_DIR")
	if !given {
		dir = filepath.Join(root, "_output", "images")
	}
	if !given && !built(t, root, dir) {
		dir = t.TempDir()
		var names []string
		for _, img := range images {
			names = append(names, img.name)
		}
		t.Logf("building %s into %s", strings.Join(names, " "), dir)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if _, err := Build(ctx, Options{Registry: DefaultRegistry, Version: version, Revision: head(root),
			Dir: root, Out: dir, Names: names}); err != nil {
			t.Fatal(err)
		}
	}
	for _, img := range images {
		t.Run(img.name, func(t *testing.T) {
			t.Parallel()
			rootfs := t.TempDir()
			path := filepath.Join(dir, img.name+".tar")
			validateImage(t, path)
			cfg := load(t, path, Ref(DefaultRegistry, img.name, version), rootfs)
			checkConfig(t, img.name, version, cfg)
			entrypoint := filepath.Join(rootfs, strings.TrimPrefix(cfg.Config.Entrypoint[0], "/"))
			checkStatic(t, entrypoint)
			out := runEntrypoint(t, rootfs, cfg, img.args)
			if !strings.Contains(out, img.want) {
				t.Errorf("%s %s printed %q, want it to contain %q", img.name, strings.Join(img.args, " "), out, img.want)
			}
			if img.name == "cellfed-apiserver" && os.Geteuid() == 0 {
				checkServes(t, rootfs, cfg)
			}
		})
	}
}

// validateImage reads the tarball as go-containerregistry (crane) does and
// checks that the digests and diff IDs in its manifest and config match
// its layers.
func validateImage(t *testing.T, path string) {
	t.Helper()
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Errorf("%s: %v", path, err)
	}
}

// releaseVersion reads the VERSION file: the images' tag (the Makefile's
// VERSION).
func releaseVersion(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(data))
	if !regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z-]+)?$`).MatchString(v) {
		return "", fmt.Errorf("%s holds %q, not a release like v0.1.0", file, v)
	}
	return v, nil
}

func head(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// built reports whether dir holds every image, built from the commit
// checked out.
func built(t *testing.T, root, dir string) bool {
	rev := head(root)
	for _, img := range images {
		path := filepath.Join(dir, img.name+".tar")
		cfg, err := readConfig(path)
		if err != nil {
			t.Logf("not using %s: %v", path, err)
			return false
		}
		if got := cfg.Config.Labels["org.opencontainers.image.revision"]; got != rev {
			t.Logf("not using %s: built from %s, not %s", path, got, rev)
			return false
		}
	}
	t.Logf("using the images in %s", dir)
	return true
}

// The parts of an image config (OCI image spec, config.json) the test reads.
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Env        []string          `json:"Env"`
		WorkingDir string            `json:"WorkingDir"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// manifestEntry is one entry of a docker-load tarball's manifest.json.
type manifestEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// readTar returns the files of a tarball by name.
func readTar(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, h.Name, err)
		}
		files[h.Name] = data
	}
}

func parseManifest(files map[string][]byte) (manifestEntry, imageConfig, error) {
	var m []manifestEntry
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil {
		return manifestEntry{}, imageConfig{}, fmt.Errorf("manifest.json: %w", err)
	}
	if len(m) != 1 {
		return manifestEntry{}, imageConfig{}, fmt.Errorf("manifest.json lists %d images, want 1", len(m))
	}
	var cfg imageConfig
	if err := json.Unmarshal(files[m[0].Config], &cfg); err != nil {
		return manifestEntry{}, imageConfig{}, fmt.Errorf("config %s: %w", m[0].Config, err)
	}
	return m[0], cfg, nil
}

func readConfig(path string) (imageConfig, error) {
	files, err := readTar(path)
	if err != nil {
		return imageConfig{}, err
	}
	_, cfg, err := parseManifest(files)
	return cfg, err
}

// load reads an image tarball, checks its tag and unpacks its layers into
// rootfs.
func load(t *testing.T, path, wantRef, rootfs string) imageConfig {
	t.Helper()
	files, err := readTar(path)
	if err != nil {
		t.Fatal(err)
	}
	m, cfg, err := parseManifest(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.RepoTags) != 1 || m.RepoTags[0] != wantRef {
		t.Errorf("%s is tagged %q, want %s", path, m.RepoTags, wantRef)
	}
	if cfg.RootFS.Type != "layers" {
		t.Errorf("%s: rootfs type %q, want layers", path, cfg.RootFS.Type)
	}
	if len(m.Layers) == 0 || len(m.Layers) != len(cfg.RootFS.DiffIDs) {
		t.Fatalf("%s: %d layers, %d diff IDs", path, len(m.Layers), len(cfg.RootFS.DiffIDs))
	}
	for _, l := range m.Layers {
		data, ok := files[l]
		if !ok {
			t.Fatalf("%s: layer %s is missing", path, l)
		}
		if err := unpack(data, rootfs); err != nil {
			t.Fatalf("%s: layer %s: %v", path, l, err)
		}
	}
	return cfg
}

// unpack extracts a (gzipped) layer tarball into dir: directories and
// regular files with their modes and owners, nothing outside dir.
func unpack(layer []byte, dir string) error {
	var r io.Reader = bytes.NewReader(layer)
	if bytes.HasPrefix(layer, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("entry %q leaves the root", h.Name)
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q: type %c; the images hold only directories and files", h.Name, h.Typeflag)
		}
		if err := os.Chmod(path, os.FileMode(h.Mode).Perm()|modeBits(h.Mode)); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(path, h.Uid, h.Gid); err != nil {
				return err
			}
		}
	}
}

func modeBits(mode int64) os.FileMode {
	var m os.FileMode
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}

func checkConfig(t *testing.T, name, version string, cfg imageConfig) {
	t.Helper()
	if cfg.OS != "linux" || cfg.Architecture == "" {
		t.Errorf("platform %s/%s, want linux/<arch>", cfg.OS, cfg.Architecture)
	}
	if uid, _, _ := strings.Cut(cfg.Config.User, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("user %q, want a non-root user", cfg.Config.User)
	}
	if cfg.Config.User != User {
		t.Errorf("user %q, want %s", cfg.Config.User, User)
	}
	if want := []string{BinDir + "/" + name}; !slices.Equal(cfg.Config.Entrypoint, want) || len(cfg.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q, cmd %q; want entrypoint %q and no cmd", cfg.Config.Entrypoint, cfg.Config.Cmd, want)
	}
	labels := cfg.Config.Labels
	for k, want := range map[string]string{
		"org.opencontainers.image.title":    name,
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.licenses": License,
	} {
		if labels[k] != want {
			t.Errorf("label %s=%q, want %q", k, labels[k], want)
		}
	}
	if labels["org.opencontainers.image.revision"] == "" {
		t.Errorf("no org.opencontainers.image.revision label: %v", labels)
	}
	if _, err := time.Parse(time.RFC3339, labels["org.opencontainers.image.created"]); err != nil {
		t.Errorf("label org.opencontainers.image.created: %v", err)
	}
}

// checkStatic fails unless path is an ELF executable that needs no dynamic
// loader and no shared library.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader: not statically linked", path)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) != 0 {
		t.Errorf("%s needs shared libraries %q (%v)", path, libs, err)
	}
}

// checkServes starts the plane from the image's root on its default
// storage, SQLite in /tmp, and waits until it serves: the statically
// linked SQLite works without anything from the host.
func checkServes(t *testing.T, rootfs string, cfg imageConfig) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := chrooted(ctx, t, rootfs, cfg, "--data-dir=/tmp/data", "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	for !strings.Contains(out.String(), "is serving on") {
		if ctx.Err() != nil {
			t.Fatalf("cellfed-apiserver did not serve:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(rootfs, "tmp", "data", "db", "state.db")); err != nil {
		t.Errorf("no SQLite database: %v\n%s", err, out.String())
	}
	t.Logf("cellfed-apiserver serves on 127.0.0.1:%d from the image's root", port)
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// chrooted is the image's entrypoint with args, run as the image's user
// with its environment and working directory, chrooted into rootfs.
func chrooted(ctx context.Context, t *testing.T, rootfs string, cfg imageConfig, args ...string) *exec.Cmd {
	t.Helper()
	uid, gid, err := parseUser(cfg.Config.User)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, cfg.Config.Entrypoint[0], args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     rootfs,
		Credential: &syscall.Credential{Uid: uid, Gid: gid},
	}
	cmd.Dir = cfg.Config.WorkingDir
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	cmd.Env = cfg.Config.Env
	return cmd
}

// runEntrypoint runs the image's entrypoint with args, with the image's
// environment, and returns what it printed. As root it runs chrooted into
// rootfs as the image's user; otherwise it runs the unpacked binary.
func runEntrypoint(t *testing.T, rootfs string, cfg imageConfig, args []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = chrooted(ctx, t, rootfs, cfg, args...)
	} else {
		cmd = exec.CommandContext(ctx, filepath.Join(rootfs, cfg.Config.Entrypoint[0]), args...)
		cmd.Env = cfg.Config.Env
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", cfg.Config.Entrypoint[0], strings.Join(args, " "), err, out)
	}
	return string(out)
}

func parseUser(user string) (uid, gid uint32, err error) {
	u, g, _ := strings.Cut(user, ":")
	if g == "" {
		g = u
	}
	uu, err := strconv.ParseUint(u, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("user %q: %w", user, err)
	}
	gg, err := strconv.ParseUint(g, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("user %q: %w", user, err)
	}
	return uint32(uu), uint32(gg), nil
}

// TestStaticTagsShared checks that the Dockerfile and the Makefile build
// with StaticTags: the Makefile compiles everything with them (GOFLAGS) so
// bin/, the images and the tests share the build cache, and the Dockerfile
// builds the same binaries as `make images`.
func TestStaticTagsShared(t *testing.T) {
	tags := strings.Join(StaticTags, ",")
	for _, tc := range []struct{ file, want string }{
		{"../../Makefile", "export GOFLAGS := $(GOFLAGS) -tags=" + tags + "\n"},
		{"../../Dockerfile", "-tags " + tags + " "},
	} {
		raw, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), tc.want) {
			t.Errorf("%s does not hold %q: keep its tags those of hack/images StaticTags", tc.file, tc.want)
		}
	}
}
