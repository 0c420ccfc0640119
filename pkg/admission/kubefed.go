package admission

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	fedv1beta1 "sigs.k8s.io/kubefed/pkg/apis/core/v1beta1"

	"github.com/cellfed/cellfed/pkg/annotationrules"
	"github.com/cellfed/cellfed/pkg/placement/division"
)

// KubeFed's admission for its own objects (its webhook in
// pkg/controller/webhook and the rules of pkg/apis/core/v1beta1/validation,
// whose package does not build with current Kubernetes modules): the same
// required fields, enum values, durations and feature-gate names, and the
// same KubeFedConfig defaults. Messages add how to fix what is wrong.

var (
	typeConfigKind    = fedv1beta1.SchemeGroupVersion.WithKind("FederatedTypeConfig").GroupKind()
	kubeFedConfigKind = fedv1beta1.SchemeGroupVersion.WithKind("KubeFedConfig").GroupKind()
)

func (r Request) isTypeConfig() bool    { return r.Kind.GroupKind() == typeConfigKind }
func (r Request) isKubeFedConfig() bool { return r.Kind.GroupKind() == kubeFedConfigKind }

// KubeFed's defaults for a KubeFedConfig (pkg/apis/core/v1beta1/defaults).
const (
	defaultAvailableDelay          = 20 * time.Second
	defaultUnavailableDelay        = 60 * time.Second
	defaultCacheSyncTimeout        = 5 * time.Minute
	defaultLeaseDuration           = 15 * time.Second
	defaultRenewDeadline           = 10 * time.Second
	defaultRetryPeriod             = 5 * time.Second
	defaultHealthPeriod            = 10 * time.Second
	defaultHealthTimeout           = 3 * time.Second
	defaultHealthFailureThreshold  = 3
	defaultHealthSuccessThreshold  = 1
	defaultMaxConcurrentReconciles = 1
)

// kubeFedFeatureGates are KubeFed v0.10.0's feature gates and defaults.
var kubeFedFeatureGates = map[string]bool{
	"PushReconciler":              true,
	"SchedulerPreferences":        true,
	"RawResourceStatusCollection": false,
}

// defaultKubeFedConfig fills in what a KubeFedConfig leaves out, as
// KubeFed's mutating webhook does. It reports whether it changed content.
func defaultKubeFedConfig(content map[string]any) (bool, error) {
	var c fedv1beta1.KubeFedConfig
	if err := decodeContent(content, &c); err != nil {
		return false, err
	}
	s := &c.Spec
	dur := func(p **metav1.Duration, d time.Duration) {
		if *p == nil {
			*p = &metav1.Duration{Duration: d}
		}
	}
	num := func(p **int64, n int64) {
		if *p == nil {
			*p = &n
		}
	}
	if s.ControllerDuration == nil {
		s.ControllerDuration = &fedv1beta1.DurationConfig{}
	}
	dur(&s.ControllerDuration.AvailableDelay, defaultAvailableDelay)
	dur(&s.ControllerDuration.UnavailableDelay, defaultUnavailableDelay)
	dur(&s.ControllerDuration.CacheSyncTimeout, defaultCacheSyncTimeout)
	if s.LeaderElect == nil {
		s.LeaderElect = &fedv1beta1.LeaderElectConfig{}
	}
	if s.LeaderElect.ResourceLock == nil {
		lock := fedv1beta1.ConfigMapsResourceLock
		s.LeaderElect.ResourceLock = &lock
	}
	dur(&s.LeaderElect.RetryPeriod, defaultRetryPeriod)
	dur(&s.LeaderElect.RenewDeadline, defaultRenewDeadline)
	dur(&s.LeaderElect.LeaseDuration, defaultLeaseDuration)
	for _, name := range slices.Sorted(maps.Keys(kubeFedFeatureGates)) {
		if !slices.ContainsFunc(s.FeatureGates, func(g fedv1beta1.FeatureGatesConfig) bool { return g.Name == name }) {
			conf := fedv1beta1.ConfigurationDisabled
			if kubeFedFeatureGates[name] {
				conf = fedv1beta1.ConfigurationEnabled
			}
			s.FeatureGates = append(s.FeatureGates, fedv1beta1.FeatureGatesConfig{Name: name, Configuration: conf})
		}
	}
	slices.SortStableFunc(s.FeatureGates, func(a, b fedv1beta1.FeatureGatesConfig) int { return strings.Compare(a.Name, b.Name) })
	if s.ClusterHealthCheck == nil {
		s.ClusterHealthCheck = &fedv1beta1.ClusterHealthCheckConfig{}
	}
	dur(&s.ClusterHealthCheck.Period, defaultHealthPeriod)
	dur(&s.ClusterHealthCheck.Timeout, defaultHealthTimeout)
	num(&s.ClusterHealthCheck.FailureThreshold, defaultHealthFailureThreshold)
	num(&s.ClusterHealthCheck.SuccessThreshold, defaultHealthSuccessThreshold)
	if s.SyncController == nil {
		s.SyncController = &fedv1beta1.SyncControllerConfig{}
	}
	num(&s.SyncController.MaxConcurrentReconciles, defaultMaxConcurrentReconciles)
	if s.SyncController.AdoptResources == nil {
		adopt := fedv1beta1.AdoptResourcesEnabled
		s.SyncController.AdoptResources = &adopt
	}
	if s.StatusController == nil {
		s.StatusController = &fedv1beta1.StatusControllerConfig{}
	}
	num(&s.StatusController.MaxConcurrentReconciles, defaultMaxConcurrentReconciles)

	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return false, err
	}
	if before, _ := content["spec"].(map[string]any); reflect.DeepEqual(before, spec) {
		return false, nil
	}
	content["spec"] = spec
	return true, nil
}

// enum checks a required value against its accepted values.
func enum(path *field.Path, value string, accepted ...string) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "one of "+strings.Join(accepted, ", "))}
	}
	if !slices.Contains(accepted, value) {
		return field.ErrorList{field.NotSupported(path, value, accepted)}
	}
	return nil
}

// validateTypeConfig: the name is <plural>(.<group>) of the target, the
// target and federated types are complete API resources, the federated
// type's group has a dot, and the enums hold.
func validateTypeConfig(r Request) field.ErrorList {
	var c fedv1beta1.FederatedTypeConfig
	if err := decodeContent(r.Object.Object, &c); err != nil {
		return decodeErrors(err)
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	tt := c.Spec.TargetType
	want := tt.PluralName
	if tt.Group != "" {
		want += "." + tt.Group
	}
	if c.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, fmt.Sprintf("name must be 'TARGET_PLURAL_NAME(.TARGET_GROUP_NAME)': %q for this targetType", want)))
	}
	errs = append(errs, validateAPIResource(spec.Child("targetType"), tt)...)
	errs = append(errs, enum(spec.Child("propagation"), string(c.Spec.Propagation), string(fedv1beta1.PropagationEnabled), string(fedv1beta1.PropagationDisabled))...)
	errs = append(errs, validateFederatedAPIResource(spec.Child("federatedType"), c.Spec.FederatedType)...)
	if c.Spec.StatusType != nil {
		errs = append(errs, validateFederatedAPIResource(spec.Child("statusType"), *c.Spec.StatusType)...)
	}
	if c.Spec.StatusCollection != nil {
		errs = append(errs, enum(spec.Child("statusCollection"), string(*c.Spec.StatusCollection), string(fedv1beta1.StatusCollectionEnabled), string(fedv1beta1.StatusCollectionDisabled))...)
	}
	errs = append(errs, validateReplicasPath(spec.Child(division.ReplicasPathField), r.Object.Object)...)
	return append(errs, validatePropagatingAnnotations(spec.Child(annotationrules.Field), r.Object.Object)...)
}

// validateReplicasPath checks cellfed's extension of the
// FederatedTypeConfig naming where the target keeps its replicas.
func validateReplicasPath(path *field.Path, content map[string]any) field.ErrorList {
	raw, found, _ := unstructured.NestedFieldNoCopy(content, "spec", division.ReplicasPathField)
	if !found || raw == nil {
		return nil
	}
	p, ok := raw.(string)
	if !ok {
		return field.ErrorList{field.Invalid(path, raw, "must be a JSON pointer to the target's replicas, e.g. /spec/replicas")}
	}
	if err := division.ValidateReplicasPath(p); err != nil {
		return field.ErrorList{field.Invalid(path, p, err.Error())}
	}
	return nil
}

// validatePropagatingAnnotations checks cellfed's extension of the
// FederatedTypeConfig: a list of annotation key patterns, each once.
func validatePropagatingAnnotations(path *field.Path, content map[string]any) field.ErrorList {
	raw, found, _ := unstructured.NestedFieldNoCopy(content, "spec", annotationrules.Field)
	if !found || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		return field.ErrorList{field.Invalid(path, raw, "must be a list of annotation key patterns, e.g. [\"service.beta.kubernetes.io/*\"]")}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, v := range list {
		p, ok := v.(string)
		if !ok {
			errs = append(errs, field.Invalid(path.Index(i), v, "must be a string"))
			continue
		}
		if err := annotationrules.ValidatePattern(p); err != nil {
			errs = append(errs, field.Invalid(path.Index(i), p, err.Error()))
		}
		if seen[p] {
			errs = append(errs, field.Duplicate(path.Index(i), p))
		}
		seen[p] = true
	}
	return errs
}

func validateFederatedAPIResource(path *field.Path, t fedv1beta1.APIResource) field.ErrorList {
	var errs field.ErrorList
	switch {
	case t.Group == "":
		errs = append(errs, field.Required(path.Child("group"), "the federated type's API group, e.g. types.kubefed.io"))
	case !strings.Contains(t.Group, "."):
		errs = append(errs, field.Invalid(path.Child("group"), t.Group, "should be a domain with at least one dot, e.g. types.kubefed.io"))
	}
	return append(errs, validateAPIResource(path, t)...)
}

func validateAPIResource(path *field.Path, t fedv1beta1.APIResource) field.ErrorList {
	var errs field.ErrorList
	if t.Group != "" {
		if msgs := validation.IsDNS1123Subdomain(t.Group); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Child("group"), t.Group, strings.Join(msgs, ", ")))
		}
	}
	label := func(child, value, example string, lower bool) {
		p := path.Child(child)
		v := value
		if lower {
			v = strings.ToLower(v)
		}
		switch {
		case value == "":
			errs = append(errs, field.Required(p, "e.g. "+example))
		case len(validation.IsDNS1035Label(v)) > 0:
			errs = append(errs, field.Invalid(p, value, strings.Join(validation.IsDNS1035Label(v), ", ")))
		}
	}
	label("version", t.Version, "v1", false)
	label("kind", t.Kind, "Deployment", true)
	label("pluralName", t.PluralName, "deployments", false)
	return append(errs, enum(path.Child("scope"), string(t.Scope), string(apiextensionsv1.ClusterScoped), string(apiextensionsv1.NamespaceScoped))...)
}

// validateKubeFedClusterSpec holds KubeFed's rules: an endpoint client-go
// can use (http or https, scheme optional, a valid port), a proxy URL with
// a known scheme, a Secret name, and TLS validations from the list, "*"
// alone.
func validateKubeFedClusterSpec(c fedv1beta1.KubeFedCluster) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if c.Spec.APIEndpoint == "" {
		errs = append(errs, field.Required(spec.Child("apiEndpoint"), "the member cluster's API server URL, e.g. https://10.0.0.1:6443"))
	} else if u, _, err := rest.DefaultServerURL(c.Spec.APIEndpoint, "", schema.GroupVersion{}, true); err != nil {
		errs = append(errs, field.Invalid(spec.Child("apiEndpoint"), c.Spec.APIEndpoint, err.Error()+"; use a URL such as https://10.0.0.1:6443"))
	} else {
		errs = append(errs, enum(spec.Child("apiEndpoint"), u.Scheme, "http", "https")...)
		if port := u.Port(); port != "" {
			n, err := strconv.Atoi(port)
			if err != nil {
				errs = append(errs, field.Invalid(spec.Child("apiEndpoint"), c.Spec.APIEndpoint, "the port is not a number"))
			} else if msgs := validation.IsValidPortNum(n); len(msgs) > 0 {
				errs = append(errs, field.Invalid(spec.Child("apiEndpoint"), c.Spec.APIEndpoint, strings.Join(msgs, ", ")))
			}
		}
	}
	if c.Spec.ProxyURL != "" {
		errs = append(errs, validateURL(spec.Child("proxyURL"), c.Spec.ProxyURL, false)...)
	}
	all := false
	for i, v := range c.Spec.DisabledTLSValidations {
		all = all || v == fedv1beta1.TLSAll
		errs = append(errs, enum(spec.Child("disabledTLSValidations").Index(i), string(v), string(fedv1beta1.TLSAll), string(fedv1beta1.TLSSubjectName), string(fedv1beta1.TLSValidityPeriod))...)
	}
	if all && len(c.Spec.DisabledTLSValidations) > 1 {
		errs = append(errs, field.Invalid(spec.Child("disabledTLSValidations"), c.Spec.DisabledTLSValidations, "when * is specified, it is expected to be the only option in list"))
	}
	return errs
}

// validateKubeFedConfig holds KubeFed's rules, after defaulting: the
// scope (immutable), positive durations and counts, a lease longer than
// the renew deadline and a renew deadline longer than the jittered retry
// period, known resource locks and feature gates, each gate once.
func validateKubeFedConfig(r Request) field.ErrorList {
	var c fedv1beta1.KubeFedConfig
	if err := decodeContent(r.Object.Object, &c); err != nil {
		return decodeErrors(err)
	}
	s := c.Spec
	spec := field.NewPath("spec")
	errs := enum(spec.Child("scope"), string(s.Scope), string(apiextensionsv1.ClusterScoped), string(apiextensionsv1.NamespaceScoped))
	if r.Operation == Update && r.OldObject != nil {
		var old fedv1beta1.KubeFedConfig
		if decodeContent(r.OldObject.Object, &old) == nil && old.Spec.Scope != s.Scope {
			errs = append(errs, field.Invalid(spec.Child("scope"), s.Scope, fmt.Sprintf("field is immutable (it is %q): delete and recreate the KubeFedConfig to change the scope", old.Spec.Scope)))
		}
	}
	positive := func(path *field.Path, d *metav1.Duration) {
		switch {
		case d == nil:
			errs = append(errs, field.Required(path, "a duration such as 10s"))
		case d.Duration <= 0:
			errs = append(errs, field.Invalid(path, d.Duration.String(), "should be greater than 0"))
		}
	}
	count := func(path *field.Path, n *int64) {
		switch {
		case n == nil:
			errs = append(errs, field.Required(path, "a number greater than 0"))
		case *n <= 0:
			errs = append(errs, field.Invalid(path, *n, "should be greater than 0"))
		}
	}
	if d := s.ControllerDuration; d == nil {
		errs = append(errs, field.Required(spec.Child("controllerDuration"), ""))
	} else {
		p := spec.Child("controllerDuration")
		positive(p.Child("availableDelay"), d.AvailableDelay)
		positive(p.Child("unavailableDelay"), d.UnavailableDelay)
		positive(p.Child("cacheSyncTimeout"), d.CacheSyncTimeout)
	}
	if e := s.LeaderElect; e == nil {
		errs = append(errs, field.Required(spec.Child("leaderElect"), ""))
	} else {
		p := spec.Child("leaderElect")
		positive(p.Child("leaseDuration"), e.LeaseDuration)
		positive(p.Child("renewDeadline"), e.RenewDeadline)
		positive(p.Child("retryPeriod"), e.RetryPeriod)
		if e.LeaseDuration != nil && e.RenewDeadline != nil && e.LeaseDuration.Duration <= e.RenewDeadline.Duration {
			errs = append(errs, field.Invalid(p.Child("leaseDuration"), e.LeaseDuration.Duration.String(), "leaseDuration must be greater than renewDeadline"))
		}
		if e.RenewDeadline != nil && e.RetryPeriod != nil && e.RenewDeadline.Duration <= time.Duration(float64(e.RetryPeriod.Duration)*leaderelection.JitterFactor) {
			errs = append(errs, field.Invalid(p.Child("renewDeadline"), e.RenewDeadline.Duration.String(), fmt.Sprintf("renewDeadline must be greater than retryPeriod*JitterFactor(%.1f)", leaderelection.JitterFactor)))
		}
		if e.ResourceLock == nil {
			errs = append(errs, field.Required(p.Child("resourceLock"), "configmaps or endpoints"))
		} else {
			errs = append(errs, enum(p.Child("resourceLock"), string(*e.ResourceLock), string(fedv1beta1.ConfigMapsResourceLock), string(fedv1beta1.EndpointsResourceLock))...)
		}
	}
	if s.FeatureGates == nil {
		errs = append(errs, field.Required(spec.Child("featureGates"), ""))
	}
	seen := map[string]bool{}
	for i, g := range s.FeatureGates {
		p := spec.Child("featureGates").Index(i)
		if seen[g.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), g.Name))
			continue
		}
		seen[g.Name] = true
		errs = append(errs, enum(p.Child("name"), g.Name, slices.Sorted(maps.Keys(kubeFedFeatureGates))...)...)
		errs = append(errs, enum(p.Child("configuration"), string(g.Configuration), string(fedv1beta1.ConfigurationEnabled), string(fedv1beta1.ConfigurationDisabled))...)
	}
	if h := s.ClusterHealthCheck; h == nil {
		errs = append(errs, field.Required(spec.Child("clusterHealthCheck"), ""))
	} else {
		p := spec.Child("clusterHealthCheck")
		positive(p.Child("period"), h.Period)
		count(p.Child("failureThreshold"), h.FailureThreshold)
		count(p.Child("successThreshold"), h.SuccessThreshold)
		positive(p.Child("timeout"), h.Timeout)
	}
	switch sc := s.SyncController; {
	case sc == nil:
		errs = append(errs, field.Required(spec.Child("syncController"), ""))
	case sc.AdoptResources == nil:
		errs = append(errs, field.Required(spec.Child("syncController", "adoptResources"), "Enabled or Disabled"))
	default:
		count(spec.Child("syncController", "maxConcurrentReconciles"), sc.MaxConcurrentReconciles)
		errs = append(errs, enum(spec.Child("syncController", "adoptResources"), string(*sc.AdoptResources), string(fedv1beta1.AdoptResourcesEnabled), string(fedv1beta1.AdoptResourcesDisabled))...)
	}
	if sc := s.StatusController; sc == nil {
		errs = append(errs, field.Required(spec.Child("statusController"), ""))
	} else {
		count(spec.Child("statusController", "maxConcurrentReconciles"), sc.MaxConcurrentReconciles)
	}
	return errs
}
