package apis

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// Decode decodes the content of an unstructured object into an API type
// (into is a pointer). It accepts exactly what
// runtime.DefaultUnstructuredConverter accepts, but a field of the wrong
// kind is reported for people, by its path, what it holds and what it must
// hold ("spec.placement.topologies must be a list, not a string"), as a
// *FieldTypeError, where the converter says "cannot restore slice from
// string".
func Decode(content map[string]any, into any) error {
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, into)
	if err == nil {
		return nil
	}
	raw, jerr := json.Marshal(content)
	if jerr != nil {
		return err
	}
	fresh := reflect.New(reflect.TypeOf(into).Elem()).Interface()
	var te *json.UnmarshalTypeError
	if !errors.As(json.Unmarshal(raw, fresh), &te) || te.Field == "" {
		return err
	}
	return &FieldTypeError{Field: te.Field, Got: jsonKind(te.Value), Want: goKind(te.Type)}
}

// FieldTypeError is a field of an object that holds the wrong kind of
// value.
type FieldTypeError struct {
	// Field is the field's path, e.g. spec.placement.topologies.
	Field string
	// Got and Want are the kinds of value, e.g. "a string", "a list".
	Got, Want string
}

func (e *FieldTypeError) Error() string {
	return fmt.Sprintf("%s must be %s, not %s", e.Field, e.Want, e.Got)
}

// Detail is the error without the field, for field.Invalid.
func (e *FieldTypeError) Detail() string {
	return fmt.Sprintf("must be %s, not %s", e.Want, e.Got)
}

// jsonKind names the kind of JSON value encoding/json reports ("string",
// "number", "number 1.5", "object", "array", "bool").
func jsonKind(v string) string {
	switch {
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "bool":
		return "true or false"
	case len(v) >= 6 && v[:6] == "number":
		return "a number"
	}
	return "a " + v
}

// goKind names what a Go type holds in JSON terms.
func goKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string"
		}
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a " + t.String()
}
