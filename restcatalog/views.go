package restcatalog

// Views, as the spec serves them: list, create, load, exists, replace (a commit with
// requirements and updates, compare-and-swap on the view's pointer), drop, rename, register.
// The domain is warehouse's (views.go); a token's load of a view counts as a read of its asset
// and a replace as a write, as a table's (loads.go).

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/warehouse"
)

// viewError names a view that is not served as the spec does (NoSuchViewException).
func viewError(err error) error {
	if errors.Is(err, warehouse.ErrNoSuchView) {
		var se *warehouse.ServeError
		msg := err.Error()
		if errors.As(err, &se) {
			msg = se.Message
		}
		return apiError(http.StatusNotFound, "NoSuchViewException", msg)
	}
	return err
}

func viewArgs(c echo.Context) (string, warehouse.TableIdent, error) {
	wh, ns, err := namespaceArgs(c)
	if err != nil {
		return "", warehouse.TableIdent{}, err
	}
	name, err := pathParam(c, "view")
	if err != nil {
		return "", warehouse.TableIdent{}, err
	}
	return wh, warehouse.TableIdent{Namespace: ns, Name: name}, nil
}

func (f *Face) listViews(c echo.Context) error { return listNames(c, f.cfg.Warehouse.ListViews) }

// loadViewResponse is the spec's LoadViewResult.
type loadViewResponse struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

func answerView(c echo.Context, v warehouse.ServedView) error {
	b, err := json.Marshal(v.Metadata)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, loadViewResponse{MetadataLocation: v.MetadataLocation, Metadata: b, Config: map[string]string{}})
}

// createViewBody is the spec's CreateViewRequest.
type createViewBody struct {
	Name        string             `json:"name"`
	Location    string             `json:"location"`
	Schema      *iceberg.Schema    `json:"schema"`
	ViewVersion *view.Version      `json:"view-version"`
	Properties  iceberg.Properties `json:"properties"`
}

func (f *Face) createView(c echo.Context) error {
	wh, ns, err := namespaceArgs(c)
	if err != nil {
		return err
	}
	var in createViewBody
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.ViewVersion != nil && len(in.ViewVersion.Representations) > maxRepresentations {
		return badRequest("a view version may hold at most %d representations", maxRepresentations)
	}
	v, err := f.cfg.Warehouse.CreateView(c.Request().Context(), wh, warehouse.CreateViewInput{Ident: warehouse.TableIdent{Namespace: ns, Name: in.Name},
		Schema: in.Schema, Version: in.ViewVersion, Location: in.Location, Properties: in.Properties})
	if err != nil {
		return viewError(err)
	}
	return answerView(c, v)
}

// maxRepresentations bounds one view version's SQL texts (one a dialect).
const maxRepresentations = 100

func (f *Face) loadView(c echo.Context) error {
	wh, id, err := viewArgs(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	v, err := f.cfg.Warehouse.LoadView(ctx, wh, id)
	if err != nil {
		return viewError(err)
	}
	f.loaded(ctx, v.AssetID)
	return answerView(c, v)
}

func (f *Face) viewExists(c echo.Context) error {
	wh, id, err := viewArgs(c)
	if err != nil {
		return err
	}
	if _, _, err := f.cfg.Warehouse.ViewPointer(c.Request().Context(), wh, id); err != nil {
		return viewError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// commitViewBody is the spec's CommitViewRequest.
type commitViewBody struct {
	Identifier   *identifier       `json:"identifier"`
	Requirements view.Requirements `json:"requirements"`
	Updates      view.Updates      `json:"updates"`
}

func (f *Face) replaceView(c echo.Context) error {
	wh, id, err := viewArgs(c)
	if err != nil {
		return err
	}
	var in commitViewBody
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Identifier != nil && (in.Identifier.Name != id.Name || strings.Join(in.Identifier.Namespace, "\x1f") != strings.Join(id.Namespace, "\x1f")) {
		return badRequest("the body's identifier %s.%s is not the view in the path, %s", strings.Join(in.Identifier.Namespace, "."), in.Identifier.Name, id)
	}
	if len(in.Requirements)+len(in.Updates) > maxUpdates {
		return badRequest("a view change may hold at most %d requirements and updates", maxUpdates)
	}
	ctx := c.Request().Context()
	v, err := f.cfg.Warehouse.ReplaceView(ctx, wh, id, in.Requirements, in.Updates)
	if err != nil {
		return viewError(err)
	}
	f.committed(ctx, v.AssetID)
	if f.cfg.RecordUse != nil {
		if err := f.cfg.RecordUse(ctx, v.AssetID, "write", catalog.ActorFrom(ctx), "iceberg-view-commit:"+v.MetadataLocation, f.cfg.Now()); err != nil {
			f.cfg.Logger.Warn("iceberg rest: could not record a view commit as usage", "asset_id", v.AssetID, "err", err)
		}
	}
	return answerView(c, v)
}

func (f *Face) dropView(c echo.Context) error {
	wh, id, err := viewArgs(c)
	if err != nil {
		return err
	}
	if err := f.cfg.Warehouse.DropView(c.Request().Context(), wh, id); err != nil {
		return viewError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (f *Face) renameView(c echo.Context) error {
	wh, err := prefix(c)
	if err != nil {
		return err
	}
	var in renameBody
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Source == nil || in.Destination == nil {
		return badRequest("a rename needs source and destination identifiers")
	}
	from := warehouse.TableIdent{Namespace: in.Source.Namespace, Name: in.Source.Name}
	to := warehouse.TableIdent{Namespace: in.Destination.Namespace, Name: in.Destination.Name}
	if err := f.cfg.Warehouse.RenameView(c.Request().Context(), wh, from, to); err != nil {
		return viewError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (f *Face) registerView(c echo.Context) error {
	wh, ns, err := namespaceArgs(c)
	if err != nil {
		return err
	}
	var in registerBody
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.MetadataLocation == "" {
		return badRequest("metadata-location is empty: give the URI of the view's metadata JSON file")
	}
	v, err := f.cfg.Warehouse.RegisterView(c.Request().Context(), wh, warehouse.TableIdent{Namespace: ns, Name: in.Name}, in.MetadataLocation)
	if err != nil {
		return viewError(err)
	}
	return answerView(c, v)
}
