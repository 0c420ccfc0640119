// Command images builds cellfed's container images without a Docker engine
// or network access: for each binary it builds a static executable (cgo for
// SQLite, linked statically) and writes a one-layer OCI image on an empty
// base to <out>/<name>.tar, a tarball that `docker load`, `podman load` and
// `crane push` read. `make images` runs it; the Dockerfile at the
// repository's root builds the same images for users with Docker.
//
//	go run ./hack/images -version v0.1.0 -revision "$(git rev-parse HEAD)" \
//		-created "$(git log -1 --format=%cI)" -ldflags '...' \
//		-out _output/images cellfed-apiserver cellfed-controller
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	o := Options{}
	var created string
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	fs.StringVar(&o.Registry, "registry", DefaultRegistry, "registry and repository prefix of the image names")
	fs.StringVar(&o.Version, "version", "", "image tag and org.opencontainers.image.version")
	fs.StringVar(&o.Revision, "revision", "unknown", "the git commit the images are built from (org.opencontainers.image.revision)")
	fs.StringVar(&created, "created", "", "RFC 3339 time stamped on the files, the config and the created label (the commit's time keeps images reproducible)")
	fs.StringVar(&o.LDFlags, "ldflags", "", "extra -ldflags for go build, e.g. the version stamps; the static-linking flags are added")
	fs.StringVar(&o.Dir, "dir", ".", "the main module's root")
	fs.StringVar(&o.BinDir, "bin", "", "where the static binaries go (default <out>/../static)")
	fs.StringVar(&o.Out, "out", "_output/images", "where the image tarballs go")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Version == "" {
		return fmt.Errorf("-version is required")
	}
	o.Names = fs.Args()
	if len(o.Names) == 0 {
		return fmt.Errorf("name at least one binary (a directory under cmd/)")
	}
	if created != "" {
		t, err := time.Parse(time.RFC3339, created)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		o.Created = t
	}
	images, err := Build(ctx, o)
	if err != nil {
		return err
	}
	for _, img := range images {
		fmt.Printf("%-60s %s  binary %s, tarball %s\n", img.Ref, img.Path, mib(img.BinarySize), mib(img.TarballSize))
	}
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
