// Package conversion will hold the pure conversion functions between the
// multi-topology (v1beta2) and KubeFed community (v1beta1) versions of the
// federated types, and the ConversionReview handler the plane serves.
package conversion
