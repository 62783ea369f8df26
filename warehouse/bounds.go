package warehouse

// Bounds on what a client may store in a served catalog: a schema nested thousands of levels
// deep cost minutes of CPU to create and seconds on every load after it, and properties were
// uncapped (a 42 MB namespace).

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// The limits.
const (
	MaxSchemaDepth    = 32     // nested struct, list and map levels
	MaxSchemaFields   = 10_000 // fields of one schema, nested ones included
	MaxProperties     = 1_000  // properties of a table or a namespace
	MaxPropertyBytes  = 64 << 10
	MaxPropertiesSize = 1 << 20 // keys and values of a table's or a namespace's properties together
)

// checkSchema refuses a schema nested deeper or holding more fields than the limits.
func checkSchema(field string, s *iceberg.Schema) error {
	fields := 0
	var walk func(t iceberg.Type, depth int) error
	walk = func(t iceberg.Type, depth int) error {
		if depth > MaxSchemaDepth {
			return invalid(field, "schema %d is nested more than %d levels deep; flatten it", s.ID, MaxSchemaDepth)
		}
		switch t := t.(type) {
		case *iceberg.StructType:
			for _, f := range t.FieldList {
				if fields++; fields > MaxSchemaFields {
					return invalid(field, "schema %d has more than %d fields", s.ID, MaxSchemaFields)
				}
				if err := walk(f.Type, depth+1); err != nil {
					return err
				}
			}
		case *iceberg.ListType:
			fields++
			return walk(t.Element, depth+1)
		case *iceberg.MapType:
			fields += 2
			if err := walk(t.KeyType, depth+1); err != nil {
				return err
			}
			return walk(t.ValueType, depth+1)
		}
		return nil
	}
	st := s.AsStruct()
	return walk(&st, 0)
}

// checkProperties refuses more properties, or longer ones, than the limits.
func checkProperties(field string, props map[string]string) error {
	if len(props) > MaxProperties {
		return invalid(field, "%d properties; the limit is %d", len(props), MaxProperties)
	}
	total := 0
	for k, v := range props {
		if len(k)+len(v) > MaxPropertyBytes {
			return invalid(field, "property %q is %d bytes with its value; the limit is %d", clipPath(k), len(k)+len(v), MaxPropertyBytes)
		}
		total += len(k) + len(v)
	}
	if total > MaxPropertiesSize {
		return invalid(field, "the properties total %d bytes; the limit is %d", total, MaxPropertiesSize)
	}
	return nil
}

// checkMetadataBounds checks the schemas a commit adds and the table's properties.
func checkMetadataBounds(base, updated table.Metadata) error {
	known := map[int]bool{}
	if base != nil {
		for _, s := range base.Schemas() {
			known[s.ID] = true
		}
	}
	for _, s := range updated.Schemas() {
		if !known[s.ID] {
			if err := checkSchema("schema", s); err != nil {
				return err
			}
		}
	}
	return checkProperties("properties", updated.Properties())
}
