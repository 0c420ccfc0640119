// Package kms is cellfed's KMS v2 plugin: the key service behind the
// standard Kubernetes envelope encryption of Secrets at rest
// (EncryptionConfiguration `kms: {apiVersion: v2, name: cellfed-kms,
// endpoint: unix:///...}`). The plane runs it in-process; cmd/cellfed-kms
// runs it as a standalone binary.
//
// # Key file
//
// The keys live in one local text file, mode 0600 (a file others may read,
// or the group may write, is refused; group read is allowed for Secret
// volumes mounted with an fsGroup). Each key is a line
//
//	<key-id>:<base64 of 32 random bytes>
//
// Lines starting with '#' and blank lines are ignored. Key IDs are 1-64
// characters of [A-Za-z0-9._-] and unique; new ones look like
// k-20260102T150405Z-1a2b (UTC creation time, then random hex), so they
// sort by age. The last key is the primary: it encrypts. Every key in the
// file decrypts. The API server sends the plugin only the data encryption
// key (or its seed) to wrap; the plugin wraps it with AES-256-GCM under the
// primary key, with a random 12-byte nonce prepended, and returns the
// primary key's ID, which the API server stores beside the object.
//
// Lose the file (or a key still in use) and the Secrets encrypted with it
// cannot be read again: back it up, and keep it as secret as the data.
//
// # Rotation
//
//  1. AddKey (cellfed-kms add-key) appends a new key, which becomes the
//     primary. The plugin notices the file changed (on every Status call,
//     and at most once a second on Encrypt and Decrypt) and reloads it.
//  2. KMS v2 API servers poll the plugin's Status; when they see the new
//     key ID they derive new data encryption keys under the new primary.
//     Objects written before still name the old key and still decrypt.
//  3. cellfedctl rotate-key rewrites every encrypted object, so all of them
//     are encrypted under the new key.
//  4. RemoveKey (cellfed-kms remove-key) retires the old key. It refuses
//     to remove the primary or the last key. An object still encrypted
//     with a removed key fails to decrypt with an error naming the key;
//     restore the key's line to bring it back.
//
// A reload that fails (a corrupt file, wrong permissions, a missing file)
// keeps the keys loaded before and makes Status return the error until the
// file is fixed; nothing logged ever contains key material.
package kms
