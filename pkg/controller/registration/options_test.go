package registration

import (
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	o := NewOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	o.CertValidity = time.Second
	if err := o.Validate(); err == nil {
		t.Error("a 1s certificate validity was accepted")
	}
	o = NewOptions()
	o.Workers = 0
	if err := o.Validate(); err == nil {
		t.Error("0 workers were accepted")
	}
}
