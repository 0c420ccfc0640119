package apiserver

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"

	"github.com/cellfed/cellfed/pkg/pki"
)

// identityKey holds, in the plane's database, the fingerprints of the PKI
// every replica on that database must share. It lies outside /registry,
// where the API server never reads.
const identityKey = "/cellfed/plane-identity"

// planeIdentity are the fingerprints (SHA-256) of what replicas share:
// the CA that signs users and serving certificates, the key that signs
// service-account tokens, and the CA of tunnel agents.
type planeIdentity struct {
	CA                string `json:"ca"`
	ServiceAccountKey string `json:"serviceAccountKey"`
	AgentCA           string `json:"agentCA"`
}

// localIdentity fingerprints the data dir's PKI.
func localIdentity(f pki.Files) (planeIdentity, error) {
	ca, err := certFingerprint(f.CACert())
	if err != nil {
		return planeIdentity{}, err
	}
	agent, err := certFingerprint(f.AgentCACert())
	if err != nil {
		return planeIdentity{}, err
	}
	keys, err := keyutil.PublicKeysFromFile(f.ServiceAccountKey())
	if err != nil || len(keys) == 0 {
		return planeIdentity{}, fmt.Errorf("reading the service-account key %s: %v", f.ServiceAccountKey(), err)
	}
	sa, err := publicKeyFingerprint(keys[0])
	if err != nil {
		return planeIdentity{}, err
	}
	return planeIdentity{CA: ca, ServiceAccountKey: sa, AgentCA: agent}, nil
}

func certFingerprint(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	cert, err := pki.ParseCertificatePEM(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(cert.Raw)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func publicKeyFingerprint(k any) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(k.(crypto.PublicKey))
	if err != nil {
		return "", fmt.Errorf("encoding the service-account public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// checkIdentity compares the data dir's PKI with the one recorded in the
// database by the first plane that used it. It writes nothing: record
// creates the record when the database has none, once every other check
// passed.
func checkIdentity(ctx context.Context, raw *clientv3.Client, f pki.Files) (record func(context.Context) error, err error) {
	local, err := localIdentity(f)
	if err != nil {
		return nil, err
	}
	resp, err := raw.Get(ctx, identityKey)
	if err != nil {
		return nil, fmt.Errorf("reading the plane identity from the database: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return func(ctx context.Context) error { return createIdentity(ctx, raw, local) }, nil
	}
	var stored planeIdentity
	if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil {
		return nil, fmt.Errorf("the plane identity %s in the database is corrupt: %w", identityKey, err)
	}
	if err := compareIdentity(stored, local, f); err != nil {
		return nil, err
	}
	return func(context.Context) error { return nil }, nil
}

func compareIdentity(stored, local planeIdentity, f pki.Files) error {
	for _, c := range []struct{ what, file, stored, local string }{
		{"CA", f.CACert(), stored.CA, local.CA},
		{"service-account key", f.ServiceAccountKey(), stored.ServiceAccountKey, local.ServiceAccountKey},
		{"agent CA", f.AgentCACert(), stored.AgentCA, local.AgentCA},
	} {
		if c.stored != c.local {
			return fmt.Errorf("this plane's %s (%s, %s) differs from the %s of the plane(s) already using this database (%s): replicas on one database must share the CA, service-account key and agent CA — start this replica with --shared-pki-dir holding the first replica's files (ca.crt, ca.key, sa.key, agent-ca.crt, agent-ca.key, tunnel-connect.secret; `cellfed-apiserver init` writes a set), or give it its own database; nothing was written",
				c.what, c.file, c.local, c.what, c.stored)
		}
	}
	return nil
}

func createIdentity(ctx context.Context, raw *clientv3.Client, id planeIdentity) error {
	b, err := json.Marshal(id)
	if err != nil {
		return err
	}
	resp, err := raw.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(identityKey), "=", 0)).
		Then(clientv3.OpPut(identityKey, string(b))).
		Else(clientv3.OpGet(identityKey)).
		Commit()
	if err != nil {
		return fmt.Errorf("recording the plane identity in the database: %w", err)
	}
	if resp.Succeeded {
		klog.InfoS("Recorded the plane's PKI fingerprints in the database; other replicas must share this PKI", "ca", id.CA)
		return nil
	}
	// Another replica recorded its identity at the same moment.
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return fmt.Errorf("recording the plane identity: the database refused the record and returned none")
	}
	var stored planeIdentity
	if err := json.Unmarshal(kvs[0].Value, &stored); err != nil {
		return fmt.Errorf("the plane identity %s in the database is corrupt: %w", identityKey, err)
	}
	if stored != id {
		return fmt.Errorf("another plane with a different PKI started on this database at the same moment (CA %s, this plane's %s); replicas must share the PKI (--shared-pki-dir)", stored.CA, id.CA)
	}
	return nil
}

// IdentityKey is where the plane identity record is stored, for the data
// tools (backup records it, restore checks it).
const IdentityKey = identityKey

// CheckIdentityRecord compares a stored plane identity record (a backup's)
// with the PKI in pkiDir, as a replica's start does: a plane whose CA,
// service-account key or agent CA differ cannot serve the data (clients'
// certificates, tokens and agents would all be rejected).
func CheckIdentityRecord(record []byte, pkiDir string) error {
	var stored planeIdentity
	if err := json.Unmarshal(record, &stored); err != nil {
		return fmt.Errorf("the plane identity record in the backup is corrupt: %w", err)
	}
	f := pki.Files{Dir: pkiDir}
	local, err := localIdentity(f)
	if err != nil {
		return fmt.Errorf("%w (give the PKI of the plane that will serve the restored data)", err)
	}
	for _, c := range []struct{ what, file, stored, local string }{
		{"CA", f.CACert(), stored.CA, local.CA},
		{"service-account key", f.ServiceAccountKey(), stored.ServiceAccountKey, local.ServiceAccountKey},
		{"agent CA", f.AgentCACert(), stored.AgentCA, local.AgentCA},
	} {
		if c.stored != c.local {
			return fmt.Errorf("the backup was taken from a plane with another %s (%s) than %s (%s): a plane with this PKI could not serve the restored data (client certificates, service-account tokens and agents would be rejected); restore the PKI that was backed up with the data into %s, or point --pki-dir at it",
				c.what, c.stored, c.file, c.local, pkiDir)
		}
	}
	return nil
}

// EncryptedKeyID returns the KMS key ID that encrypted a stored value, if
// the plane's KMS provider encrypted it.
func EncryptedKeyID(v []byte) (string, bool) {
	if !strings.HasPrefix(string(v), kmsPrefix) {
		return "", false
	}
	var obj kmstypes.EncryptedObject
	if err := proto.Unmarshal(v[len(kmsPrefix):], &obj); err != nil {
		return "", false
	}
	return obj.KeyID, true
}
