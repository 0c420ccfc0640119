package cellfedctl

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

func TestHasKeyStatus(t *testing.T) {
	hash := func(id string) string { return fmt.Sprintf(`key_id_hash="sha256:%x"`, sha256.Sum256([]byte(id))) }
	metrics := []byte(`# HELP apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds x
apiserver_envelope_encryption_key_id_hash_total{` + hash("k-old") + `,provider_name="cellfed-kms",transformation_type="to_storage"} 3
apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds{apiserver_id_hash="sha256:1",` + hash("k-old") + `,provider_name="cellfed-kms"} 1.7e+09
`)
	for _, tc := range []struct {
		name    string
		metrics []byte
		want    string
		found   bool
	}{
		{"any provider", metrics, "", true},
		{"the reported key", metrics, hash("k-old"), true},
		{"a key only used, never reported by status", metrics, hash("k-new"), false},
		{"no KMS provider", []byte("apiserver_request_total{verb=\"GET\"} 1\n"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasKeyStatus(tc.metrics, tc.want); got != tc.found {
				t.Errorf("hasKeyStatus = %v, want %v", got, tc.found)
			}
		})
	}
}
