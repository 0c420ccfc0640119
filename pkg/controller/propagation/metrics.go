package propagation

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/cellfed/cellfed/pkg/controller/clusters"
)

// The controller's metrics, served on /metrics beside /healthz (the
// workqueue's own metrics, depth among them, carry the type as name).
const metricsSubsystem = "cellfed_controller"

// Plane write kinds, the kind label of plane_writes_total.
const (
	WriteFinalizer       = "finalizer"
	WriteFinalizerRemove = "finalizer_remove"
	WriteRecordCreate    = "record_create"
	WriteRecordStatus    = "record_status"
	WriteRecordDelete    = "record_delete"
	WriteStatus          = "status"
)

// latencyBuckets span a fast local write (5 ms) to a stuck one (2 min).
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2, 5, 10, 30, 60, 120}

var (
	reconcileDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "reconcile_duration_seconds",
		Help:           "Time one reconcile of a federated object took, by federated type and result (ok, requeue, waiting for a member, error).",
		Buckets:        latencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"type", "result"})
	memberRequestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "member_request_duration_seconds",
		Help:           "Latency of the controller's requests to member clusters, by member (the name of the physical KubeFedCluster that reaches it) and verb.",
		Buckets:        latencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"member", "verb"})
	memberRequestErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "member_request_errors_total",
		Help:           "Requests to member clusters that failed, by member, verb and reason (the API status reason, Timeout or Unknown); a NotFound or AlreadyExists the controller expects counts too.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"member", "verb", "reason"})
	propagationLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "propagation_latency_seconds",
		Help:           "Time from the controller observing a federated object's generation to every selected member (outside the placement mask) holding it, by federated type.",
		Buckets:        latencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"type"})
	planeWrites = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "plane_writes_total",
		Help:           "Write requests the controller sent to the plane, by federated type and kind (finalizer, finalizer_remove, record_create, record_status, record_delete, status), failed ones included.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"type", "kind"})
	reflowDelay = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "status_reflow_delay_seconds",
		Help:           "Time from a member's watch event for a placed object to the federated object's status write that follows it, by federated type (--status-interval spacing included).",
		Buckets:        latencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"type"})
)

var registerOnce sync.Once

// registerMetrics adds the metrics to the legacy registry that /metrics
// serves (once per process, however many types start).
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(reconcileDuration, memberRequestDuration, memberRequestErrors, propagationLatency, planeWrites, reflowDelay)
	})
}

// since keeps (a nil since keeps nothing), per object, the first moment
// of something not yet done: a generation observed and not yet
// everywhere, or a member event not yet in the status. It keeps it in the
// object's state, in the mark pick chooses.
type since struct {
	objs *objects
	pick func(*state) *mark
}

// mark is a moment and the generation it is about; the zero mark is no
// mark.
type mark struct {
	generation int64
	at         time.Time
}

func propagatingMark(s *state) *mark { return &s.propagating }
func reflowingMark(s *state) *mark   { return &s.reflowing }

func newSince(objs *objects, pick func(*state) *mark) *since { return &since{objs: objs, pick: pick} }

// start records now for key, unless key is already waiting for the same
// generation (an older wait for another generation is replaced: the
// latency of a generation overtaken before it propagated is not taken).
func (s *since) start(key string, generation int64, now time.Time) {
	if s == nil {
		return
	}
	s.objs.update(key, func(st *state) {
		if m := s.pick(st); m.at.IsZero() || m.generation != generation {
			*m = mark{generation: generation, at: now}
		}
	})
}

// finish removes key's wait and returns how long it lasted, ok when it
// was waiting for generation (any generation when generation is -1).
func (s *since) finish(key string, generation int64, now time.Time) (d time.Duration, ok bool) {
	if s == nil {
		return 0, false
	}
	s.objs.update(key, func(st *state) {
		m := s.pick(st)
		if m.at.IsZero() || (generation >= 0 && m.generation != generation) {
			return
		}
		d, ok = now.Sub(m.at), true
		*m = mark{}
	})
	return d, ok
}

func (s *since) forget(key string) {
	if s == nil {
		return
	}
	s.objs.update(key, func(st *state) { *s.pick(st) = mark{} })
}

// instrumented is a member's resource client that times each request and
// counts its failures under the member's name.
type instrumented struct {
	dynamic.ResourceInterface
	member string
}

func (r instrumented) observe(verb string, start time.Time, err error) {
	memberRequestDuration.WithLabelValues(r.member, verb).Observe(time.Since(start).Seconds())
	if err != nil {
		memberRequestErrors.WithLabelValues(r.member, verb, errorReason(err)).Inc()
	}
}

func (r instrumented) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, sub ...string) (*unstructured.Unstructured, error) {
	start := time.Now()
	out, err := r.ResourceInterface.Create(ctx, obj, opts, sub...)
	r.observe("create", start, err)
	return out, err
}

// CreateEncoded creates obj from its encoding body, through the member's
// clusters.EncodedCreator when it is one.
func (r instrumented) CreateEncoded(ctx context.Context, obj *unstructured.Unstructured, body []byte, opts metav1.CreateOptions) (*unstructured.Unstructured, error) {
	ec, ok := r.ResourceInterface.(clusters.EncodedCreator)
	if !ok {
		return r.Create(ctx, obj, opts)
	}
	start := time.Now()
	out, err := ec.CreateEncoded(ctx, obj, body, opts)
	r.observe("create", start, err)
	return out, err
}

func (r instrumented) Update(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions, sub ...string) (*unstructured.Unstructured, error) {
	start := time.Now()
	out, err := r.ResourceInterface.Update(ctx, obj, opts, sub...)
	r.observe("update", start, err)
	return out, err
}

func (r instrumented) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, sub ...string) error {
	start := time.Now()
	err := r.ResourceInterface.Delete(ctx, name, opts, sub...)
	r.observe("delete", start, err)
	return err
}

func (r instrumented) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	start := time.Now()
	out, err := r.ResourceInterface.Get(ctx, name, opts, sub...)
	r.observe("get", start, err)
	return out, err
}

func (r instrumented) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	start := time.Now()
	out, err := r.ResourceInterface.Patch(ctx, name, pt, data, opts, sub...)
	r.observe("patch", start, err)
	return out, err
}

// errorReason is a bounded label for a failed request.
func errorReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "Timeout"
	}
	if r := apierrors.ReasonForError(err); r != metav1.StatusReasonUnknown {
		return string(r)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return strconv.Itoa(int(status.Status().Code))
	}
	return "Unknown"
}
