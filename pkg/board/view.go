package board

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cellfed/cellfed/pkg/placement"
	"github.com/cellfed/cellfed/pkg/rollout"
)

// objectFacts are what the object page says about placement and rollout.
type objectFacts struct {
	placement, mask string
	state, message  string
	paused          bool
}

// decodeFor reads an object's placement, mask and rollout settings as
// the object page prints them.
func decodeFor(obj *unstructured.Unstructured) (objectFacts, error) {
	fed, err := rollout.Decode(obj)
	if err != nil {
		return objectFacts{}, err
	}
	set, err := rollout.SettingsOf(obj)
	if err != nil {
		return objectFacts{}, err
	}
	f := objectFacts{state: set.State, message: set.Message, paused: set.Paused}
	p := fed.Spec.Placement
	var names []string
	for _, t := range p.Topologies {
		names = append(names, t.Name)
	}
	f.placement = fmt.Sprintf("%s: %s", placement.TopologyType(p), strings.Join(names, ", "))
	if len(p.Topologies) == 0 && p.TopologySelector != nil {
		f.placement = fmt.Sprintf("%s selector: %v", placement.TopologyType(p), p.TopologySelector.MatchLabels)
	}
	if m := placement.Mask(fed); m == nil {
		f.mask = "none: every placed cell is released"
	} else {
		f.mask = "released: " + strings.Join(m, ", ")
		if len(m) == 0 {
			f.mask = "released: none"
		}
	}
	return f, nil
}

func fromUnstructured(obj map[string]any, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}

// Object is a copy of the object of a row key (nil: none).
func (s *Store) Object(key string) *unstructured.Unstructured {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.objs[key]; ok {
		return o.DeepCopy()
	}
	return nil
}
