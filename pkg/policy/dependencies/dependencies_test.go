package dependencies

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestDiscover(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want []string // Kind/Name, "?" suffix when optional
	}{
		{
			name: "not a workload",
			obj:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: b}\n",
		},
		{
			name: "deployment without references",
			obj: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: web, image: nginx}]
`,
		},
		{
			name: "deployment: every kind of reference",
			obj: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      serviceAccountName: web-sa
      imagePullSecrets: [{name: registry}]
      volumes:
      - {name: conf, configMap: {name: web-conf}}
      - {name: tls, secret: {secretName: web-tls}}
      - {name: data, persistentVolumeClaim: {claimName: web-data}}
      - name: all
        projected:
          sources:
          - configMap: {name: projected-cm}
          - secret: {name: projected-secret}
          - serviceAccountToken: {path: token}
      - {name: scratch, emptyDir: {}}
      - name: csi
        csi: {driver: secrets-store.csi.k8s.io, nodePublishSecretRef: {name: csi-creds}}
      initContainers:
      - name: init
        image: busybox
        envFrom: [{configMapRef: {name: init-env}}]
      containers:
      - name: web
        image: nginx
        envFrom:
        - secretRef: {name: web-env-secret}
        env:
        - name: A
          valueFrom: {configMapKeyRef: {name: web-conf, key: a}}
        - name: B
          valueFrom: {secretKeyRef: {name: db, key: password}}
        - name: C
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        - {name: D, value: plain}
`,
			want: []string{"ConfigMap/init-env", "ConfigMap/projected-cm", "ConfigMap/web-conf",
				"PersistentVolumeClaim/web-data",
				"Secret/csi-creds", "Secret/db", "Secret/projected-secret", "Secret/registry", "Secret/web-env-secret", "Secret/web-tls",
				"ServiceAccount/web-sa"},
		},
		{
			name: "default service account is no dependency",
			obj: `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  template:
    spec:
      serviceAccountName: default
      containers: [{name: a, image: x}]
`,
		},
		{
			name: "deprecated serviceAccount field",
			obj: `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  template:
    spec:
      serviceAccount: old-sa
      containers: [{name: a, image: x}]
`,
			want: []string{"ServiceAccount/old-sa"},
		},
		{
			name: "optional only when every reference is optional",
			obj: `apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  template:
    spec:
      restartPolicy: Never
      volumes:
      - {name: a, configMap: {name: both, optional: true}}
      - {name: b, secret: {secretName: opt, optional: true}}
      containers:
      - name: a
        image: x
        envFrom: [{configMapRef: {name: both}}]
`,
			want: []string{"ConfigMap/both", "Secret/opt?"},
		},
		{
			name: "cronjob: the job template's pod template",
			obj: `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 1 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: a
            image: x
            envFrom: [{secretRef: {name: nightly-creds}}]
`,
			want: []string{"Secret/nightly-creds"},
		},
		{
			name: "statefulset: claim templates are not dependencies, claim volumes are",
			obj: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  template:
    spec:
      volumes:
      - {name: shared, persistentVolumeClaim: {claimName: shared-backup}}
      containers:
      - name: db
        image: postgres
        volumeMounts: [{name: data, mountPath: /data}, {name: shared, mountPath: /backup}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`,
			want: []string{"PersistentVolumeClaim/shared-backup"},
		},
		{
			name: "pod: ephemeral containers count",
			obj: `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: a, image: x}]
  ephemeralContainers:
  - name: debug
    image: busybox
    envFrom: [{configMapRef: {name: debug-env}}]
`,
			want: []string{"ConfigMap/debug-env"},
		},
		{
			name: "deployment in another group is not a workload",
			obj: `apiVersion: example.com/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: a, image: x, envFrom: [{configMapRef: {name: x}}]}]
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deps, err := Discover(object(t, tt.obj))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range deps {
				s := d.String()
				if d.Optional {
					s += "?"
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Discover =\n  %v\nwant\n  %v", got, tt.want)
			}
		})
	}
}

func TestDiscoverMalformed(t *testing.T) {
	obj := object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: 7\n")
	if _, err := Discover(obj); err == nil {
		t.Fatal("Discover of a pod spec whose containers is a number: no error")
	}
}
