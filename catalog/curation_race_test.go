package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// TestDropClassificationValueRacesTagAdd: dropping a classification value while its tag is being
// added, concurrently, ends with exactly one of the two done (the drop refused because the tag
// is there, or the tag refused because the value is gone), never with a tag of a value the
// classification no longer lists. Every tag-adding path is raced: a person's AddLabel and a
// source's RecordSources.
func TestDropClassificationValueRacesTagAdd(t *testing.T) {
	// Rounds, not sleeps, widen the window: one round interleaves by chance.
	const rounds = 30
	adders := []struct {
		name string
		add  func(ctx context.Context, e env, id uuid.UUID, tag string) error
	}{
		{"AddLabel", func(ctx context.Context, e env, id uuid.UUID, tag string) error {
			_, err := e.cat.AddLabel(ctx, id, catalog.AnyVersion, catalog.LabelInput{Kind: catalog.LabelTag, Value: tag})
			return err
		}},
		{"RecordSources", func(ctx context.Context, e env, id uuid.UUID, tag string) error {
			out, err := e.cat.RecordSources(ctx, catalog.SourceOpenLineage, []catalog.SourceReport{
				{AssetID: id, Tags: []catalog.SourceTag{{Tag: tag}}, SyncTags: true}})
			if err != nil {
				return err
			}
			if out[0].Err != nil {
				return out[0].Err
			}
			if len(out[0].Skipped) > 0 {
				// A source's tag that is not a value is skipped, not refused.
				return fmt.Errorf("%s skipped: %w", tag, catalog.ErrInvalid)
			}
			return nil
		}},
	}
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		for _, ad := range adders {
			t.Run(ad.name, func(t *testing.T) {
				var assets []uuid.UUID
				for i := range rounds {
					name := fmt.Sprintf("race%s%d", strings.ToLower(ad.name), i)
					cl, err := e.cat.PutClassification(ctx, catalog.Classification{Name: name, Values: []string{"keep", "drop"}}, catalog.AnyVersion)
					if err != nil {
						t.Fatal(err)
					}
					a := e.create(t, "race", name)
					assets = append(assets, a.ID)

					start := make(chan struct{})
					var wg sync.WaitGroup
					var dropErr, addErr error
					wg.Add(2)
					go func() {
						defer wg.Done()
						<-start
						next := cl
						next.Values = []string{"keep"}
						_, dropErr = e.cat.PutClassification(ctx, next, cl.Version)
					}()
					go func() {
						defer wg.Done()
						<-start
						addErr = ad.add(ctx, e, a.ID, name+".drop")
					}()
					close(start)
					wg.Wait()

					// The loser is refused for the winner's reason, nothing else (a deadlock or a
					// serialisation failure would be a bug too).
					if dropErr != nil && !errors.Is(dropErr, catalog.ErrConflict) {
						t.Fatalf("round %d: drop: %v", i, dropErr)
					}
					if addErr != nil && !errors.Is(addErr, catalog.ErrInvalid) {
						t.Fatalf("round %d: add: %v", i, addErr)
					}
					if got := (dropErr == nil) != (addErr == nil); !got {
						t.Errorf("round %d: drop err %v, add err %v; want exactly one to succeed", i, dropErr, addErr)
					}
				}
				assertTagsListed(t, e, assets)
			})
		}
	})
}

// assertTagsListed fails for every current tag on the assets (or their columns) whose first
// segment is a classification that does not list the rest, as read back from the store.
func assertTagsListed(t *testing.T, e env, assets []uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	cls, err := e.cat.Classifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string][]string{}
	for _, c := range cls {
		values[c.Name] = c.Values
	}
	for _, id := range assets {
		labels, err := e.cat.Labels(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range labels {
			if l.Kind != catalog.LabelTag {
				continue
			}
			family, value, _ := strings.Cut(l.Value, ".")
			if vs, ok := values[family]; ok && !slices.Contains(vs, value) {
				t.Errorf("asset %s has tag %s, but classification %s lists only %v", id, l.Value, family, vs)
			}
		}
	}
}
