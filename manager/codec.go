package manager

import "encoding/json"

// Codec turns state into bytes and back.
type Codec[T any] interface {
	Encode(v *T) ([]byte, error)
	Decode(data []byte, v *T) error
}

// JSON is the default codec.
type JSON[T any] struct{}

// Encode marshals v as JSON.
func (JSON[T]) Encode(v *T) ([]byte, error) { return json.Marshal(v) }

// Decode unmarshals JSON into v.
func (JSON[T]) Decode(data []byte, v *T) error { return json.Unmarshal(data, v) }
