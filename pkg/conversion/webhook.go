package conversion

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/klog/v2"
)

// Path is where cellfed serves the conversion webhook, both built into
// cellfed-apiserver and in the standalone cellfed-webhook.
const Path = "/cellfed/convert"

// maxRequestBytes bounds a ConversionReview body. A list of thousands of
// large objects arrives as one review, so the bound is generous.
const maxRequestBytes = 256 << 20

// Handler serves apiextensions.k8s.io/v1 ConversionReviews for the
// federated types. It is stateless.
type Handler struct{}

func (Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "conversion webhook: POST a ConversionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	if err != nil {
		http.Error(w, fmt.Sprintf("conversion webhook: reading request: %v", err), http.StatusBadRequest)
		return
	}
	if len(body) > maxRequestBytes {
		http.Error(w, "conversion webhook: request larger than 256 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	out, status, err := Review(body)
	if err != nil {
		klog.V(2).InfoS("Bad conversion request", "err", err)
		http.Error(w, "conversion webhook: "+err.Error(), status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// Review answers one encoded ConversionReview. A request it cannot read is
// an error (with an HTTP status); an object it cannot convert fails the
// review with a message, as the API expects.
func Review(body []byte) ([]byte, int, error) {
	var review apiextensionsv1.ConversionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("decoding ConversionReview: %w", err)
	}
	if review.Request == nil {
		return nil, http.StatusBadRequest, fmt.Errorf("ConversionReview has no request")
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID}
	converted, err := convertAll(review.Request.Objects, review.Request.DesiredAPIVersion)
	if err != nil {
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error(), Reason: metav1.StatusReasonBadRequest, Code: http.StatusBadRequest}
	} else {
		resp.ConvertedObjects = converted
		resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	}
	out, err := json.Marshal(&apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
		Response: resp,
	})
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("encoding ConversionReview: %w", err)
	}
	return out, http.StatusOK, nil
}

func convertAll(objects []runtime.RawExtension, apiVersion string) ([]runtime.RawExtension, error) {
	out := make([]runtime.RawExtension, len(objects))
	for i, o := range objects {
		var obj map[string]any
		if err := utiljson.Unmarshal(o.Raw, &obj); err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		if err := Convert(obj, apiVersion); err != nil {
			return nil, fmt.Errorf("%s: %w", describe(obj), err)
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: encoding: %w", describe(obj), err)
		}
		out[i] = runtime.RawExtension{Raw: raw}
	}
	return out, nil
}

func describe(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	if ns != "" {
		return kind + " " + ns + "/" + name
	}
	return kind + " " + name
}
