package clusters

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// A member's creates and updates are read back for the written object's
// version only (the propagation record keeps it): the member answers them
// with the object's metadata in protobuf (a PartialObjectMetadata), and
// the controller decodes that, not the object in JSON. A member that
// cannot transform its answer sends the object in JSON, read the same.

// metadataAccept asks for a PartialObjectMetadata, in protobuf first.
const metadataAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1," +
	"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// writesClient is a dynamic client whose Create and Update answer with
// the written object's metadata (writtenMeta); everything else is the
// dynamic client's.
type writesClient struct {
	dynamic.Interface
	meta rest.Interface // speaks protobuf and JSON for meta.k8s.io
}

// newWritesClient builds the writes client of cfg on httpClient's
// connections.
func newWritesClient(cfg *rest.Config, dyn dynamic.Interface, httpClient *http.Client) (dynamic.Interface, error) {
	mc := metadata.ConfigFor(cfg)
	mc.GroupVersion = &schema.GroupVersion{} // options are encoded as meta.k8s.io's
	mc.APIPath = "/unused"                   // every request has an absolute path
	meta, err := rest.RESTClientForConfigAndClient(mc, httpClient)
	if err != nil {
		return nil, fmt.Errorf("member writes client: %w", err)
	}
	return writesClient{Interface: dyn, meta: meta}, nil
}

func (c writesClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	all := c.Interface.Resource(gvr)
	return writesResource{writes: writes{ResourceInterface: all, w: writer{meta: c.meta, gvr: gvr}}, all: all}
}

// writesResource is a resource's writes client, cluster-wide or, through
// Namespace, in one namespace.
type writesResource struct {
	writes
	all dynamic.NamespaceableResourceInterface
}

func (r writesResource) Namespace(ns string) dynamic.ResourceInterface {
	w := r.w
	w.namespace = ns
	return writes{ResourceInterface: r.all.Namespace(ns), w: w}
}

// writes is the dynamic client of one resource in one scope, its creates
// and updates sent by w.
type writes struct {
	dynamic.ResourceInterface
	w writer
}

func (r writes) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, sub ...string) (*unstructured.Unstructured, error) {
	body, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", r.w.gvr.Resource, obj.GetName(), err)
	}
	return r.w.create(ctx, obj, body, opts, sub)
}

func (r writes) Update(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions, sub ...string) (*unstructured.Unstructured, error) {
	return r.w.update(ctx, obj, opts, sub)
}

// EncodedCreator creates an object from the JSON encoding its caller
// made (obj encoded): one encoding for every member the same object is
// created in. A member's Writes client's resources are EncodedCreators.
type EncodedCreator interface {
	CreateEncoded(ctx context.Context, obj *unstructured.Unstructured, body []byte, opts metav1.CreateOptions) (*unstructured.Unstructured, error)
}

func (r writes) CreateEncoded(ctx context.Context, obj *unstructured.Unstructured, body []byte, opts metav1.CreateOptions) (*unstructured.Unstructured, error) {
	return r.w.create(ctx, obj, body, opts, nil)
}

// writer sends creates and updates of one resource in one namespace.
type writer struct {
	meta      rest.Interface
	gvr       schema.GroupVersionResource
	namespace string
}

func (w writer) path(name string, sub []string) []string {
	p := []string{"api"}
	if w.gvr.Group != "" {
		p = []string{"apis", w.gvr.Group}
	}
	p = append(p, w.gvr.Version)
	if w.namespace != "" {
		p = append(p, "namespaces", w.namespace)
	}
	p = append(p, w.gvr.Resource)
	if name != "" {
		p = append(p, name)
	}
	return append(p, sub...)
}

func (w writer) create(ctx context.Context, obj *unstructured.Unstructured, body []byte, opts metav1.CreateOptions, sub []string) (*unstructured.Unstructured, error) {
	name := ""
	if len(sub) > 0 {
		name = obj.GetName()
		if name == "" {
			return nil, fmt.Errorf("creating a subresource needs the object's name")
		}
	}
	return w.send(ctx, w.meta.Post().AbsPath(w.path(name, sub)...).
		SpecificallyVersionedParams(&opts, metav1.ParameterCodec, metav1.SchemeGroupVersion), obj, body)
}

func (w writer) update(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions, sub []string) (*unstructured.Unstructured, error) {
	if obj.GetName() == "" {
		return nil, fmt.Errorf("updating %s needs the object's name", w.gvr.Resource)
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", w.gvr.Resource, obj.GetName(), err)
	}
	return w.send(ctx, w.meta.Put().AbsPath(w.path(obj.GetName(), sub)...).
		SpecificallyVersionedParams(&opts, metav1.ParameterCodec, metav1.SchemeGroupVersion), obj, body)
}

// send sends obj's JSON body with req, asking for its metadata back.
func (w writer) send(ctx context.Context, req *rest.Request, obj *unstructured.Unstructured, body []byte) (*unstructured.Unstructured, error) {
	return writtenMeta(obj, req.SetHeader("Content-Type", "application/json").SetHeader("Accept", metadataAccept).Body(body).Do(ctx))
}

// writtenMeta reads a write's answer: the written object's identity and
// versions (name, namespace, uid, resourceVersion, generation) as an
// unstructured object of obj's kind, nothing else of it.
func writtenMeta(obj *unstructured.Unstructured, res rest.Result) (*unstructured.Unstructured, error) {
	if err := res.Error(); err != nil {
		return nil, err
	}
	var p metav1.PartialObjectMetadata
	err := res.Into(&p)
	if runtime.IsNotRegisteredError(err) {
		// The whole object, in JSON: a member (or a front) that does not
		// transform answers.
		raw, rawErr := res.Raw()
		if rawErr != nil {
			return nil, rawErr
		}
		p = metav1.PartialObjectMetadata{}
		err = json.Unmarshal(raw, &p)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding the member's answer to a write of %s: %w", obj.GetName(), err)
	}
	if p.Name == "" && p.UID == "" {
		return nil, fmt.Errorf("the member's answer to a write of %s names no object", obj.GetName())
	}
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": obj.GetAPIVersion(), "kind": obj.GetKind()}}
	out.SetName(p.Name)
	out.SetNamespace(p.Namespace)
	out.SetUID(p.UID)
	out.SetResourceVersion(p.ResourceVersion)
	if p.Generation != 0 {
		out.SetGeneration(p.Generation)
	}
	return out, nil
}
