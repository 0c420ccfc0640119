package manifests_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/cellfed/cellfed/manifests"
)

// registry is where `make images` names the images (the Makefile's
// REGISTRY, hack/images' DefaultRegistry).
const registry = "ghcr.io/cellfed"

// imageRef is the image `make images` builds for a binary:
// ghcr.io/cellfed/<binary>:<the VERSION file>.
func imageRef(t *testing.T, binary string) string {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		t.Fatal("the VERSION file is empty")
	}
	return registry + "/" + binary + ":" + v
}

// TestAgentManifestImage checks that manifests/agent, which users also
// apply without kustomize (kubectl apply -f), names the released image.
func TestAgentManifestImage(t *testing.T) {
	t.Parallel()
	docs, err := manifests.AgentDocuments()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range docs {
		var dep appsv1.Deployment
		if err := yaml.Unmarshal(d, &dep); err != nil || dep.Kind != "Deployment" {
			continue
		}
		found = true
		if img, want := dep.Spec.Template.Spec.Containers[0].Image, imageRef(t, "cellfed-agent"); img != want {
			t.Errorf("manifests/agent: image %q, want %s", img, want)
		}
	}
	if !found {
		t.Fatal("manifests/agent has no Deployment")
	}
}

// TestDeploySetImage shows that `kustomize edit set image` moves the
// images to another registry and tag: each kustomization's images stanza
// names the images the Deployments use. With a kustomize binary on PATH
// the test runs it; otherwise it makes the same edit to the stanza
// (newName and newTag of the entry named like the image).
func TestDeploySetImage(t *testing.T) {
	t.Parallel()
	kustomizeBin, _ := exec.LookPath("kustomize")
	for _, tc := range []struct {
		dir      string // under manifests/deploy
		binaries []string
	}{
		{"plane", []string{"cellfed-apiserver", "cellfed-controller"}},
		{"agent", []string{"cellfed-agent"}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(copyDeploy(t), tc.dir)
			want := map[string]string{}
			for _, b := range tc.binaries {
				from := registry + "/" + b
				to := "registry.example/mirror/" + b + ":v9.8.7"
				want[b] = to
				if kustomizeBin != "" {
					cmd := exec.Command(kustomizeBin, "edit", "set", "image", from+"="+to)
					cmd.Dir = dir
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("kustomize edit set image: %v\n%s", err, out)
					}
				} else {
					setImage(t, filepath.Join(dir, "kustomization.yaml"), from, "registry.example/mirror/"+b, "v9.8.7")
				}
			}
			for _, o := range mustBuild(t, dir) {
				dep, ok := o.(*appsv1.Deployment)
				if !ok {
					continue
				}
				if img := dep.Spec.Template.Spec.Containers[0].Image; img != want[dep.Name] {
					t.Errorf("Deployment %s: image %q after set image, want %q", dep.Name, img, want[dep.Name])
				}
				delete(want, dep.Name)
			}
			if len(want) != 0 {
				t.Errorf("no Deployment for %v", want)
			}
		})
	}
}

// setImage edits a kustomization's images stanza as `kustomize edit set
// image name=newName:newTag` does: the entry named name gets newName and
// newTag. It fails if there is no such entry, for then kustomize would
// add one that the Deployments' images do not match.
func setImage(t *testing.T, path, name, newName, newTag string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	images, _ := k["images"].([]any)
	found := false
	for _, i := range images {
		if e, ok := i.(map[string]any); ok && e["name"] == name {
			e["newName"], e["newTag"] = newName, newTag
			found = true
		}
	}
	if !found {
		t.Fatalf("%s: no images entry named %s", path, name)
	}
	if data, err = yaml.Marshal(k); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
