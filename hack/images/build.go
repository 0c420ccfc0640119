package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// DefaultRegistry prefixes every image name: ghcr.io/cellfed/<binary>.
	DefaultRegistry = "ghcr.io/cellfed"
	// User is the user and group the images run as, distroless' nonroot.
	User = "65532:65532"
	// BinDir is where an image holds its binary, as Kubernetes' images do.
	BinDir = "/usr/local/bin"
	// Source is the org.opencontainers.image.source label.
	Source = "https://github.com/cellfed/cellfed"
	// License is the org.opencontainers.image.licenses label (SPDX).
	License = "Apache-2.0"
)

// Static build settings, shared with the Dockerfile: cgo for SQLite linked
// statically against libc; the pure-Go DNS resolver and user lookup, so
// nothing loads glibc's NSS modules at run time; SQLite without its
// dlopen-based extension loading; symbols stripped.
var (
	StaticTags    = []string{"netgo", "osusergo", "sqlite_omit_load_extension"}
	StaticLDFlags = "-s -w -linkmode external -extldflags -static"
)

// Options says which images Build makes and how it stamps them.
type Options struct {
	Registry string
	Version  string
	Revision string
	// Created is stamped on the files, the config and the created label;
	// zero means the Unix epoch, so the same inputs make the same image.
	Created time.Time
	LDFlags string
	Dir     string // the main module's root
	BinDir  string
	Out     string
	Names   []string // directories under cmd/
}

// Image is one image Build wrote.
type Image struct {
	Name        string
	Ref         string
	Path        string
	BinarySize  int64
	TarballSize int64
}

// Build builds the static binaries and writes one image tarball per binary.
func Build(ctx context.Context, o Options) ([]Image, error) {
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(filepath.Dir(o.Out), "static")
	}
	if err := os.MkdirAll(o.BinDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	binDir, err := filepath.Abs(o.BinDir)
	if err != nil {
		return nil, err
	}
	if err := buildBinaries(ctx, o.Dir, binDir, o.LDFlags, o.Names); err != nil {
		return nil, err
	}
	var images []Image
	for _, n := range o.Names {
		img, err := writeImage(o, n, filepath.Join(binDir, n))
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", n, err)
		}
		images = append(images, img)
	}
	return images, nil
}

// buildBinaries builds ./cmd/<name> for every name into binDir, statically.
func buildBinaries(ctx context.Context, dir, binDir, ldflags string, names []string) error {
	args := []string{"build", "-tags", strings.Join(StaticTags, ","),
		"-ldflags", strings.TrimSpace(ldflags + " " + StaticLDFlags), "-o", binDir + "/"}
	for _, n := range names {
		args = append(args, "./cmd/"+n)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOOS=linux")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", strings.Join(names, " "), err)
	}
	return nil
}

// Labels are the OCI annotations every image carries as config labels.
func Labels(o Options, binary string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    binary,
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.licenses": License,
		"org.opencontainers.image.created":  o.Created.UTC().Format(time.RFC3339),
	}
}

// Ref is an image's name: <registry>/<binary>:<version>.
func Ref(registry, binary, version string) string {
	return registry + "/" + binary + ":" + version
}

func writeImage(o Options, binary, binPath string) (Image, error) {
	tag, err := name.NewTag(Ref(o.Registry, binary, o.Version), name.StrictValidation)
	if err != nil {
		return Image{}, err
	}
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return Image{}, err
	}
	layerTar, err := rootfs(binary, bin, o.Created)
	if err != nil {
		return Image{}, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return Image{}, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: runtime.GOARCH,
		OS:           "linux",
		RootFS:       v1.RootFS{Type: "layers"}, // docker load refuses other types; Append adds the diff IDs
		Config: v1.Config{
			User:       User,
			Entrypoint: []string{BinDir + "/" + binary},
			Env:        []string{"PATH=" + BinDir, "HOME=/home/nonroot"},
			WorkingDir: "/home/nonroot",
			Labels:     Labels(o, binary),
		},
	})
	if err != nil {
		return Image{}, err
	}
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   v1.Time{Time: o.Created},
		CreatedBy: "hack/images: " + BinDir + "/" + binary + ", /etc/passwd, /etc/group, /home/nonroot, /tmp",
	}})
	if err != nil {
		return Image{}, err
	}
	img, err = mutate.CreatedAt(img, v1.Time{Time: o.Created})
	if err != nil {
		return Image{}, err
	}
	path := filepath.Join(o.Out, binary+".tar")
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return Image{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return Image{}, err
	}
	return Image{Name: binary, Ref: tag.String(), Path: path, BinarySize: int64(len(bin)), TarballSize: st.Size()}, nil
}

// rootfs is the image's only layer: the binary, root-owned and not
// writable by the user it runs as, plus what programs expect of a Linux
// root as distroless/static has it: passwd and group naming root and
// nonroot, nonroot's home and a /tmp.
func rootfs(binary string, bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/nonroot", 0o700, 65532) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("usr", 0o755, 0) },
		func() error { return dir("usr/local", 0o755, 0) },
		func() error { return dir("usr/local/bin", 0o755, 0) },
		func() error { return file("usr/local/bin/"+binary, 0o755, bin) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
