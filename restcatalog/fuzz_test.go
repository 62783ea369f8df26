package restcatalog

import (
	"encoding/json"
	"testing"

	"github.com/tidemark/tidemark/warehouse"
)

// FuzzCommitBody feeds the commit and transaction parsers outside input: they must refuse or
// accept it, never panic, and an accepted change must name the table it was given.
func FuzzCommitBody(f *testing.F) {
	for _, seed := range []string{
		`{"requirements":[{"type":"assert-table-uuid","uuid":"2f5c8d64-1b7e-4c8e-9c67-0a3b2d1e4f55"}],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`,
		`{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":1}],"updates":[{"action":"remove-snapshots","snapshot-ids":[1,2]}]}`,
		`{"requirements":[{"type":"assert-create"}],"updates":[{"action":"assign-uuid","uuid":"2f5c8d64-1b7e-4c8e-9c67-0a3b2d1e4f55"},{"action":"upgrade-format-version","format-version":2}]}`,
		`{"table-changes":[{"identifier":{"namespace":["a"],"name":"t"},"requirements":[],"updates":[]}]}`,
		`{"requirements":[{"type":"nope"}]}`, `[]`, `{"updates":[{"action":"add-snapshot","snapshot":{}}]}`,
	} {
		f.Add([]byte(seed))
	}
	id := warehouse.TableIdent{Namespace: []string{"a"}, Name: "t"}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c commitBody
		if json.Unmarshal(b, &c) == nil {
			ch, err := c.change(id)
			if err == nil && (ch.Ident.Name != "t" || len(ch.Updates) != len(c.Updates)) {
				t.Fatalf("change %+v does not carry the body's %d updates for table t", ch, len(c.Updates))
			}
		}
		var tx transactionBody
		_ = json.Unmarshal(b, &tx)
	})
}
