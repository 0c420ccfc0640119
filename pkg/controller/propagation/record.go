package propagation

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // KubeFed's record format, not a security hash
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
)

// propagated is the record of one object, KubeFed's PropagatedVersion
// status: the template and override versions (KubeFed's md5 hashes of
// spec.template and spec.overrides) and, for every cluster that may hold
// the object, the member object's version right after the write
// (gen:<generation>, or rv:<resourceVersion> for types without a
// generation). A cluster's version is empty while its outcome is
// unknown; the cluster stays listed, since deletion walks every cluster
// of the record, so an object is removed from clusters it left while
// they were down. KubeFed's tools and controller read the same record.
type propagated struct {
	templateVersion, overridesVersion string
	clusters                          map[string]string
	exists                            bool
	resourceVersion                   string
}

func newRecord(tv, ov string) *propagated {
	return &propagated{templateVersion: tv, overridesVersion: ov, clusters: map[string]string{}}
}

func (r *propagated) sameContent(o *propagated) bool {
	return r.templateVersion == o.templateVersion && r.overridesVersion == o.overridesVersion && maps.Equal(r.clusters, o.clusters)
}

// versionFor is the recorded version of cluster when it still describes
// the object as it is now (KubeFed's rule: the versions are valid only
// while template and overrides are the recorded ones).
func (r *propagated) versionFor(cluster, tv, ov string) string {
	if r.templateVersion != tv || r.overridesVersion != ov {
		return ""
	}
	return r.clusters[cluster]
}

// versionStore keeps the records of one type in memory and in the plane
// (PropagatedVersion or ClusterPropagatedVersion objects named
// <kind>-<name>, as KubeFed names them). Only a change is written.
type versionStore struct {
	plane  dynamic.Interface
	gvr    schema.GroupVersionResource
	prefix string
	// typeName labels the plane writes.
	typeName string

	// objs holds each object's record, in its state.
	objs *objects
}

func newVersionStore(plane dynamic.Interface, t *Type, objs *objects) *versionStore {
	gvr := kubefed.ClusterPropagatedVersionsResource
	if t.Namespaced {
		gvr = kubefed.PropagatedVersionsResource
	}
	return &versionStore{plane: plane, gvr: gvr, prefix: strings.ToLower(t.TargetKind) + "-", typeName: t.Name, objs: objs}
}

// load reads every record of the type once, at start.
func (s *versionStore) load(ctx context.Context) error {
	list, err := s.plane.Resource(s.gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing %s: %w", s.gvr.Resource, err)
	}
	for i := range list.Items {
		pv := &list.Items[i]
		name, ok := strings.CutPrefix(pv.GetName(), s.prefix)
		if !ok {
			continue
		}
		key := name
		if ns := pv.GetNamespace(); ns != "" {
			key = ns + "/" + name
		}
		r := decodeRecord(pv)
		s.objs.update(key, func(st *state) { st.record = r })
	}
	return nil
}

func decodeRecord(pv *unstructured.Unstructured) *propagated {
	r := newRecord("", "")
	r.exists, r.resourceVersion = true, pv.GetResourceVersion()
	r.templateVersion, _, _ = unstructured.NestedString(pv.Object, "status", "templateVersion")
	r.overridesVersion, _, _ = unstructured.NestedString(pv.Object, "status", "overridesVersion")
	cvs, _, _ := unstructured.NestedSlice(pv.Object, "status", "clusterVersions")
	for _, cv := range cvs {
		m, _ := cv.(map[string]any)
		name, _ := m["clusterName"].(string)
		version, _ := m["version"].(string)
		if name != "" {
			r.clusters[name] = version
		}
	}
	return r
}

// get returns a copy of the record of key (empty when there is none).
func (s *versionStore) get(key string) (out *propagated) {
	s.objs.read(key, func(st *state) {
		if r := st.record; r != nil {
			c := *r
			c.clusters = maps.Clone(r.clusters)
			out = &c
		}
	})
	if out == nil {
		return newRecord("", "")
	}
	return out
}

func (s *versionStore) forget(key string) {
	s.objs.update(key, func(st *state) { st.record = nil })
}

func (s *versionStore) client(namespace string) dynamic.ResourceInterface {
	if s.gvr == kubefed.PropagatedVersionsResource {
		return s.plane.Resource(s.gvr).Namespace(namespace)
	}
	return s.plane.Resource(s.gvr)
}

// save writes next when it differs from what is stored. A record with no
// clusters that was never stored is not written at all.
func (s *versionStore) save(ctx context.Context, key string, fed *unstructured.Unstructured, next *propagated) error {
	cur := s.get(key)
	if cur.sameContent(next) && (cur.exists || len(next.clusters) == 0) {
		return nil
	}
	c := s.client(fed.GetNamespace())
	name := s.prefix + fed.GetName()
	rv := cur.resourceVersion
	if !cur.exists {
		pv := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": s.gvr.GroupVersion().String(),
			"kind":       kindOf(s.gvr),
			"metadata": map[string]any{
				"name": name,
				"ownerReferences": []any{map[string]any{
					"apiVersion": fed.GetAPIVersion(), "kind": fed.GetKind(), "name": fed.GetName(), "uid": string(fed.GetUID()),
				}},
			},
		}}
		if ns := fed.GetNamespace(); ns != "" {
			pv.SetNamespace(ns)
		}
		planeWrites.WithLabelValues(s.typeName, WriteRecordCreate).Inc()
		created, err := c.Create(ctx, pv, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			existing, err := c.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("reading %s %s: %w", kindOf(s.gvr), name, err)
			}
			rv = existing.GetResourceVersion()
		case err != nil:
			return fmt.Errorf("creating %s %s: %w", kindOf(s.gvr), name, err)
		default:
			rv = created.GetResourceVersion()
		}
	}
	pv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": s.gvr.GroupVersion().String(),
		"kind":       kindOf(s.gvr),
		"metadata":   map[string]any{"name": name, "resourceVersion": rv},
		"status":     next.status(),
	}}
	if ns := fed.GetNamespace(); ns != "" {
		pv.SetNamespace(ns)
	}
	planeWrites.WithLabelValues(s.typeName, WriteRecordStatus).Inc()
	updated, err := c.UpdateStatus(ctx, pv, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Someone else wrote it: read it again next time.
			s.reload(ctx, key, c, name)
		}
		return fmt.Errorf("writing %s %s: %w", kindOf(s.gvr), name, err)
	}
	stored := *next
	stored.clusters = maps.Clone(next.clusters)
	stored.exists, stored.resourceVersion = true, updated.GetResourceVersion()
	s.objs.update(key, func(st *state) { st.record = &stored })
	return nil
}

func (s *versionStore) reload(ctx context.Context, key string, c dynamic.ResourceInterface, name string) {
	pv, err := c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s.forget(key)
	case err == nil:
		r := decodeRecord(pv)
		s.objs.update(key, func(st *state) { st.record = r })
	}
}

// delete removes the stored record of a finalized object.
func (s *versionStore) delete(ctx context.Context, key string, fed *unstructured.Unstructured) error {
	if !s.get(key).exists {
		return nil
	}
	planeWrites.WithLabelValues(s.typeName, WriteRecordDelete).Inc()
	err := s.client(fed.GetNamespace()).Delete(ctx, s.prefix+fed.GetName(), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", kindOf(s.gvr), s.prefix+fed.GetName(), err)
	}
	s.forget(key)
	return nil
}

func (r *propagated) status() map[string]any {
	names := slices.Sorted(maps.Keys(r.clusters))
	cvs := make([]any, 0, len(names))
	for _, n := range names {
		cvs = append(cvs, map[string]any{"clusterName": n, "version": r.clusters[n]})
	}
	return map[string]any{"templateVersion": r.templateVersion, "overridesVersion": r.overridesVersion, "clusterVersions": cvs}
}

func kindOf(gvr schema.GroupVersionResource) string {
	if gvr == kubefed.PropagatedVersionsResource {
		return "PropagatedVersion"
	}
	return "ClusterPropagatedVersion"
}

// objectVersion is KubeFed's version of a member object: gen:<n> for
// types with a generation, rv:<resourceVersion> for the others.
func objectVersion(obj *unstructured.Unstructured) string {
	if g := obj.GetGeneration(); g != 0 {
		return fmt.Sprintf("gen:%d", g)
	}
	return "rv:" + obj.GetResourceVersion()
}

// templateVersion is KubeFed's template version of a federated object:
// the md5 of spec.template as KubeFed encodes it, "" without a template.
func templateVersion(fed map[string]any) (string, error) {
	tmpl, ok, err := unstructured.NestedMap(fed, "spec", "template")
	if err != nil || !ok {
		return "", err
	}
	return md5JSON(tmpl)
}

// overridesVersion is KubeFed's override version: the md5 of
// {"overrides": spec.overrides} with KubeFed's override field order and
// omissions, "" without a spec.
func overridesVersion(fed map[string]any) (string, error) {
	spec, ok := fed["spec"].(map[string]any)
	if !ok {
		return "", nil
	}
	type clusterOverride struct {
		Op    string `json:"op,omitempty"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	type item struct {
		ClusterName      string            `json:"clusterName"`
		ClusterOverrides []clusterOverride `json:"clusterOverrides,omitempty"`
	}
	// KubeFed decodes the overrides from JSON into these types (numbers
	// become float64) before encoding them again; do the same.
	var overrides struct {
		Overrides []item `json:"overrides,omitempty"`
	}
	raw, err := json.Marshal(map[string]any{"overrides": spec["overrides"]})
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(raw, &overrides); err != nil {
		return "", fmt.Errorf("spec.overrides: %w", err)
	}
	return md5JSON(map[string]any{"overrides": overrides.Overrides})
}

// md5JSON hashes v's JSON encoding as KubeFed does (encoding/json with a
// trailing newline, as a json.Encoder writes it).
func md5JSON(v any) (string, error) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		return "", err
	}
	sum := md5.Sum(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}
