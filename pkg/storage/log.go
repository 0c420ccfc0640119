package storage

import (
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

var bridgeOnce sync.Once

// installLogBridge sends kine's logrus output through klog and strips
// request bodies from kine's failed put/txn messages: kine logs the whole
// request, which for a Secret is its plaintext value.
func installLogBridge() {
	bridgeOnce.Do(func() {
		logrus.SetOutput(io.Discard)
		logrus.SetLevel(logrus.InfoLevel)
		logrus.AddHook(klogHook{})
	})
}

type klogHook struct{}

func (klogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (klogHook) Fire(e *logrus.Entry) error {
	msg := redactKineMessage(e.Message)
	logger := klog.Background().WithName("kine")
	switch {
	case e.Level <= logrus.ErrorLevel:
		logger.Error(nil, msg)
	case e.Level == logrus.WarnLevel:
		logger.Info(msg, "level", "warning")
	case e.Level == logrus.InfoLevel:
		logger.V(2).Info(msg)
	default:
		logger.V(5).Info(msg)
	}
	return nil
}

// redactKineMessage removes the request dump from kine's "error in put %s: %v"
// and "error in txn %s: %v" messages, keeping the error text.
func redactKineMessage(msg string) string {
	for _, prefix := range []string{"error in put ", "error in txn "} {
		if !strings.HasPrefix(msg, prefix) {
			continue
		}
		errText := ""
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			errText = msg[i+2:]
		}
		return strings.TrimSpace(prefix) + " (request redacted): " + errText
	}
	return msg
}

// metricsRegisterer registers kine's collectors in the API server's
// registry, so they appear on the plane's /metrics. kine's collectors are
// package globals: a second kine in one process (tests) keeps the first's.
type metricsRegisterer struct{}

func (metricsRegisterer) Register(c prometheus.Collector) error {
	err := legacyregistry.Registerer().Register(c)
	if errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return nil
	}
	return err
}

func (m metricsRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := m.Register(c); err != nil {
			klog.ErrorS(err, "Registering kine metrics")
		}
	}
}

func (metricsRegisterer) Unregister(prometheus.Collector) bool { return false }
