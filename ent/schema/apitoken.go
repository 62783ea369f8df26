package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
)

// APIToken is a bearer token for the API. Only the SHA-256 of the secret is stored; the secret
// is shown once, when the token is created.
type APIToken struct{ ent.Schema }

func (APIToken) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (APIToken) Fields() []ent.Field {
	return []ent.Field{
		field.String("name").Unique().Immutable(),
		field.String("hash").Unique().Immutable().Sensitive(),
		field.Strings("scopes"),
		field.Time("created_at").Immutable(),
		field.Time("revoked_at").Optional().Nillable(),
		// last_used_at is moved at most once a minute, so reads do not all become writes.
		field.Time("last_used_at").Optional().Nillable(),
	}
}
