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
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/apis/kubefed"
	typesv1b2 "github.com/cellfed/cellfed/pkg/apis/types/v1beta2"
	"github.com/cellfed/cellfed/pkg/controller/informers"
	"github.com/cellfed/cellfed/pkg/propagatedversion"
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

// versionStore keeps the records of one type in memory and in the plane.
//
// For the plane's own federated types (stored as v1beta2) the record is
// part of the object's status (status.record), written with the rest of
// the status by writeStatus: one plane write per release. The plane
// serves it as the PropagatedVersion KubeFed's tools and controller read.
// A stored PropagatedVersion (KubeFed's controller wrote it while it ran)
// is read at start and is the record until cellfed's own record is in
// the status; it is then deleted, once.
//
// For other federated types (KubeFed's v1beta1 only) the record is a
// stored PropagatedVersion or ClusterPropagatedVersion named
// <kind>-<name>, as KubeFed names them. Only a change is written.
type versionStore struct {
	plane  dynamic.Interface
	gvr    schema.GroupVersionResource
	prefix string
	// typeName labels the plane writes and owns the records in index.
	typeName string
	// inStatus: the records live in the federated objects' status. It
	// turns false for good when the type's CRD drops status.record (a
	// CRD built before it, kept until `cellfedctl enable` rewrites it).
	inStatus atomic.Bool
	// index is the process's index of records by cluster (cell counts).
	index *informers.Records

	// objs holds each object's record, in its state.
	objs *objects
}

func newVersionStore(plane dynamic.Interface, t *Type, objs *objects, index *informers.Records) *versionStore {
	gvr := kubefed.ClusterPropagatedVersionsResource
	if t.Namespaced {
		gvr = kubefed.PropagatedVersionsResource
	}
	s := &versionStore{plane: plane, gvr: gvr, prefix: strings.ToLower(t.TargetKind) + "-", typeName: t.Name, objs: objs, index: index}
	s.inStatus.Store(t.Stored.Version == typesv1b2.Version)
	return s
}

// statusDropsRecords: a status write came back without the record it
// carried. The records are stored as PropagatedVersions from now on.
func (s *versionStore) statusDropsRecords(ctx context.Context) {
	if s.inStatus.Swap(false) {
		klog.FromContext(ctx).Info("The federated type's CRD drops status.record (built before it): storing propagation records as PropagatedVersions; run `cellfedctl enable` for the type to rewrite its CRD", "type", s.typeName)
	}
}

// load reads every stored record of the type once, at start (not the
// views the plane computes from the objects' status: those are read
// with the objects).
func (s *versionStore) load(ctx context.Context) error {
	list, err := s.plane.Resource(s.gvr).List(ctx, metav1.ListOptions{LabelSelector: propagatedversion.StoredOnly})
	if err != nil {
		return fmt.Errorf("listing %s: %w", s.gvr.Resource, err)
	}
	for i := range list.Items {
		pv := &list.Items[i]
		name, ok := strings.CutPrefix(pv.GetName(), s.prefix)
		if !ok || propagatedversion.IsView(pv) {
			continue
		}
		key := name
		if ns := pv.GetNamespace(); ns != "" {
			key = ns + "/" + name
		}
		r := decodeRecord(pv)
		s.set(key, r)
	}
	return nil
}

// set keeps r as key's record (nil: none) and indexes it.
func (s *versionStore) set(key string, r *propagated) {
	s.objs.update(key, func(st *state) { st.record = r })
	var clusters []string
	if r != nil {
		clusters = slices.Collect(maps.Keys(r.clusters))
	}
	s.index.Set(s.typeName, s.indexKey(key), clusters)
}

// indexKey is key's record as the PropagatedVersion key.
func (s *versionStore) indexKey(key string) string {
	if ns, name, ok := strings.Cut(key, "/"); ok {
		return ns + "/" + s.prefix + name
	}
	return s.prefix + key
}

// queueKey reverses indexKey: the object's key, when indexKey is a
// record of this type.
func (s *versionStore) queueKey(indexKey string) (string, bool) {
	ns, rest, namespaced := strings.Cut(indexKey, "/")
	if !namespaced {
		name, ok := strings.CutPrefix(indexKey, s.prefix)
		return name, ok
	}
	name, ok := strings.CutPrefix(rest, s.prefix)
	return ns + "/" + name, ok
}

func decodeRecord(pv *unstructured.Unstructured) *propagated {
	v := propagatedversion.OfStored(pv)
	r := newRecord(v.TemplateVersion, v.OverridesVersion)
	r.clusters = v.Clusters
	r.exists, r.resourceVersion = true, pv.GetResourceVersion()
	return r
}

// get returns a copy of the record of key (empty when there is none).
// stored is the object as the cache holds it: the first time, a record
// kept in its status is read from there.
func (s *versionStore) get(key string, stored *unstructured.Unstructured) (out *propagated) {
	s.objs.read(key, func(st *state) {
		if r := st.record; r != nil {
			c := *r
			c.clusters = maps.Clone(r.clusters)
			out = &c
		}
	})
	if out != nil {
		return out
	}
	if s.inStatus.Load() && stored != nil {
		if v, ok := propagatedversion.InStatus(stored.Object); ok {
			r := newRecord(v.TemplateVersion, v.OverridesVersion)
			r.clusters = v.Clusters
			s.set(key, r)
			c := *r
			c.clusters = maps.Clone(r.clusters)
			return &c
		}
	}
	return newRecord("", "")
}

// forget drops key's record from memory (the object is gone, or let go).
func (s *versionStore) forget(key string) {
	s.objs.update(key, func(st *state) { st.record = nil })
	s.index.Set(s.typeName, s.indexKey(key), nil)
}

// forgetAll drops the index entries of every record of the type: its
// controller stops.
func (s *versionStore) forgetAll() { s.index.DropOwner(s.typeName) }

func (s *versionStore) client(namespace string) dynamic.ResourceInterface {
	if s.gvr == kubefed.PropagatedVersionsResource {
		return s.plane.Resource(s.gvr).Namespace(namespace)
	}
	return s.plane.Resource(s.gvr)
}

// save makes next key's record. Kept in the status, it is only
// remembered here: writeStatus writes it. Otherwise the stored record is
// written when it differs; a record with no clusters that was never
// stored is not written at all.
func (s *versionStore) save(ctx context.Context, key string, fed *unstructured.Unstructured, next *propagated) error {
	cur := s.get(key, nil)
	if s.inStatus.Load() {
		if cur.sameContent(next) {
			return nil
		}
		r := *next
		r.clusters = maps.Clone(next.clusters)
		r.exists, r.resourceVersion = cur.exists, cur.resourceVersion
		s.set(key, &r)
		return nil
	}
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
	s.set(key, &stored)
	return nil
}

// inStatusRecord is the record writeStatus is to write into the status of
// key's object stored, and whether the type keeps records there.
func (s *versionStore) inStatusRecord(key string, stored *unstructured.Unstructured) (propagatedversion.Versions, bool) {
	if s == nil || !s.inStatus.Load() {
		return propagatedversion.Versions{}, false
	}
	r := s.get(key, stored)
	return propagatedversion.Versions{TemplateVersion: r.templateVersion, OverridesVersion: r.overridesVersion, Clusters: r.clusters}, true
}

// superseded deletes the stored record KubeFed's controller left for key
// once the object's status carries the record (written) in its place:
// from then on the plane serves the record from the status. A record
// kept as a stored object is never superseded.
func (s *versionStore) superseded(ctx context.Context, key string, fed *unstructured.Unstructured, written propagatedversion.Versions) error {
	if s == nil || !s.inStatus.Load() {
		return nil
	}
	cur := s.get(key, nil)
	if !cur.exists {
		return nil
	}
	if !written.Equal(propagatedversion.Versions{TemplateVersion: cur.templateVersion, OverridesVersion: cur.overridesVersion, Clusters: cur.clusters}) {
		return nil
	}
	planeWrites.WithLabelValues(s.typeName, WriteRecordDelete).Inc()
	name := s.prefix + fed.GetName()
	err := s.client(fed.GetNamespace()).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s that the status record supersedes: %w", kindOf(s.gvr), name, err)
	}
	s.objs.update(key, func(st *state) {
		if st.record != nil {
			st.record.exists, st.record.resourceVersion = false, ""
		}
	})
	return nil
}

func (s *versionStore) reload(ctx context.Context, key string, c dynamic.ResourceInterface, name string) {
	pv, err := c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s.forget(key)
	case err == nil:
		s.set(key, decodeRecord(pv))
	}
}

// delete removes the stored record of a finalized object (a record in
// the status goes with the object).
func (s *versionStore) delete(ctx context.Context, key string, fed *unstructured.Unstructured) error {
	if !s.get(key, nil).exists {
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
