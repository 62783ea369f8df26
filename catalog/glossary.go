package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/glossaryterm"
	"github.com/tidemark/tidemark/ent/label"
)

// Limits on glossary terms.
const (
	MaxTermName    = 200
	MaxTermOwners  = 20
	MaxTermRelated = 50
)

// Term is a glossary term.
type Term struct {
	ID         uuid.UUID `json:"id"`
	Name       string    `json:"name"`
	Definition string    `json:"definition"`
	Owners     []string  `json:"owners"`
	Related    []TermRef `json:"related"`
	Version    int64     `json:"version"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// TermRef names a term.
type TermRef struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
}

// TermInput is a term as a person writes it.
type TermInput struct {
	Name       string
	Definition string // Markdown
	Owners     []string
	Related    []uuid.UUID
}

func termKey(name string) string { return strings.ToLower(name) }

func validateTerm(in *TermInput) error {
	if err := validateText("name", in.Name, MaxTermName); err != nil {
		return err
	}
	if err := validateDescription(in.Definition); err != nil {
		return err
	}
	if len(in.Owners) > MaxTermOwners {
		return invalid("owners", "a term has at most %d owners", MaxTermOwners)
	}
	for _, o := range in.Owners {
		if err := validateText("owners", o, MaxPrincipalBytes); err != nil {
			return err
		}
	}
	if len(in.Related) > MaxTermRelated {
		return invalid("related", "a term relates to at most %d terms", MaxTermRelated)
	}
	slices.Sort(in.Owners)
	in.Owners = slices.Compact(in.Owners)
	return nil
}

// checkRelated refuses related terms that do not exist (or the term itself); related holds no
// duplicates (uniqueIDs).
func checkRelated(ctx context.Context, client *ent.Client, self uuid.UUID, related []uuid.UUID) error {
	for _, r := range related {
		if r == self {
			return invalid("related", "a term cannot be related to itself")
		}
	}
	if len(related) == 0 {
		return nil
	}
	n, err := client.GlossaryTerm.Query().Where(glossaryterm.IDIn(related...)).Count(ctx)
	if err != nil {
		return fmt.Errorf("catalog: read related terms: %w", err)
	}
	if n != len(related) {
		return invalid("related", "some related terms do not exist")
	}
	return nil
}

func uniqueIDs(ids []uuid.UUID) []uuid.UUID {
	out := slices.Clone(ids)
	slices.SortFunc(out, compareIDs)
	return slices.Compact(out)
}

func idStrings(ids []uuid.UUID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// CreateTerm adds a glossary term; names are unique regardless of case.
func (c *Catalog) CreateTerm(ctx context.Context, in TermInput) (Term, error) {
	if err := validateTerm(&in); err != nil {
		return Term{}, err
	}
	in.Related = uniqueIDs(in.Related)
	var out Term
	err := c.tx(ctx, func(tx *ent.Tx) error {
		if err := checkRelated(ctx, tx.Client(), uuid.Nil, in.Related); err != nil {
			return err
		}
		now := c.Now()
		row, err := tx.GlossaryTerm.Create().SetName(in.Name).SetNameKey(termKey(in.Name)).SetDefinition(in.Definition).
			SetOwners(in.Owners).SetRelated(idStrings(in.Related)).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return fmt.Errorf("catalog: create term: %w", err)
		}
		if out, err = c.toTerm(ctx, tx.Client(), row); err != nil {
			return err
		}
		return c.audit(ctx, tx, now, ActionTermCreate, uuid.Nil, nil, out)
	})
	if ent.IsConstraintError(err) {
		return Term{}, conflict("a glossary term named %q exists already", in.Name)
	}
	return out, err
}

// UpdateTerm changes a term at version expected (AnyVersion to skip the check). A new name is
// re-indexed into the search docs of every asset linked to the term.
func (c *Catalog) UpdateTerm(ctx context.Context, id uuid.UUID, expected int64, in TermInput) (Term, error) {
	if err := validateTerm(&in); err != nil {
		return Term{}, err
	}
	in.Related = uniqueIDs(in.Related)
	var out Term
	err := c.tx(ctx, func(tx *ent.Tx) error {
		cur, err := tx.GlossaryTerm.Get(ctx, id)
		if ent.IsNotFound(err) {
			return notFound("glossary term %s does not exist", id)
		}
		if err != nil {
			return fmt.Errorf("catalog: read term: %w", err)
		}
		if expected != AnyVersion && cur.Version != expected {
			return &Error{Kind: ErrStaleVersion, Field: "If-Match", Message: fmt.Sprintf(
				"glossary term %q is at version %d, not %d: it changed since you read it; read it again and retry", cur.Name, cur.Version, expected)}
		}
		if err := checkRelated(ctx, tx.Client(), id, in.Related); err != nil {
			return err
		}
		before, err := c.toTerm(ctx, tx.Client(), cur)
		if err != nil {
			return err
		}
		now := c.Now()
		n, err := tx.GlossaryTerm.Update().Where(glossaryterm.ID(id), glossaryterm.Version(cur.Version)).
			SetName(in.Name).SetNameKey(termKey(in.Name)).SetDefinition(in.Definition).SetOwners(in.Owners).
			SetRelated(idStrings(in.Related)).AddVersion(1).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return fmt.Errorf("catalog: update term: %w", err)
		}
		if n == 0 {
			return &Error{Kind: ErrStaleVersion, Field: "If-Match", Message: fmt.Sprintf("glossary term %q changed concurrently; read it again and retry", cur.Name)}
		}
		row, err := tx.GlossaryTerm.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("catalog: read term: %w", err)
		}
		if out, err = c.toTerm(ctx, tx.Client(), row); err != nil {
			return err
		}
		if cur.Name != in.Name {
			links, err := tx.Label.Query().Where(label.KindEQ(label.KindTerm), label.Value(id.String()), label.RemovedAtIsNil()).
				Select(label.FieldAssetID).All(ctx)
			if err != nil {
				return fmt.Errorf("catalog: assets of term: %w", err)
			}
			ids := make([]uuid.UUID, len(links))
			for i, l := range links {
				ids[i] = l.AssetID
			}
			if err := c.reindex(ctx, tx.Client(), ids...); err != nil {
				return err
			}
		}
		return c.audit(ctx, tx, now, ActionTermUpdate, uuid.Nil, before, out)
	})
	if ent.IsConstraintError(err) {
		return Term{}, conflict("a glossary term named %q exists already", in.Name)
	}
	return out, err
}

func (c *Catalog) toTerm(ctx context.Context, client *ent.Client, r *ent.GlossaryTerm) (Term, error) {
	t := Term{ID: r.ID, Name: r.Name, Definition: r.Definition, Owners: r.Owners, Related: []TermRef{},
		Version: r.Version, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if t.Owners == nil {
		t.Owners = []string{}
	}
	var ids []uuid.UUID
	for _, s := range r.Related {
		if id, err := uuid.Parse(s); err == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		rows, err := client.GlossaryTerm.Query().Where(glossaryterm.IDIn(ids...)).Order(ent.Asc(glossaryterm.FieldNameKey)).
			Select(glossaryterm.FieldID, glossaryterm.FieldName).All(ctx)
		if err != nil {
			return Term{}, fmt.Errorf("catalog: related terms: %w", err)
		}
		for _, x := range rows {
			t.Related = append(t.Related, TermRef{ID: x.ID, Name: x.Name})
		}
	}
	return t, nil
}

// Term returns one glossary term.
func (c *Catalog) Term(ctx context.Context, id uuid.UUID) (Term, error) {
	row, err := c.client(ctx).GlossaryTerm.Get(ctx, id)
	if ent.IsNotFound(err) {
		return Term{}, notFound("glossary term %s does not exist", id)
	}
	if err != nil {
		return Term{}, fmt.Errorf("catalog: read term: %w", err)
	}
	return c.toTerm(ctx, c.client(ctx), row)
}

// Terms lists glossary terms by name, after the name key after, at most limit, and whether more
// follow.
func (c *Catalog) Terms(ctx context.Context, after string, limit int) ([]Term, bool, error) {
	q := c.client(ctx).GlossaryTerm.Query().Order(ent.Asc(glossaryterm.FieldNameKey)).Limit(limit + 1)
	if after != "" {
		q.Where(glossaryterm.NameKeyGT(termKey(after)))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("catalog: terms: %w", err)
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	out := make([]Term, 0, len(rows))
	for _, r := range rows {
		t, err := c.toTerm(ctx, c.client(ctx), r)
		if err != nil {
			return nil, false, err
		}
		out = append(out, t)
	}
	return out, more, nil
}

// TermLinks returns the current links of a term to assets and columns, at most limit.
func (c *Catalog) TermLinks(ctx context.Context, id uuid.UUID, limit int) ([]Label, error) {
	rows, err := c.client(ctx).Label.Query().Where(label.KindEQ(label.KindTerm), label.Value(id.String()), label.RemovedAtIsNil()).
		Order(ent.Asc(label.FieldID)).Limit(limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: links of term %s: %w", id, err)
	}
	return c.toLabels(ctx, rows)
}
