package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/conversion"
)

// Paths of the admission webhook in cellfed-webhook.
const (
	MutatePath   = "/cellfed/admission/mutate"
	ValidatePath = "/cellfed/admission/validate"
)

// maxReviewBytes bounds an AdmissionReview body (objects are at most a few
// MiB; the API server's own limit is 3 MiB).
const maxReviewBytes = 16 << 20

// Handler serves admission.k8s.io/v1 AdmissionReviews: Mutate answers with
// a JSON patch of the labels it sets, otherwise it validates.
type Handler struct {
	Admitter *Admitter
	Mutate   bool
	// Ready says whether the Admitter's caches are loaded.
	Ready func() bool
}

func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "admission webhook: POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
	if err != nil || len(body) > maxReviewBytes {
		http.Error(w, "admission webhook: unreadable or too large request", http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "admission webhook: not an AdmissionReview", http.StatusBadRequest)
		return
	}
	resp := h.review(review.Request)
	resp.UID = review.Request.UID
	out, err := json.Marshal(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	if err != nil {
		http.Error(w, "admission webhook: encoding response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func (h Handler) review(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	kind := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	if !Handles(kind.GroupKind()) {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	if h.Ready != nil && !h.Ready() {
		return deny(apierrors.NewServiceUnavailable("cellfed admission is still loading cells and clusters; retry in a moment"))
	}
	r := Request{
		Operation:   Operation(req.Operation),
		Kind:        kind,
		Resource:    schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource},
		Namespace:   req.Namespace,
		Name:        req.Name,
		SubResource: req.SubResource,
		User:        req.UserInfo.Username,
		Groups:      req.UserInfo.Groups,
	}
	if len(req.Options.Raw) > 0 {
		var opts struct {
			FieldManager string `json:"fieldManager"`
		}
		if err := json.Unmarshal(req.Options.Raw, &opts); err != nil {
			return deny(apierrors.NewBadRequest("admission review: decoding the request's options: " + err.Error()))
		}
		r.FieldManager = opts.FieldManager
	}
	var err error
	if r.Object, err = decodeObject(req.Object.Raw); err != nil {
		return deny(apierrors.NewBadRequest(err.Error()))
	}
	if r.OldObject, err = decodeObject(req.OldObject.Raw); err != nil {
		return deny(apierrors.NewBadRequest(err.Error()))
	}
	if !h.Mutate {
		if err := h.Admitter.Validate(r); err != nil {
			return deny(err)
		}
		warnings, err := h.Admitter.Warnings(r)
		if err != nil {
			klog.ErrorS(err, "Computing admission warnings", "kind", r.Kind.Kind, "name", r.Name)
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings}
	}
	if r.Object == nil {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	before := r.Object.GetLabels()
	finsBefore := r.Object.GetFinalizers()
	selBefore, _, _ := unstructured.NestedFieldCopy(r.Object.Object, "spec", "placement", "clusterSelector")
	specBefore := runtime.DeepCopyJSONValue(r.Object.Object["spec"])
	if err := h.Admitter.Mutate(r); err != nil {
		return deny(err)
	}
	// "add" replaces an existing member (RFC 6902), so one operation sets
	// a whole map whether or not the object had it.
	var ops []map[string]any
	if after := r.Object.GetLabels(); !maps.Equal(before, after) {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": after})
	}
	if after := r.Object.GetFinalizers(); !slices.Equal(finsBefore, after) {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/finalizers", "value": after})
	}
	if selAfter, _, _ := unstructured.NestedFieldNoCopy(r.Object.Object, "spec", "placement", "clusterSelector"); !reflect.DeepEqual(selBefore, selAfter) {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/placement/clusterSelector", "value": selAfter})
	}
	if _, ok := r.Object.Object[conversion.FieldStashChanged]; ok {
		ops = append(ops, map[string]any{"op": "add", "path": "/" + conversion.FieldStashChanged, "value": true})
	}
	if r.isKubeFedConfig() && !reflect.DeepEqual(specBefore, r.Object.Object["spec"]) {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec", "value": r.Object.Object["spec"]})
	}
	if len(ops) == 0 {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return deny(apierrors.NewInternalError(err))
	}
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &pt}
}

func decodeObject(raw []byte) (*unstructured.Unstructured, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decoding object: %w", err)
	}
	return u, nil
}

func deny(err error) *admissionv1.AdmissionResponse {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	klog.V(2).InfoS("Admission denied", "reason", s.Reason, "message", s.Message)
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &s}
}
