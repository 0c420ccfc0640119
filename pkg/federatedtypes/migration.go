package federatedtypes

import (
	"context"
	"fmt"
	"slices"

	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// StorageVersionOf returns the version crd stores objects in.
func StorageVersionOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// NeedsMigration reports whether crd may hold objects stored in a version
// other than its storage version: status.storedVersions lists another.
// Such objects are read through conversion until something rewrites them;
// a storage version migration does, then trims storedVersions.
func NeedsMigration(crd *apiextensionsv1.CustomResourceDefinition) bool {
	storage := StorageVersionOf(crd)
	if storage == "" {
		return false
	}
	return slices.ContainsFunc(crd.Status.StoredVersions, func(v string) bool { return v != storage })
}

// MigrationName names the StorageVersionMigration of crd at its current
// generation: a later change of its storage version gets a new one.
func MigrationName(crd *apiextensionsv1.CustomResourceDefinition) string {
	return fmt.Sprintf("%s-g%d", crd.Name, crd.Generation)
}

// EnsureMigrations creates a StorageVersionMigration for every CRD the
// plane owns (stamped with AnnotationSchemaRelease) that NeedsMigration,
// unless it exists. The plane's storage version migrator (its core
// controllers) rewrites the objects, throttled, and trims the CRD's
// storedVersions when done; its conditions say how far it is. It returns
// how many it created; none when the plane does not serve
// storagemigration.k8s.io (the StorageVersionMigrator gate is off).
func EnsureMigrations(ctx context.Context, crds apiextensionsclient.Interface, kube kubernetes.Interface) (int, error) {
	list, err := crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing CRDs: %w", err)
	}
	created := 0
	for i := range list.Items {
		crd := &list.Items[i]
		if _, owned := crd.Annotations[AnnotationSchemaRelease]; !owned || !NeedsMigration(crd) {
			continue
		}
		m := &svmv1beta1.StorageVersionMigration{
			ObjectMeta: metav1.ObjectMeta{Name: MigrationName(crd), Labels: map[string]string{"app.kubernetes.io/managed-by": "cellfed-apiserver"}},
			Spec:       svmv1beta1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}},
		}
		_, err := kube.StoragemigrationV1beta1().StorageVersionMigrations().Create(ctx, m, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
		case apierrors.IsNotFound(err):
			klog.InfoS("Not migrating stored objects: storagemigration.k8s.io is not served (--feature-gates=StorageVersionMigrator=false)",
				"crd", crd.Name, "storedVersions", crd.Status.StoredVersions)
			return created, nil
		case err != nil:
			return created, fmt.Errorf("creating the storage version migration of %s: %w", crd.Name, err)
		default:
			created++
			klog.InfoS("Migrating stored objects to the storage version", "crd", crd.Name, "storageVersion", StorageVersionOf(crd),
				"storedVersions", crd.Status.StoredVersions, "migration", m.Name)
		}
	}
	return created, nil
}
