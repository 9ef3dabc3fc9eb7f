package schema_test

import (
	"fmt"

	"github.com/engram-go/engram/schema"
)

func ExampleMarshal() {
	s := schema.Map{Fields: []schema.FieldDef{
		{Name: "status", Type: schema.FieldString, ReadOnly: true, Default: "active"},
		{Name: "visits", Type: schema.FieldCounter},
	}}
	b, _ := schema.Marshal(s)
	fmt.Println(string(b))
	back, _ := schema.Unmarshal(b)
	fmt.Println(back.Kind())
	// Output:
	// {"kind":"map","fields":[{"name":"status","type":"string","read_only":true,"default":"active"},{"name":"visits","type":"counter"}]}
	// map
}

func ExampleMap_Validate() {
	s := schema.Map{Fields: []schema.FieldDef{{Name: "age", Type: schema.FieldInteger, Required: true}}}
	fmt.Println(s.Validate(map[string]any{"age": "old"}))
	// Output:
	// schema: invalid value for field "age": want integer (whole number), got string
}
