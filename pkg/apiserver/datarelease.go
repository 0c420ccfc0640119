package apiserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/cellfed/cellfed/pkg/version"
)

// The plane's database records which releases served it, in the
// ConfigMap kube-system/cellfed-data-release: the newest release, and the
// oldest release that reads what they stored (version.DataReadableFrom of
// each). A plane older than that refuses to start, before it writes
// anything: a rollback past what the data allows is refused, not lossy
// (docs/operations.md, "Upgrades").
const (
	dataReleaseConfigMap = "cellfed-data-release"
	dataReleaseNewest    = "newest"
	dataReleaseReadable  = "readableFrom"
	dataReleaseKey       = "/registry/configmaps/" + metav1.NamespaceSystem + "/" + dataReleaseConfigMap
)

func dataReleaseOf(cm *corev1.ConfigMap) version.DataRelease {
	return version.DataRelease{Newest: cm.Data[dataReleaseNewest], ReadableFrom: cm.Data[dataReleaseReadable]}
}

// checkDataRelease reads the record from the database before the API
// server starts and refuses a release too old for the data.
func checkDataRelease(ctx context.Context, raw *clientv3.Client) error {
	resp, err := raw.Get(ctx, dataReleaseKey)
	if err != nil {
		return fmt.Errorf("reading %s/%s from the database: %w", metav1.NamespaceSystem, dataReleaseConfigMap, err)
	}
	if len(resp.Kvs) == 0 {
		return nil // a new database, or one no release recorded itself in
	}
	value := resp.Kvs[0].Value
	if strings.HasPrefix(string(value), "k8s:enc:") {
		klog.InfoS("Not checking which releases stored this database's data: its ConfigMaps are encrypted at rest", "configMap", dataReleaseKey)
		return nil
	}
	obj, _, err := legacyscheme.Codecs.UniversalDeserializer().Decode(value, nil, &corev1.ConfigMap{})
	if err != nil {
		klog.ErrorS(err, "Cannot decode the record of the releases that stored this database's data; it is replaced", "configMap", dataReleaseKey)
		return nil
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil
	}
	_, _, err = version.DecideDataRelease(dataReleaseOf(cm), version.Own(), ownReadableFrom())
	return err
}

func ownReadableFrom() *utilversion.Version {
	return utilversion.MustParseSemantic(version.DataReadableFrom)
}

// recordDataRelease is a post-start hook: it records this release in the
// ConfigMap (the newer of each field wins, so replicas of two releases
// agree), retrying until it is written or the server stops.
func recordDataRelease(hookCtx genericapiserver.PostStartHookContext) error {
	cfg := rest.CopyConfig(hookCtx.LoopbackClientConfig)
	cfg.UserAgent = "cellfed-data-release"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("data release: %w", err)
	}
	cms := kube.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	go func() {
		err := wait.PollUntilContextCancel(hookCtx, time.Second, true, func(ctx context.Context) (bool, error) {
			cm, err := cms.Get(ctx, dataReleaseConfigMap, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				cm, err = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: dataReleaseConfigMap, Namespace: metav1.NamespaceSystem,
					Annotations: map[string]string{"cellfed.io/purpose": "the releases that stored this plane's data: a plane older than readableFrom refuses to start; written by cellfed-apiserver, do not edit"}}}, nil
			}
			if err != nil {
				klog.ErrorS(err, "Reading the data release record; retrying")
				return false, nil
			}
			next, write, err := version.DecideDataRelease(dataReleaseOf(cm), version.Own(), ownReadableFrom())
			if err != nil {
				// Recorded by a newer release since this one started.
				klog.ErrorS(err, "A newer release recorded data this one cannot read while it started")
				return true, nil
			}
			if !write {
				return true, nil
			}
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[dataReleaseNewest], cm.Data[dataReleaseReadable] = next.Newest, next.ReadableFrom
			if cm.ResourceVersion == "" {
				_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			} else {
				_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			}
			if err != nil {
				klog.V(2).InfoS("Recording the data release; retrying", "err", err)
				return false, nil
			}
			klog.InfoS("Recorded the releases that stored this plane's data", "newest", next.Newest, "readableFrom", next.ReadableFrom)
			return true, nil
		})
		if err != nil && hookCtx.Err() == nil {
			klog.ErrorS(err, "Recording the data release")
		}
	}()
	return nil
}
