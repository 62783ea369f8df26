package catalog

// What each hit matched in: the fields, and which former name, tags and owners.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/searchfacet"
)

// hit is a SearchHit with the doc's text fields, to explain what matched.
type hit struct {
	SearchHit
	docID                          int
	tName, tFormer, tLabels, tBody string
}

// matcher tells whether document tokens match a query's tokens (the last one as a prefix).
type matcher []string

func (m matcher) token(t string) bool {
	for i, q := range m {
		if t == q || (i == len(m)-1 && strings.HasPrefix(t, q)) {
			return true
		}
	}
	return false
}

// any reports whether a token of text matches.
func (m matcher) any(text string) bool {
	return slices.ContainsFunc(searchTokens(text), m.token)
}

// covered counts the query tokens that some token of text matches.
func (m matcher) covered(text string) int {
	toks := searchTokens(text)
	n := 0
	for i, q := range m {
		if slices.ContainsFunc(toks, func(t string) bool { return t == q || (i == len(m)-1 && strings.HasPrefix(t, q)) }) {
			n++
		}
	}
	return n
}

// explain fills in what each hit matched: the fields, the former name, tags and owners. The
// fields come from the docs' token text; which former name, tag or owner it was takes one query
// each for the page's hits that need it.
func explain(ctx context.Context, client *ent.Client, plan searchPlan, hits []hit) error {
	if len(plan.tokens) == 0 {
		return nil
	}
	m := matcher(plan.tokens)
	var formerOf, bodyOf []uuid.UUID
	var labelDocs []int
	for i := range hits {
		h := &hits[i]
		if m.any(h.tFormer) {
			formerOf = append(formerOf, h.ID)
		}
		if m.any(h.tLabels) {
			labelDocs = append(labelDocs, h.docID)
		}
		if m.any(h.tBody) {
			bodyOf = append(bodyOf, h.ID)
		}
	}
	formers := map[uuid.UUID][]*ent.AssetName{}
	if len(formerOf) > 0 {
		rows, err := client.AssetName.Query().Where(assetname.AssetIDIn(formerOf...), assetname.ValidToNotNil()).
			Order(ent.Desc(assetname.FieldID)).All(ctx)
		if err != nil {
			return fmt.Errorf("catalog: search: former names: %w", err)
		}
		for _, r := range rows {
			formers[r.AssetID] = append(formers[r.AssetID], r)
		}
	}
	facets := map[int][]*ent.SearchFacet{}
	if len(labelDocs) > 0 {
		rows, err := client.SearchFacet.Query().Where(searchfacet.DocIDIn(labelDocs...), searchfacet.FacetIn(FacetTag, FacetOwner)).
			Order(ent.Asc(searchfacet.FieldValue)).All(ctx)
		if err != nil {
			return fmt.Errorf("catalog: search: labels: %w", err)
		}
		for _, r := range rows {
			facets[r.DocID] = append(facets[r.DocID], r)
		}
	}
	descriptions := map[uuid.UUID]string{}
	if len(bodyOf) > 0 {
		rows, err := client.Asset.Query().Where(asset.IDIn(bodyOf...)).Select(asset.FieldDescription).All(ctx)
		if err != nil {
			return fmt.Errorf("catalog: search: descriptions: %w", err)
		}
		for _, r := range rows {
			descriptions[r.ID] = r.Description
		}
	}
	for i := range hits {
		h := &hits[i]
		h.MatchedIn = []string{}
		if m.any(h.tName) {
			h.MatchedIn = append(h.MatchedIn, MatchedName)
		}
		if m.any(h.tFormer) {
			best := 0
			for _, n := range formers[h.ID] { // newest first: the newest wins a tie
				if n.Namespace == h.Namespace && n.Name == h.Name {
					continue // the current name, held before too (a restore)
				}
				if k := m.covered(n.Namespace + " " + n.Name); k > best {
					best = k
					name := toName(n)
					h.MatchedFormer = &name
				}
			}
			h.MatchedIn = append(h.MatchedIn, MatchedFormerName)
		}
		if m.any(h.tLabels) {
			explained := map[string]bool{}
			for _, f := range facets[h.docID] {
				if !m.any(f.Value) {
					continue
				}
				for _, t := range searchTokens(f.Value) {
					explained[t] = true
				}
				if f.Facet == FacetTag {
					h.MatchedTags = append(h.MatchedTags, f.Value)
				} else {
					h.MatchedOwners = append(h.MatchedOwners, f.Value)
				}
			}
			if len(h.MatchedTags) > 0 {
				h.MatchedIn = append(h.MatchedIn, MatchedTag)
			}
			// A matching label token no tag or owner holds is a glossary term's.
			if slices.ContainsFunc(searchTokens(h.tLabels), func(t string) bool { return m.token(t) && !explained[t] }) {
				h.MatchedIn = append(h.MatchedIn, MatchedTerm)
			}
			if len(h.MatchedOwners) > 0 {
				h.MatchedIn = append(h.MatchedIn, MatchedOwner)
			}
		}
		if m.any(h.tBody) {
			desc := map[string]bool{}
			for _, t := range searchTokens(descriptions[h.ID]) {
				desc[t] = true
			}
			if m.any(descriptions[h.ID]) {
				h.MatchedIn = append(h.MatchedIn, MatchedDescription)
			}
			if slices.ContainsFunc(searchTokens(h.tBody), func(t string) bool { return m.token(t) && !desc[t] }) {
				h.MatchedIn = append(h.MatchedIn, MatchedColumn)
			}
		}
	}
	return nil
}
