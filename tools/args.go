package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
)

// toolDef is one tool: its definition and how to decode and run a call.
type toolDef struct {
	name     string
	desc     string
	params   *jsonschema.Schema
	hints    Hints
	nullable map[string]bool // required arguments that may be JSON null
	newArgs  func() any
	handler  func(ctx context.Context, ts *Toolset, args any) (Result, error)
}

// define makes a toolDef whose parameters are the JSON Schema of A.
func define[A any](name, desc string, nullable []string, run func(context.Context, *Toolset, *A) (Result, error)) *toolDef {
	d := &toolDef{
		name:     name,
		desc:     desc,
		params:   reflectSchema(new(A)),
		nullable: map[string]bool{},
		newArgs:  func() any { return new(A) },
		handler: func(ctx context.Context, ts *Toolset, a any) (Result, error) {
			return run(ctx, ts, a.(*A))
		},
	}
	for _, n := range nullable {
		d.nullable[n] = true
	}
	return d
}

func (d *toolDef) tool() Tool {
	return Tool{Name: d.name, Description: d.desc, Parameters: d.params, Hints: d.hints}
}

// with sets the tool's hints.
func (d *toolDef) with(h Hints) *toolDef {
	d.hints = h
	return d
}

// typed replaces the schema of property prop (one that accepts any JSON
// in Go, such as a json.RawMessage) with s, keeping its description.
func (d *toolDef) typed(prop string, s *jsonschema.Schema) *toolDef {
	if old, ok := d.params.Properties.Get(prop); ok {
		s.Description = old.Description
	}
	d.params.Properties.Set(prop, s)
	return d
}

// jsonValue is the schema of a property that takes one JSON value of the
// given kinds: an anyOf of the JSON types (disjoint, so it means the same
// as oneOf; anyOf is what function-calling APIs accept). "array" is an
// array of scalars, as list fields hold; "object" any object.
func jsonValue(kinds ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{}
	for _, k := range kinds {
		sub := &jsonschema.Schema{Type: k}
		if k == "array" {
			sub.Items = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string"}, {Type: "number"}, {Type: "boolean"}}}
		}
		s.AnyOf = append(s.AnyOf, sub)
	}
	return s
}

func (d *toolDef) run(ctx context.Context, ts *Toolset, args any) (Result, error) {
	return d.handler(ctx, ts, args)
}

func lookup(name string) *toolDef {
	for _, d := range registry {
		if d.name == name {
			return d
		}
	}
	return nil
}

// reflectSchema is the argument schema of v's struct type: inline (no
// $defs or $ref), no $schema or $id, additionalProperties false, fields
// without omitempty required, descriptions from jsonschema_description tags.
func reflectSchema(v any) *jsonschema.Schema {
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	s := r.Reflect(v)
	s.Version = ""
	s.ID = ""
	s.Definitions = nil
	return s
}

// argError is a problem with the arguments as sent.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

func argErrorf(format string, args ...any) error {
	return &argError{msg: fmt.Sprintf(format, args...)}
}

// decode checks raw against the tool's parameters and decodes it into a new
// argument struct. Missing or null arguments mean {}. A JSON string holding
// a JSON object (double-encoded arguments, as some models send) is
// accepted.
func (d *toolDef) decode(raw json.RawMessage) (any, error) {
	data := bytes.TrimSpace(raw)
	if len(data) == 0 || string(data) == "null" {
		data = []byte("{}")
	}
	if !json.Valid(data) {
		var probe any
		err := json.Unmarshal(data, &probe)
		return nil, argErrorf("arguments are not valid JSON (%v); send a JSON object such as %s", err, d.example())
	}
	if data[0] == '"' {
		var inner string
		if json.Unmarshal(data, &inner) == nil {
			if t := bytes.TrimSpace([]byte(inner)); len(t) > 0 && t[0] == '{' && json.Valid(t) {
				data = t
			}
		}
	}
	if data[0] != '{' {
		return nil, argErrorf("arguments must be a JSON object such as %s, got %s", d.example(), jsonKind(data))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, argErrorf("arguments are not a JSON object: %v", err)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := d.params.Properties.Get(k); !ok {
			return nil, argErrorf("unknown argument %q (arguments: %s)", k, strings.Join(d.propNames(), ", "))
		}
	}
	for _, k := range d.params.Required {
		v, ok := obj[k]
		if !ok || (string(bytes.TrimSpace(v)) == "null" && !d.nullable[k]) {
			return nil, argErrorf("missing required argument %q (required: %s)", k, strings.Join(d.params.Required, ", "))
		}
	}
	a := d.newArgs()
	if err := json.Unmarshal(data, a); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "arguments"
			}
			return nil, argErrorf("argument %q must be %s, got %s", field, jsonType(te.Type), te.Value)
		}
		return nil, argErrorf("arguments could not be decoded: %v", err)
	}
	return a, nil
}

func (d *toolDef) propNames() []string {
	var out []string
	for p := d.params.Properties.Oldest(); p != nil; p = p.Next() {
		out = append(out, p.Key)
	}
	return out
}

// example is a minimal argument object naming the required arguments.
func (d *toolDef) example() string {
	parts := make([]string, len(d.params.Required))
	for i, k := range d.params.Required {
		v := "..."
		if p, ok := d.params.Properties.Get(k); ok {
			switch p.Type {
			case "string":
				v = `"..."`
			case "integer", "number":
				v = "1"
			case "array":
				v = "[...]"
			case "object":
				v = "{...}"
			}
		}
		parts[i] = fmt.Sprintf("%q: %s", k, v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func jsonKind(data []byte) string {
	switch data[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}
