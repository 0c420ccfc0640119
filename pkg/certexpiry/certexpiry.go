// Package certexpiry reads when PEM certificates expire, for the
// expiry gauges the plane and cellfed-controller export.
package certexpiry

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"
)

// Earliest is the earliest notAfter of the certificates in a PEM bundle:
// a bundle is as good as its first certificate to expire.
func Earliest(bundle []byte) (time.Time, error) {
	var earliest time.Time
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return time.Time{}, fmt.Errorf("parsing a certificate: %w", err)
		}
		if earliest.IsZero() || cert.NotAfter.Before(earliest) {
			earliest = cert.NotAfter
		}
	}
	if earliest.IsZero() {
		return time.Time{}, errors.New("no PEM certificate")
	}
	return earliest, nil
}

// File is Earliest of the PEM file at path.
func File(path string) (time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading certificate: %w", err)
	}
	t, err := Earliest(b)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
