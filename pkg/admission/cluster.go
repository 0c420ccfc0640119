package admission

import (
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	cellv1alpha1 "github.com/cellfed/cellfed/pkg/apis/core/v1alpha1"
)

// validateCluster: the endpoint is a URL, the credentials Secret is named,
// and the naming rule holds: physical clusters are DNS labels and carry no
// per-cell labels; names with a dot are per-cell clusters whose labels say
// which cell they are for.
func (a *Admitter) validateCluster(r Request) field.ErrorList {
	var c fedv1beta1.KubeFedCluster
	if err := decodeContent(r.Object.Object, &c); err != nil {
		return decodeErrors(err)
	}
	errs := validateKubeFedClusterSpec(c)
	spec := field.NewPath("spec")
	secret := spec.Child("secretRef", "name")
	if c.Spec.SecretRef.Name == "" {
		errs = append(errs, field.Required(secret, "name the Secret (in this namespace) whose key \"token\" holds the bearer token for the member cluster"))
	} else if msgs := validation.IsDNS1123Subdomain(c.Spec.SecretRef.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(secret, c.Spec.SecretRef.Name, msgs[0]))
	}

	labels := field.NewPath("metadata", "labels")
	if ns, cell, ok := cellv1alpha1.ParseMoveClusterName(c.Name); ok {
		want := map[string]string{cellv1alpha1.LabelTopologyType: cellv1alpha1.TopologyTypeCell, cellv1alpha1.LabelNamespace: ns, cellv1alpha1.LabelCell: cell}
		for k, v := range want {
			if c.Labels[k] != v {
				errs = append(errs, field.Invalid(labels.Key(k), c.Labels[k], fmt.Sprintf("%q is the move cluster of cell %s/%s and must be labelled %s=%s", c.Name, ns, cell, k, v)))
			}
		}
		if v := c.Labels[cellv1alpha1.LabelMove]; v != cellv1alpha1.MoveCopy && v != cellv1alpha1.MoveUndo {
			errs = append(errs, field.NotSupported(labels.Key(cellv1alpha1.LabelMove), v, []string{cellv1alpha1.MoveCopy, cellv1alpha1.MoveUndo}))
		}
		return errs
	}
	if _, set := c.Labels[cellv1alpha1.LabelMove]; set {
		errs = append(errs, field.Forbidden(labels.Key(cellv1alpha1.LabelMove), "reserved for the move clusters of moving cells (<namespace>.<cell>.move); move a cell with cellfedctl cell move"))
	}
	if ns, cell, ok := cellv1alpha1.ParseCellClusterName(c.Name); ok {
		want := map[string]string{cellv1alpha1.LabelTopologyType: cellv1alpha1.TopologyTypeCell, cellv1alpha1.LabelNamespace: ns, cellv1alpha1.LabelCell: cell}
		for k, v := range want {
			if c.Labels[k] != v {
				errs = append(errs, field.Invalid(labels.Key(k), c.Labels[k], fmt.Sprintf("%q is the per-cell cluster of cell %s/%s and must be labelled %s=%s (names with a dot are reserved for per-cell clusters)", c.Name, ns, cell, k, v)))
			}
		}
		return errs
	}
	if !cellv1alpha1.IsDNSLabel(c.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, "physical cluster names are DNS labels (lowercase letters, digits and '-', no dots: names with a dot are reserved for per-cell clusters)"))
	}
	for _, k := range []string{cellv1alpha1.LabelTopologyType, cellv1alpha1.LabelNamespace, cellv1alpha1.LabelCell} {
		if _, set := c.Labels[k]; set {
			errs = append(errs, field.Forbidden(labels.Key(k), "reserved for per-cell clusters: a physical cluster with this label would be selected as a cell"))
		}
	}
	return errs
}

func validateURL(path *field.Path, s string, required bool) field.ErrorList {
	if s == "" {
		if required {
			return field.ErrorList{field.Required(path, "the member cluster's API server URL, e.g. https://10.0.0.1:6443")}
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return field.ErrorList{field.Invalid(path, s, fmt.Sprintf("not a URL (%v); use an absolute URL with scheme and host, e.g. https://10.0.0.1:6443", err))}
	}
	if (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "socks5") || u.Host == "" {
		return field.ErrorList{field.Invalid(path, s, "must be an absolute URL with scheme and host, e.g. https://10.0.0.1:6443")}
	}
	return nil
}
