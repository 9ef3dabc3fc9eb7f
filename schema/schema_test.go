package schema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/schema"
)

func sampleSchemas() map[string]schema.Schema {
	return map[string]schema.Schema{
		"text":     schema.Text{},
		"viewport": schema.Text{Viewport: &schema.Viewport{Start: 11, Lines: 20}},
		"map": schema.Map{Fields: []schema.FieldDef{
			{Name: "name", Type: schema.FieldString, Required: true, Description: "Who"},
			{Name: "bio", Type: schema.FieldText},
			{Name: "age", Type: schema.FieldInteger, Default: int64(3)},
			{Name: "score", Type: schema.FieldNumber, Default: 1.5},
			{Name: "ok", Type: schema.FieldBoolean, Default: true},
			{Name: "tags", Type: schema.FieldList},
			{Name: "visits", Type: schema.FieldCounter},
			{Name: "seen", Type: schema.FieldTimestamp, Default: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)},
			{Name: "extra", Type: schema.FieldObject, Default: map[string]any{"a": "b"}},
			{Name: "status", Type: schema.FieldString, ReadOnly: true, Default: "active"},
		}},
		"list":     schema.List{MaxItems: 5},
		"checkbox": schema.List{Item: schema.FieldString, Checkbox: true},
		"log":      schema.Log{DisplayLimit: 3, Retention: 100, Entry: []schema.FieldDef{{Name: "level", Type: schema.FieldString, Default: "info"}}},
		"composite": schema.Composite{Sections: []schema.Section{
			{Name: "notes", Schema: schema.Text{}},
			{Name: "diagnostics", ReadOnly: true, Description: "system-owned", Schema: schema.Map{Fields: []schema.FieldDef{{Name: "errors", Type: schema.FieldInteger}}}},
			{Name: "todo", Schema: schema.List{Checkbox: true}},
		}},
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for name, s := range sampleSchemas() {
		t.Run(name, func(t *testing.T) {
			if err := schema.Check(s); err != nil {
				t.Fatalf("Check: %v", err)
			}
			b, err := schema.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := schema.Unmarshal(b)
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", b, err)
			}
			if !reflect.DeepEqual(got, s) {
				t.Fatalf("round trip changed the schema:\n got %#v\nwant %#v", got, s)
			}
			b2, _ := schema.Marshal(got)
			if !bytes.Equal(b, b2) {
				t.Fatalf("re-encoding differs:\n%s\n%s", b, b2)
			}
			var probe map[string]any
			if err := json.Unmarshal(b, &probe); err != nil || probe["kind"] != string(s.Kind()) {
				t.Fatalf("kind discriminator missing in %s", b)
			}
		})
	}
}

func TestPointerSchemasEncodeLikeValues(t *testing.T) {
	a, _ := schema.Marshal(&schema.List{MaxItems: 2})
	b, _ := schema.Marshal(schema.List{MaxItems: 2})
	if !bytes.Equal(a, b) {
		t.Fatalf("%s != %s", a, b)
	}
}

func TestUnmarshalRejects(t *testing.T) {
	for _, in := range []string{
		``, `null`, `{}`, `{"kind":"nope"}`, `[]`,
		`{"kind":"map","fields":[{"name":"a","type":"blob"}]}`,
		`{"kind":"map","fields":[{"name":"a","type":"string"},{"name":"a","type":"string"}]}`,
		`{"kind":"map","fields":[{"name":"n","type":"integer","default":"x"}]}`,
		`{"kind":"list","item":"object"}`,
		`{"kind":"list","max_items":-1}`,
		`{"kind":"text","viewport":{"start":0,"lines":3}}`,
		`{"kind":"composite","sections":[]}`,
		`{"kind":"composite","sections":[{"name":"a"}]}`,
		`{"kind":"composite","sections":[{"name":"a","schema":{"kind":"composite","sections":[{"name":"b","schema":{"kind":"text"}}]}}]}`,
		`{"kind":"log","entry":[{"name":"message","type":"string"}]}`,
	} {
		if _, err := schema.Unmarshal([]byte(in)); !errors.Is(err, schema.ErrInvalid) {
			t.Errorf("Unmarshal(%q) err = %v, want ErrInvalid", in, err)
		}
	}
}

func TestValidate(t *testing.T) {
	s := sampleSchemas()
	cases := []struct {
		name   string
		schema schema.Schema
		value  any
		field  string // "" = valid
	}{
		{"text ok", s["text"], "hello", ""},
		{"text wrong type", s["text"], 42, "-"},
		{"text bad utf8", s["text"], "a\xffb", "-"},
		{"map ok", s["map"], map[string]any{"name": "x", "age": 4}, ""},
		{"map missing required", s["map"], map[string]any{"age": 4}, "name"},
		{"map unknown field", s["map"], map[string]any{"name": "x", "colour": "red"}, "colour"},
		{"map wrong type", s["map"], map[string]any{"name": "x", "age": "four"}, "age"},
		{"map non-integer", s["map"], map[string]any{"name": "x", "age": 4.5}, "age"},
		{"map bad timestamp", s["map"], map[string]any{"name": "x", "seen": "yesterday"}, "seen"},
		{"map timestamp string", s["map"], map[string]any{"name": "x", "seen": "2024-05-06T07:08:09Z"}, ""},
		{"map list of scalars", s["map"], map[string]any{"name": "x", "tags": []any{"a", 1, true}}, ""},
		{"map list nested", s["map"], map[string]any{"name": "x", "tags": []any{[]any{"a"}}}, "tags"},
		{"map not object", s["map"], "x", "-"},
		{"list ok", s["list"], []any{"a", "b"}, ""},
		{"list too many", s["list"], []any{"a", "b", "c", "d", "e", "f"}, "-"},
		{"list wrong item", s["list"], []any{map[string]any{}}, "[0]"},
		{"log ok", s["log"], map[string]any{"message": "hi", "level": "warn"}, ""},
		{"log missing message", s["log"], map[string]any{"level": "warn"}, "message"},
		{"log unknown field", s["log"], map[string]any{"message": "hi", "x": 1}, "x"},
		{"composite ok", s["composite"], map[string]any{"notes": "n", "todo": []any{"a"}}, ""},
		{"composite unknown section", s["composite"], map[string]any{"bogus": "n"}, "bogus"},
		{"composite nested error", s["composite"], map[string]any{"diagnostics": map[string]any{"errors": "many"}}, "diagnostics.errors"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.schema.Validate(c.value)
			if c.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, schema.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			var fe *schema.FieldError
			if c.field != "-" {
				if !errors.As(err, &fe) || fe.Field != c.field {
					t.Fatalf("err = %v, want field %q", err, c.field)
				}
				if !strings.Contains(err.Error(), c.field) {
					t.Fatalf("message %q does not name the field", err)
				}
			}
		})
	}
}

func TestCoerceCanonicalForms(t *testing.T) {
	cases := []struct {
		typ  schema.FieldType
		in   any
		want any
	}{
		{schema.FieldInteger, 3, int64(3)},
		{schema.FieldInteger, 3.0, int64(3)},
		{schema.FieldInteger, json.Number("7"), int64(7)},
		{schema.FieldNumber, 2, float64(2)},
		{schema.FieldCounter, int32(5), int64(5)},
		{schema.FieldTimestamp, "2024-01-01T00:00:00+02:00", time.Date(2023, 12, 31, 22, 0, 0, 0, time.UTC)},
		{schema.FieldList, []string{"a"}, []any{"a"}},
		{schema.FieldObject, map[string]any{"n": 1, "l": []any{1.5}}, map[string]any{"n": int64(1), "l": []any{1.5}}},
	}
	for _, c := range cases {
		got, err := schema.Coerce(c.typ, c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Coerce(%s, %#v) = %#v, %v; want %#v", c.typ, c.in, got, err, c.want)
		}
	}
}

func TestJSONSchemaExport(t *testing.T) {
	js := schema.JSONSchema(sampleSchemas()["map"])
	b, err := json.Marshal(js)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(b, &got)
	if got["type"] != "object" {
		t.Fatalf("type = %v in %s", got["type"], b)
	}
	props := got["properties"].(map[string]any)
	if props["age"].(map[string]any)["type"] != "integer" || props["seen"].(map[string]any)["format"] != "date-time" {
		t.Fatalf("field types wrong: %s", b)
	}
	if props["status"].(map[string]any)["readOnly"] != true {
		t.Fatalf("read-only not exported: %s", b)
	}
	if req := got["required"].([]any); len(req) != 1 || req[0] != "name" {
		t.Fatalf("required = %v", req)
	}
	// Property order follows the schema, so the export is byte-stable.
	if !strings.Contains(string(b), `"name":`) || strings.Index(string(b), `"name":`) > strings.Index(string(b), `"status":`) {
		t.Fatalf("property order not preserved: %s", b)
	}
	for name, s := range sampleSchemas() {
		if _, err := json.Marshal(schema.JSONSchema(s)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzSchemaJSON(f *testing.F) {
	for _, s := range sampleSchemas() {
		b, _ := schema.Marshal(s)
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"composite","sections":[{"name":"a","schema":null}]}`))
	f.Add([]byte(`{"kind":"map","fields":[{"name":"x","type":"object","default":{"a":[1,{"b":null}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := schema.Unmarshal(data)
		if err != nil {
			if !errors.Is(err, schema.ErrInvalid) {
				t.Fatalf("decode error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		b1, err := schema.Marshal(s)
		if err != nil {
			t.Fatalf("Marshal of decoded schema: %v", err)
		}
		s2, err := schema.Unmarshal(b1)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b1, err)
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("encode∘decode not identity:\n%#v\n%#v", s, s2)
		}
		b2, _ := schema.Marshal(s2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("bytes differ:\n%s\n%s", b1, b2)
		}
	})
}

// Errors say what is at fault: a malformed schema is an invalid schema (with
// the valid field types listed), not an invalid value; a plain log's
// unknown entry field lists only the fields there are.
func TestErrorsNameWhatIsAtFault(t *testing.T) {
	err := schema.Check(schema.Map{Fields: []schema.FieldDef{{Name: "age", Type: "int"}}})
	if !errors.Is(err, schema.ErrInvalid) || !strings.Contains(err.Error(), `invalid schema for field "age"`) ||
		!strings.Contains(err.Error(), "want text, string, number") {
		t.Errorf("unknown field type: %v", err)
	}
	_, err = schema.Log{}.CoerceEntry(map[string]any{"message": "hi", "zz": 1})
	if err == nil || strings.Contains(err.Error(), "none") || !strings.Contains(err.Error(), "known: timestamp, message)") {
		t.Errorf("unknown log entry field: %v", err)
	}
	if _, err := (schema.Map{Fields: []schema.FieldDef{{Name: "n", Type: schema.FieldInteger}}}).CoerceField("n", "x"); err == nil || !strings.Contains(err.Error(), "invalid value") {
		t.Errorf("a bad value: %v", err)
	}
}
