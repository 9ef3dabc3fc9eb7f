package schema

import (
	"time"

	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"
)

// JSONSchema returns the JSON Schema of the values s accepts: what Validate
// takes and what a block of this schema holds. Descriptions and read-only
// flags carry over, so a model shown the schema knows what it may write.
func JSONSchema(s Schema) *jsonschema.Schema {
	switch v := Deref(s).(type) {
	case Text:
		return &jsonschema.Schema{Type: "string"}
	case Map:
		return objectSchema(v.Fields)
	case List:
		out := &jsonschema.Schema{Type: "array", Items: fieldTypeSchema(v.ItemType())}
		if v.MaxItems > 0 {
			n := uint64(v.MaxItems)
			out.MaxItems = &n
		}
		return out
	case Log:
		base := []FieldDef{
			{Name: LogTimestamp, Type: FieldTimestamp, Description: "When the entry happened; filled in if absent."},
			{Name: LogMessage, Type: FieldString, Required: true, Description: "The entry text."},
		}
		return objectSchema(append(base, v.Entry...))
	case Composite:
		props := orderedmap.New[string, *jsonschema.Schema]()
		for _, sec := range v.Sections {
			if sec.Schema == nil {
				continue
			}
			sub := JSONSchema(sec.Schema)
			sub.Description = sec.Description
			sub.ReadOnly = sec.ReadOnly
			props.Set(sec.Name, sub)
		}
		return &jsonschema.Schema{Type: "object", Properties: props, AdditionalProperties: jsonschema.FalseSchema}
	}
	return &jsonschema.Schema{}
}

func objectSchema(fields []FieldDef) *jsonschema.Schema {
	props := orderedmap.New[string, *jsonschema.Schema]()
	var required []string
	for _, f := range fields {
		p := fieldTypeSchema(f.Type)
		p.Description = f.Description
		p.ReadOnly = f.ReadOnly
		if f.Default != nil {
			if t, ok := f.Default.(time.Time); ok {
				p.Default = t.Format(time.RFC3339Nano)
			} else {
				p.Default = f.Default
			}
		}
		props.Set(f.Name, p)
		if f.Required {
			required = append(required, f.Name)
		}
	}
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: jsonschema.FalseSchema}
}

func fieldTypeSchema(t FieldType) *jsonschema.Schema {
	switch t {
	case FieldText, FieldString:
		return &jsonschema.Schema{Type: "string"}
	case FieldNumber:
		return &jsonschema.Schema{Type: "number"}
	case FieldInteger, FieldCounter:
		return &jsonschema.Schema{Type: "integer"}
	case FieldBoolean:
		return &jsonschema.Schema{Type: "boolean"}
	case FieldTimestamp:
		return &jsonschema.Schema{Type: "string", Format: "date-time"}
	case FieldList:
		return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
			{Type: "string"}, {Type: "number"}, {Type: "boolean"},
		}}}
	case FieldObject:
		return &jsonschema.Schema{Type: "object"}
	}
	return &jsonschema.Schema{}
}
