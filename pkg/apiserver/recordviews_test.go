package apiserver

import (
	"testing"

	"k8s.io/apiserver/pkg/endpoints/request"
)

// TestAnswerFor checks which requests the record views answer: GET and
// LIST of (cluster) propagated versions in JSON or as a table; writes,
// watches, other resources, subresources and protobuf or metadata reads
// go to the stored CRD alone.
func TestAnswerFor(t *testing.T) {
	pv := func(verb, resource, sub string) *request.RequestInfo {
		return &request.RequestInfo{IsResourceRequest: true, APIGroup: "core.kubefed.io", APIVersion: "v1alpha1", Verb: verb, Resource: resource, Subresource: sub}
	}
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	for _, tc := range []struct {
		name   string
		info   *request.RequestInfo
		accept string
		want   answer
	}{
		{"get in JSON", pv("get", "propagatedversions", ""), "application/json", asJSON},
		{"list without Accept", pv("list", "propagatedversions", ""), "", asJSON},
		{"list of cluster records", pv("list", "clusterpropagatedversions", ""), "*/*", asJSON},
		{"kubectl's table", pv("list", "propagatedversions", ""), table, asTable},
		{"watch", pv("watch", "propagatedversions", ""), "application/json", passThrough},
		{"create", pv("create", "propagatedversions", ""), "application/json", passThrough},
		{"status update", pv("update", "propagatedversions", "status"), "application/json", passThrough},
		{"status read", pv("get", "propagatedversions", "status"), "application/json", passThrough},
		{"another resource", pv("list", "kubefedclusters", ""), "application/json", passThrough},
		{"protobuf", pv("list", "propagatedversions", ""), "application/vnd.kubernetes.protobuf,application/json", passThrough},
		{"partial metadata", pv("list", "propagatedversions", ""), "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", passThrough},
		{"other version", &request.RequestInfo{IsResourceRequest: true, APIGroup: "core.kubefed.io", APIVersion: "v1beta1", Verb: "list", Resource: "propagatedversions"}, "", passThrough},
		{"not a resource", &request.RequestInfo{Verb: "get"}, "", passThrough},
		{"no request info", nil, "", passThrough},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := answerFor(tc.info, tc.accept); got != tc.want {
				t.Errorf("answerFor = %v, want %v", got, tc.want)
			}
		})
	}
}
