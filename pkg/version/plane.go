package version

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// PlaneVersion reads the plane's /version gitVersion with client (any
// REST client of the plane, e.g. a discovery client's RESTClient()). A
// plane that does not answer yet, or refuses while it starts (its RBAC
// roles are not there yet), is asked again every interval until ctx
// ends; the error then wraps the last answer.
func PlaneVersion(ctx context.Context, client rest.Interface, interval time.Duration) (string, error) {
	var gitVersion string
	var last error
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		body, err := client.Get().AbsPath("/version").Do(ctx).Raw()
		if err != nil {
			last = err
			klog.ErrorS(err, "Reading the plane's version; retrying", "after", interval)
			return false, nil
		}
		var info apimachineryversion.Info
		if err := json.Unmarshal(body, &info); err != nil {
			return false, fmt.Errorf("decoding the plane's /version: %w", err)
		}
		gitVersion = info.GitVersion
		return true, nil
	})
	if err != nil {
		if last != nil {
			err = last
		}
		return "", fmt.Errorf("reading the plane's /version: %w", err)
	}
	return gitVersion, nil
}

// CheckPlane reads the plane's version and decides, with skew, whether
// component (this binary, of release Own()) may work with it. It waits
// for the plane as long as ctx lets it.
func CheckPlane(ctx context.Context, component string, skew Skew, client rest.Interface, host string) error {
	planeVersion, err := PlaneVersion(ctx, client, 2*time.Second)
	if err != nil {
		return err
	}
	return CheckPlaneVersion(component, skew, planeVersion, host)
}

// CheckPlaneVersion decides, with skew, whether component (this binary,
// of release Own()) may work with the plane at host that reports
// planeVersion, and logs the decision.
func CheckPlaneVersion(component string, skew Skew, planeVersion, host string) error {
	own := Own()
	if err := skew.Check(component, own, planeVersion); err != nil {
		return fmt.Errorf("%s %s cannot work with the plane at %s: %w (the skew policy: docs/operations.md, \"Versions and skew\")", component, release(own), host, err)
	}
	klog.InfoS("The plane's release is supported", "component", component, "release", release(own), "plane", planeVersion)
	return nil
}
