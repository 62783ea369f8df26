package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// An asset's life on its page: rename, deprecate and un-deprecate, delete (of the catalog
// record; the data is not touched) and restore. The same forms as curation (POST, the session's
// CSRF token, write scope, the version the page showed), so a refusal shows the page again with
// what was typed kept.

func (u *UI) lifecycleRoutes() {
	for path, h := range map[string]http.HandlerFunc{
		"rename":  u.editAsset("rename", u.notServed(editRename)),
		"status":  u.editAsset("status", editStatus),
		"delete":  u.editAsset("delete", u.notServed(editDelete)),
		"restore": u.editAsset("restore", u.notServed(editRestore)),
	} {
		u.handleFunc("POST /assets/{id}/"+path, h)
	}
}

// notServed refuses an edit of a table served through the Iceberg REST catalog: its name and
// its life are the catalog's (warehouse.Service.RefuseServed says why).
func (u *UI) notServed(apply assetEditFunc) assetEditFunc {
	return func(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
		if u.cfg.Warehouse != nil {
			if err := u.cfg.Warehouse.RefuseServed(ctx, id); err != nil {
				return "", "", err
			}
		}
		return apply(ctx, cat, id, version, f)
	}
}

func editRename(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	ns, name := strings.TrimSpace(f.Get("namespace")), strings.TrimSpace(f.Get("name"))
	if name == "" {
		return "", "", &catalog.Error{Kind: catalog.ErrInvalid, Field: "name", Message: "type the new name (the namespace may stay as it is)"}
	}
	_, err := cat.Rename(ctx, id, version, ns, name)
	return "renamed", "names-h", err
}

func editStatus(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	st := catalog.Status(f.Get("status"))
	if st != catalog.StatusActive && st != catalog.StatusDeprecated {
		return "", "", &catalog.Error{Kind: catalog.ErrInvalid, Field: "status", Message: "the form asks for a status other than active or deprecated; reload the page"}
	}
	_, err := cat.Update(ctx, id, version, catalog.UpdateInput{Status: &st})
	if st == catalog.StatusDeprecated {
		return "deprecated", "lifecycle-h", err
	}
	return "undeprecated", "lifecycle-h", err
}

// editDelete deletes the asset's catalog record once the person typed its name: a slip of the
// mouse never deletes.
func editDelete(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	a, err := cat.Get(ctx, id)
	if err != nil {
		return "", "", err
	}
	if typed := strings.TrimSpace(f.Get("confirm")); typed != a.Name {
		return "", "", &catalog.Error{Kind: catalog.ErrInvalid, Field: "confirm", Message: "To delete, type the asset's name, " +
			a.Name + ", exactly; nothing was deleted"}
	}
	_, err = cat.Delete(ctx, id, version)
	return "deleted", "lifecycle-h", err
}

func editRestore(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	_, err := cat.Restore(ctx, id, version)
	return "restored", "lifecycle-h", err
}
