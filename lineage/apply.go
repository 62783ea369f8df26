// The applier: one parsed event applied to the batch, the catalog and the store.

package lineage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/columnedge"
	"github.com/tidemark/tidemark/ent/lineageedge"
	"github.com/tidemark/tidemark/ent/predicate"
	"github.com/tidemark/tidemark/ent/run"
)

// applier applies one event of a batch.
type applier struct {
	*batch
	ev  Event
	res *IngestResult
}

func (a *applier) warn(format string, args ...any) {
	a.res.Warnings = append(a.res.Warnings, fmt.Sprintf(format, args...))
}

func (a *applier) apply(ctx context.Context, key string) error {
	if prior, ok := a.keys[key]; ok {
		a.res.EventID, a.res.Duplicate = prior, true
		return nil
	}
	ev := a.ev
	var jobID uuid.UUID
	if ev.Job != nil {
		id, err := a.resolveJob(ctx, *ev.Job)
		if err != nil {
			return err
		}
		jobID = id
	}
	inputs := make([]uuid.UUID, len(ev.Inputs))
	for i, d := range ev.Inputs {
		id, err := a.resolveDataset(ctx, d)
		if err != nil {
			return err
		}
		inputs[i] = id
	}
	outputs := make([]uuid.UUID, len(ev.Outputs))
	for i, d := range ev.Outputs {
		id, err := a.resolveDataset(ctx, d)
		if err != nil {
			return err
		}
		outputs[i] = id
	}
	if ev.Dataset != nil {
		if _, err := a.resolveDataset(ctx, *ev.Dataset); err != nil {
			return err
		}
	}
	if ev.Kind == KindRun {
		if err := a.upsertRun(ctx, jobID, inputs, outputs); err != nil {
			return err
		}
		if ev.EventType == "COMPLETE" {
			a.completed = append(a.completed, completedRun(ev, jobID, inputs, outputs))
		}
	}
	if jobID != uuid.Nil {
		for _, in := range inputs {
			if err := a.upsertEdge(ctx, in, jobID); err != nil {
				return err
			}
		}
		for _, out := range outputs {
			if err := a.upsertEdge(ctx, jobID, out); err != nil {
				return err
			}
		}
	}
	for i, d := range ev.Outputs {
		if err := a.columnLineage(ctx, outputs[i], d); err != nil {
			return err
		}
	}
	id := uuid.Must(uuid.NewV7())
	a.events = append(a.events, eventRow{id: id, key: key, ev: &a.ev, job: jobID})
	a.keys[key], a.res.EventID = id, id
	return nil
}

func completedRun(ev Event, jobID uuid.UUID, inputs, outputs []uuid.UUID) CompletedRun {
	c := CompletedRun{RunID: ev.RunID, JobID: jobID, At: ev.EventTime}
	var own ownershipFacet
	if ev.Job.Facets.facet("ownership", &own) && len(own.Owners) > 0 {
		c.Actor = own.Owners[0].Name
	}
	var src struct {
		Version string `json:"version"`
	}
	var engine struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	switch {
	case ev.Job.Facets.facet("sourceCodeLocation", &src) && src.Version != "":
		c.Version = src.Version
	case ev.RunFacets.facet("processing_engine", &engine) && engine.Version != "":
		c.Version = strings.TrimSpace(engine.Name + " " + engine.Version)
	}
	for i, d := range ev.Inputs {
		v, _ := d.InputVersion()
		c.Inputs = append(c.Inputs, DatasetRef{ID: inputs[i], Namespace: d.Namespace, Name: d.Name, Version: v.Version})
	}
	for i, d := range ev.Outputs {
		v, _ := d.OutputVersion()
		c.Outputs = append(c.Outputs, DatasetRef{ID: outputs[i], Namespace: d.Namespace, Name: d.Name, Version: v.Version})
	}
	return c
}

func (a *applier) resolveJob(ctx context.Context, j JobRef) (uuid.UUID, error) {
	ref, err := a.resolveName(ctx, j.Namespace, j.Name, catalog.KindJob, nil)
	if err != nil {
		return uuid.Nil, err
	}
	return ref.ID, a.applyFacets(ctx, ref.ID, j.Facets, false)
}

// resolveDataset finds or creates the asset of a dataset, applying a RENAME or DROP it carries,
// binding its symlinks and storing its facets.
func (a *applier) resolveDataset(ctx context.Context, d Dataset) (uuid.UUID, error) {
	var life lifecycleFacet
	d.Facets.facet("lifecycleStateChange", &life)
	change := strings.ToUpper(life.LifecycleStateChange)
	var sym symlinksFacet
	d.Facets.facet("symlinks", &sym)
	var links []catalog.ExternalIDInput
	for _, s := range sym.Identifiers {
		if catalog.ValidateName(s.Namespace, s.Name) == nil {
			links = append(links, catalog.SymlinkID(s.Namespace, s.Name))
		}
	}

	var ref catalog.Ref
	if change == "RENAME" && life.PreviousIdentifier != nil {
		renamed, err := a.rename(ctx, life.PreviousIdentifier.Namespace, life.PreviousIdentifier.Name, d)
		if err != nil {
			return uuid.Nil, err
		}
		ref = renamed
	}
	if ref.ID == uuid.Nil {
		var err error
		if ref, err = a.byCatalog(ctx, d, sym); err != nil {
			return uuid.Nil, err
		}
	}
	if ref.ID == uuid.Nil {
		// The dataset's own name may be bound to an asset that holds another name: a table the
		// tables package knows by its catalog name, bound to its storage location.
		lookups := append(slices.Clip(links), catalog.SymlinkID(d.Namespace, d.Name))
		var err error
		if ref, err = a.resolveName(ctx, d.Namespace, d.Name, datasetKind(d.Facets), lookups); err != nil {
			return uuid.Nil, err
		}
	}
	drop, err := a.lifecycle(ctx, ref, change == "DROP")
	if err != nil {
		return uuid.Nil, err
	}
	id := ref.ID
	for _, l := range links {
		if _, err := a.s.cat.BindExternalID(ctx, id, l); err != nil {
			if errors.Is(err, catalog.ErrConflict) {
				a.warn("symlink %s of %s.%s not bound: %v", l.Value, d.Namespace, d.Name, err)
				continue
			}
			return uuid.Nil, err
		}
	}
	if err := a.applyFacets(ctx, id, d.Facets, true); err != nil {
		return uuid.Nil, err
	}
	if drop {
		if _, err := a.s.cat.Delete(ctx, id, catalog.AnyVersion); err != nil {
			return uuid.Nil, err
		}
		a.setDeleted(id, true)
		a.touched = append(a.touched, id)
	}
	return id, nil
}

// lifecycle applies a dataset's appearance in this event to its lifetime, in event time: a DROP
// newer than every use deletes it; a use newer than its last DROP revives it (the table was
// re-created). The outcome depends only on the newest use and the newest DROP, so events may
// arrive in any order. A revival happens here; a deletion is left to the caller (drop true), to
// run after the event's symlinks and facets are recorded on the still-live asset.
func (a *applier) lifecycle(ctx context.Context, ref catalog.Ref, drop bool) (bool, error) {
	t := a.ev.EventTime
	st, err := a.state(ctx, ref.ID)
	if err != nil {
		return false, err // names the asset already
	}
	if st == nil {
		if !drop {
			return false, nil // never dropped: nothing to weigh this use against
		}
		// The first DROP: earlier uses are in the edges and run I/O of the asset; the newest
		// of them is the activity to weigh the DROP against.
		last, lerr := a.lastUse(ctx, ref.ID)
		if lerr != nil {
			return false, lerr
		}
		q := a.tx.LineageState.Create().SetID(ref.ID)
		if !last.IsZero() {
			q.SetLastActivity(last)
		}
		st, err = q.Save(ctx)
		a.states[ref.ID] = st
	}
	if err != nil {
		return false, fmt.Errorf("lineage: lifecycle of %s: %w", ref.ID, err)
	}
	u := a.tx.LineageState.UpdateOne(st)
	dirty := false
	if drop && (st.DroppedAt == nil || t.After(*st.DroppedAt)) {
		u.SetDroppedAt(t)
		st.DroppedAt, dirty = &t, true
	}
	if !drop && (st.LastActivity == nil || t.After(*st.LastActivity)) {
		u.SetLastActivity(t)
		st.LastActivity, dirty = &t, true
	}
	if dirty {
		if err := u.Exec(ctx); err != nil {
			return false, fmt.Errorf("lineage: lifecycle of %s: %w", ref.ID, err)
		}
	}
	dropped := st.DroppedAt != nil && (st.LastActivity == nil || !st.LastActivity.After(*st.DroppedAt))
	if dropped {
		return !ref.Deleted, nil
	}
	if ref.Deleted && st.DroppedAt != nil {
		if _, err := a.s.cat.Restore(ctx, ref.ID, catalog.AnyVersion); err != nil {
			if errors.Is(err, catalog.ErrConflict) {
				a.warn("dataset %s was written after its DROP but stays deleted: %v", ref.ID, err)
				return false, nil
			}
			return false, err
		}
		a.setDeleted(ref.ID, false)
		a.touched = append(a.touched, ref.ID)
	}
	return false, nil
}

// lastUse is the newest event time at which lineage saw the asset used (read or written).
func (a *applier) lastUse(ctx context.Context, id uuid.UUID) (time.Time, error) {
	if err := a.flushEdges(ctx); err != nil { // this batch's widened intervals count too
		return time.Time{}, err
	}
	var last time.Time
	for _, p := range []predicate.LineageEdge{lineageedge.FromID(id), lineageedge.ToID(id)} {
		e, err := a.tx.LineageEdge.Query().Where(p).Order(ent.Desc(lineageedge.FieldLastSeen)).First(ctx)
		if ent.IsNotFound(err) {
			continue
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("lineage: last use of %s: %w", id, err)
		}
		if e.LastSeen.After(last) {
			last = e.LastSeen.UTC()
		}
	}
	return last, nil
}

func (a *applier) setDeleted(id uuid.UUID, deleted bool) {
	for k, r := range a.cache {
		if r.ID == id {
			r.Deleted = deleted
			a.cache[k] = r
		}
	}
}

// rename applies lifecycleStateChange RENAME: the asset holding the previous identifier takes
// the new name and keeps its ID. It returns a zero Ref when there is nothing to rename (the
// previous name is unknown), leaving ordinary resolution to find or create the asset.
func (a *applier) rename(ctx context.Context, prevNS, prevName string, d Dataset) (catalog.Ref, error) {
	if catalog.ValidateName(prevNS, prevName) != nil {
		a.warn("RENAME of %s.%s ignored: previousIdentifier is not a valid name", d.Namespace, d.Name)
		return catalog.Ref{}, nil
	}
	cur, curOK, err := a.s.cat.Lookup(ctx, catalog.SpaceDataset, d.Namespace, d.Name)
	if err != nil {
		return catalog.Ref{}, err
	}
	prev, prevOK, err := a.s.cat.Lookup(ctx, catalog.SpaceDataset, prevNS, prevName)
	if err != nil {
		return catalog.Ref{}, err
	}
	switch {
	case curOK && !cur.Former:
		if prevOK && prev.ID != cur.ID {
			a.warn("RENAME %s.%s -> %s.%s not applied: the new name already belongs to another asset (%s)", prevNS, prevName, d.Namespace, d.Name, cur.ID)
		}
		return cur, nil // already renamed (a replay), or a distinct asset holds the name
	case prevOK && !prev.Former:
		if _, err := a.s.cat.Rename(ctx, prev.ID, catalog.AnyVersion, d.Namespace, d.Name); err != nil {
			return catalog.Ref{}, err
		}
		delete(a.cache, nameKey{catalog.SpaceDataset, prevNS, prevName})
		a.touched = append(a.touched, prev.ID)
		prev.Former = false
		return prev, nil
	}
	return catalog.Ref{}, nil
}

// resolveName finds the asset for a name: its current holder; else a live asset bound to one of
// the symlinks; else the asset that held the name before, when this event happened before it let
// go of the name or it was dropped by lineage (and may be revived); else a new asset.
func (a *applier) resolveName(ctx context.Context, ns, name string, kind catalog.Kind, links []catalog.ExternalIDInput) (catalog.Ref, error) {
	k := nameKey{catalog.SpaceOf(kind), ns, name}
	if r, ok := a.cache[k]; ok {
		return r, nil
	}
	found := func(r catalog.Ref) (catalog.Ref, error) {
		a.cache[k] = r
		return r, nil
	}
	ref, ok, err := a.s.cat.Lookup(ctx, k.space, ns, name)
	if err != nil {
		return catalog.Ref{}, err
	}
	if ok && !ref.Former {
		return found(ref)
	}
	for _, l := range links {
		byLink, ok, err := a.s.cat.LookupExternal(ctx, l.System, l.Value)
		if err != nil {
			return catalog.Ref{}, err
		}
		if ok && !byLink.Deleted {
			byLink.Former = true
			return found(byLink)
		}
	}
	if ok {
		if ref.Until != nil && a.ev.EventTime.Before(*ref.Until) {
			return found(ref) // a late event from before the rename or delete
		}
		if ref.Deleted {
			st, err := a.state(ctx, ref.ID)
			if err != nil {
				return catalog.Ref{}, err
			}
			if st != nil && st.DroppedAt != nil {
				return found(ref) // dropped by lineage: the same table, perhaps re-created
			}
		}
	}
	res, err := a.s.cat.Create(ctx, catalog.CreateInput{Kind: kind, Namespace: ns, Name: name})
	if err != nil {
		return catalog.Ref{}, err
	}
	a.created(res.Asset.ID)
	if ok && ref.Until != nil {
		if err := a.warnReused(ctx, ns, name, ref, res.Asset.ID); err != nil {
			return catalog.Ref{}, err
		}
	}
	return found(catalog.Ref{ID: res.Asset.ID})
}

// warnReused says that a name another asset held until before the event was given to a new
// asset. Names resolve by time (an engine that renamed or dropped a table can only read a table
// created under the old name since), so the new asset is right when the table is new; when the
// producer still uses the old name for the renamed table, the person reading this is the one
// who can tell, and fix the producer.
func (a *applier) warnReused(ctx context.Context, ns, name string, former catalog.Ref, created uuid.UUID) error {
	sums, err := a.s.cat.Summaries(ctx, []uuid.UUID{former.ID})
	if err != nil {
		return err
	}
	holder, what := former.ID.String(), "renamed"
	if s, ok := sums[former.ID]; ok {
		holder = fmt.Sprintf("%s %s (asset %s)", s.Namespace, s.Name, former.ID)
	}
	if former.Deleted {
		what = "deleted"
	}
	a.warn("%s %s was the name of %s until %s, which has since been %s; this event (at %s) is later, so the name now belongs to a new asset %s. "+
		"If the event means the same table, send its current name (or a symlink to it) and delete the new asset",
		ns, name, holder, former.Until.UTC().Format(time.RFC3339), what, a.ev.EventTime.UTC().Format(time.RFC3339), created)
	return nil
}

// byCatalog resolves a dataset that carries an OpenLineage catalog facet of an Iceberg catalog
// to the table synced from that catalog: the asset currently named
// ("iceberg://<catalog name>", table identifier), the identifier being the dataset's TABLE
// symlink or else its name. A zero Ref means no such table is known.
func (a *applier) byCatalog(ctx context.Context, d Dataset, sym symlinksFacet) (catalog.Ref, error) {
	var cf catalogFacet
	if !d.Facets.facet("catalog", &cf) || !strings.EqualFold(cf.Framework, "iceberg") || cf.Name == "" {
		return catalog.Ref{}, nil
	}
	ident := d.Name
	for _, s := range sym.Identifiers {
		if strings.EqualFold(s.Type, "TABLE") {
			ident = s.Name
			break
		}
	}
	ref, ok, err := a.s.cat.Lookup(ctx, catalog.SpaceDataset, "iceberg://"+cf.Name, ident)
	if err != nil || !ok || ref.Former || ref.Deleted {
		return catalog.Ref{}, err
	}
	return ref, nil
}

func datasetKind(f Facets) catalog.Kind {
	var t datasetTypeFacet
	f.facet("datasetType", &t)
	switch strings.ToUpper(t.DatasetType) {
	case "VIEW":
		return catalog.KindView
	case "STREAM", "TOPIC":
		return catalog.KindTopic
	case "FILE":
		return catalog.KindFileSet
	}
	return catalog.KindTable
}

// applyFacets stores every facet (known or not) as the asset's latest value, unless a newer
// event already set it, and applies documentation and ownership to the catalog; a dataset's
// schema and tags are recorded at the end of the batch (syncCuration).
func (a *applier) applyFacets(ctx context.Context, id uuid.UUID, facets Facets, dataset bool) error {
	for name, raw := range facets {
		if name == "columnLineage" || len(raw) == 0 || string(raw) == "null" {
			continue // column lineage lives in its own table
		}
		newer, err := a.putFacet(ctx, id, name, string(raw))
		if err != nil {
			return err
		}
		if slices.Contains(docFacets, name) {
			a.documented = append(a.documented, id)
		}
		if !newer {
			continue
		}
		switch name {
		case schemaFacetName, tagsFacetName:
			if dataset {
				a.curationChanged(id, name)
			}
		case "documentation":
			var doc documentationFacet
			if facets.facet(name, &doc) && len(doc.Description) <= catalog.MaxDescription {
				if _, err := a.s.cat.Update(ctx, id, catalog.AnyVersion, catalog.UpdateInput{Description: &doc.Description}); err != nil && !errors.Is(err, catalog.ErrConflict) {
					return err
				}
			}
		case "ownership":
			var own ownershipFacet
			facets.facet(name, &own)
			for _, o := range own.Owners {
				in := catalog.OwnerInput{Principal: o.Name, Kind: catalog.OwnerUser, Role: ownerRole(o.Type)}
				if strings.HasPrefix(o.Name, "group:") || strings.HasPrefix(o.Name, "team:") {
					in.Kind = catalog.OwnerGroup
				}
				if _, err := a.s.cat.SetOwner(ctx, id, catalog.AnyVersion, in); err != nil {
					if errors.Is(err, catalog.ErrInvalid) || errors.Is(err, catalog.ErrConflict) {
						a.warn("owner %q not applied: %v", o.Name, err)
						continue
					}
					return err
				}
			}
		}
	}
	return nil
}

// ownerRole turns an OpenLineage owner type (free text, e.g. MAINTAINER) into a catalog role.
func ownerRole(t string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(t) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('_')
		}
	}
	if b.Len() == 0 || b.Len() > catalog.MaxRoleBytes {
		return "technical"
	}
	return b.String()
}

// putFacet records a facet value for the batch to write at flush; it reports whether this
// event's value is now the latest.
func (a *applier) putFacet(ctx context.Context, id uuid.UUID, name, value string) (bool, error) {
	cur, err := a.facet(ctx, id, name)
	switch {
	case err != nil:
		return false, err
	case cur == nil:
		row := &ent.AssetFacet{AssetID: id, Name: name, Value: value, EventTime: a.ev.EventTime, UpdatedAt: a.now}
		a.facets[id][name], a.facetWrites[facetKey{id, name}] = row, row
		return true, nil
	case a.ev.EventTime.Before(cur.EventTime), cur.Value == value:
		return false, nil
	}
	row := *cur // keeps the row's ID (0 while it is new in this batch)
	row.Value, row.EventTime, row.UpdatedAt = value, a.ev.EventTime, a.now
	a.facets[id][name], a.facetWrites[facetKey{id, name}] = &row, &row
	return true, nil
}

var terminal = map[string]bool{"COMPLETE": true, "FAIL": true, "ABORT": true}

// upsertRun records the run and merges this event into it (written at flush). State follows
// event time, and a run never leaves a terminal state (a late RUNNING after COMPLETE changes
// nothing).
func (a *applier) upsertRun(ctx context.Context, jobID uuid.UUID, inputs, outputs []uuid.UUID) error {
	ev := a.ev
	state := ev.EventType
	var parent parentFacet
	ev.RunFacets.facet("parent", &parent)
	r := a.runs[ev.RunID]
	if r == nil {
		if state == "" {
			state = "OTHER"
		}
		r = &runState{isNew: true, row: ent.Run{ID: ev.RunID, JobAssetID: jobID, State: run.State(state), StateTime: ev.EventTime,
			ParentRunID: parent.Run.RunID, Facets: mergeFacets(nil, ev.RunFacets, true), EventCount: 1, CreatedAt: a.now, UpdatedAt: a.now}}
		if state == "START" || state == "RUNNING" || terminal[state] {
			r.row.StartedAt = &ev.EventTime
		}
		if terminal[state] {
			r.row.EndedAt = &ev.EventTime
		}
		var nominal nominalTimeFacet
		ev.RunFacets.facet("nominalTime", &nominal)
		if t, err := ParseTime(nominal.NominalStartTime); err == nil {
			r.row.NominalStart = &t
		}
		if t, err := ParseTime(nominal.NominalEndTime); err == nil {
			r.row.NominalEnd = &t
		}
		a.runs[ev.RunID] = r
	} else {
		row := &r.row
		if row.JobAssetID != jobID {
			a.warn("run %s belongs to job asset %s; this event names another job, which is ignored for the run", ev.RunID, row.JobAssetID)
		}
		later := !ev.EventTime.Before(row.StateTime)
		if state != "" && later && !(terminal[string(row.State)] && !terminal[state]) {
			row.State, row.StateTime = run.State(state), ev.EventTime
		}
		if state == "START" && (row.StartedAt == nil || ev.EventTime.Before(*row.StartedAt)) {
			row.StartedAt = &ev.EventTime
		}
		if terminal[state] && (row.EndedAt == nil || ev.EventTime.After(*row.EndedAt)) {
			row.EndedAt = &ev.EventTime
		}
		row.Facets = mergeFacets(row.Facets, ev.RunFacets, later)
		if row.ParentRunID == "" {
			row.ParentRunID = parent.Run.RunID
		}
		row.EventCount++
		row.UpdatedAt = a.now
		r.dirty = true
	}
	for role, ids := range map[string][]uuid.UUID{"input": inputs, "output": outputs} {
		for _, id := range ids {
			k := [3]string{ev.RunID, id.String(), role}
			if t, ok := a.runIO[k]; !ok || ev.EventTime.Before(t) {
				a.runIO[k] = ev.EventTime
			}
		}
	}
	return nil
}

func mergeFacets(cur map[string]json.RawMessage, add Facets, later bool) map[string]json.RawMessage {
	merged := make(map[string]json.RawMessage, len(cur)+len(add))
	for k, v := range cur {
		merged[k] = v
	}
	for k, v := range add {
		if _, had := merged[k]; !had || later {
			merged[k] = v
		}
	}
	return merged
}

// upsertEdge records from -> to. New edges are inserted only where no committed row exists (ON
// CONFLICT alone would spend an ID on every known edge), so edge IDs (the change sequence
// replicas tail) are only consumed by real new edges, and by the rare concurrent insert.
func (a *applier) upsertEdge(ctx context.Context, from, to uuid.UUID) error {
	// Known edges (the graph holds every committed edge) have their seen interval widened at
	// flush, without a read; others are looked up and created in bulk at flush.
	a.touchEdge(from, to, a.ev.EventTime, a.ev.RunID, a.knownEdges[[2]uuid.UUID{from, to}] || a.s.graph.hasEdge(from, to))
	return nil
}

// columnLineage records output field <- input field edges from the columnLineage facet.
func (a *applier) columnLineage(ctx context.Context, outID uuid.UUID, d Dataset) error {
	var cl columnLineageFacet
	if !d.Facets.facet("columnLineage", &cl) {
		return nil
	}
	for outField, f := range cl.Fields {
		if outField == "" || len(outField) > maxFieldLength {
			continue
		}
		for _, in := range f.InputFields {
			if in.Field == "" || len(in.Field) > maxFieldLength || catalog.ValidateName(in.Namespace, in.Name) != nil {
				a.warn("column lineage input %q of %s.%s.%s skipped: incomplete", in.Field, d.Namespace, d.Name, outField)
				continue
			}
			inRef, err := a.resolveName(ctx, in.Namespace, in.Name, catalog.KindTable, nil)
			if err != nil {
				return err
			}
			inID := inRef.ID
			type tr struct {
				typ, sub, desc string
				mask           bool
			}
			var trs []tr
			for _, t := range in.Transformations {
				trs = append(trs, tr{t.Type, t.Subtype, t.Description, t.Masking})
			}
			if len(trs) == 0 {
				trs = append(trs, tr{typ: f.TransformationType, desc: f.TransformationDescription})
			}
			for _, t := range trs {
				if err := a.upsertColumnEdge(ctx, outID, outField, inID, in.Field, t.typ, t.sub, t.desc, t.mask); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (a *applier) upsertColumnEdge(ctx context.Context, outID uuid.UUID, outField string, inID uuid.UUID, inField, typ, sub, desc string, mask bool) error {
	t := a.ev.EventTime
	cur, err := a.tx.ColumnEdge.Query().Where(columnedge.OutAssetID(outID), columnedge.OutField(outField),
		columnedge.InAssetID(inID), columnedge.InField(inField), columnedge.TransformationType(typ), columnedge.TransformationSubtype(sub)).Only(ctx)
	if ent.IsNotFound(err) {
		return a.tx.ColumnEdge.Create().SetOutAssetID(outID).SetOutField(outField).SetInAssetID(inID).SetInField(inField).
			SetTransformationType(typ).SetTransformationSubtype(sub).SetDescription(desc).SetMasking(mask).
			SetFirstSeen(t).SetLastSeen(t).SetLastRunID(a.ev.RunID).Exec(ctx)
	}
	if err != nil {
		return fmt.Errorf("lineage: read column edge: %w", err)
	}
	if !t.Before(cur.FirstSeen) && !t.After(cur.LastSeen) {
		return nil
	}
	u := a.tx.ColumnEdge.UpdateOne(cur)
	if t.Before(cur.FirstSeen) {
		u.SetFirstSeen(t)
	}
	if t.After(cur.LastSeen) {
		u.SetLastSeen(t).SetLastRunID(a.ev.RunID).SetDescription(desc).SetMasking(mask)
	}
	return u.Exec(ctx)
}
