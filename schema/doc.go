// Package schema describes the shape of a memory block's content.
//
// A block has one of five schemas:
//
//   - [Text]: free text, optionally shown through a [Viewport] of lines.
//   - [Map]: named, typed fields ([FieldDef]) rendered as "field: value" lines.
//   - [List]: ordered items, optionally checkboxes, with a MaxItems cap.
//   - [Log]: append-only timestamped entries shown newest first.
//   - [Composite]: named sections, each with its own schema.
//
// Schemas are plain values. [Marshal] and [Unmarshal] round-trip them through
// JSON with a "kind" discriminator so a schema stored in SQLite comes back
// identical. [Schema.Validate] checks a value against a schema and returns an
// error wrapping [ErrInvalid] that names the offending field; [Check] checks
// a schema definition itself. [JSONSchema] exports the JSON Schema of the
// values a schema accepts (github.com/invopop/jsonschema), which the builder
// and the agent tools hand to models.
package schema
