package manifests

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"path"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

//go:embed agent/*.yaml
var agentFiles embed.FS

// AgentDocuments returns the YAML documents of the agent's manifests
// (manifests/agent: Namespace, ServiceAccount, RBAC, Deployment), in file
// name order.
func AgentDocuments() ([][]byte, error) {
	files, err := agentFiles.ReadDir("agent")
	if err != nil {
		return nil, err
	}
	var docs [][]byte
	for _, f := range files {
		name := path.Join("agent", f.Name())
		data, err := agentFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			d, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("manifests/%s: %w", name, err)
			}
			if len(bytes.TrimSpace(d)) > 0 {
				docs = append(docs, d)
			}
		}
	}
	return docs, nil
}
