package e2e

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The widget fixture: a CRD with two versions whose only difference is a
// renamed field (v1 spec.size, v2 spec.replicas), converted by a webhook
// reached through a url: client config, as the plane has no Services.
const widgetGroup = "fixtures.cellfed.io"

// startWidgetConverter serves the conversion webhook over TLS and returns it.
func startWidgetConverter(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("bad ConversionReview: %v", err), http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			obj, err := convertWidget(raw.Raw, review.Request.DesiredAPIVersion)
			if err != nil {
				resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
				break
			}
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: obj})
		}
		review.Response, review.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func convertWidget(raw []byte, desired string) ([]byte, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	from, to := "size", "replicas"
	if desired == widgetGroup+"/v1" {
		from, to = "replicas", "size"
	}
	if v, found, _ := unstructured.NestedFieldCopy(u.Object, "spec", from); found {
		unstructured.RemoveNestedField(u.Object, "spec", from)
		if err := unstructured.SetNestedField(u.Object, v, "spec", to); err != nil {
			return nil, err
		}
	}
	u.SetAPIVersion(desired)
	return u.MarshalJSON()
}

func widgetCRD(webhook *httptest.Server) string {
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: webhook.Certificate().Raw})
	schema := func(field string) string {
		return fmt.Sprintf(`
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                %s: {type: integer}`, field)
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1"]
      clientConfig:
        url: %[2]s/convert
        caBundle: %[3]s
  versions:
    - name: v1
      served: true
      storage: true%[4]s
    - name: v2
      served: true
      storage: false%[5]s
`, widgetGroup, webhook.URL, base64.StdEncoding.EncodeToString(caPEM), schema("size"), schema("replicas"))
}

func widget(version, name, field string, value int) string {
	return fmt.Sprintf(`apiVersion: %s/%s
kind: Widget
metadata: {name: %s, namespace: demo}
spec: {%s: %d}
`, widgetGroup, version, name, field, value)
}
