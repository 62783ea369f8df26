package handlers

import (
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/lineage"
)

func (a *API) columnLineageRoutes() {
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    "/api/v1/column-lineage",
		Summary: "Marquez-shaped column lineage",
		Tag:     "lineage",
		Params: []param{
			{Name: "nodeId", In: "query", Required: true, Description: "datasetField:<namespace>:<name>:<field> or dataset:<namespace>:<name>"},
			{Name: "depth", In: "query"},
			{Name: "withDownstream", In: "query"},
		},
		Responses: map[int]any{200: columnLineageResponse{}},
	}, a.columnLineage)
}

type columnInputField struct {
	Namespace             string `json:"namespace"`
	Dataset               string `json:"dataset"`
	Field                 string `json:"field"`
	TransformationType    string `json:"transformationType"`
	TransformationSubtype string `json:"transformationSubtype"`
	Description           string `json:"transformationDescription"`
	Masking               bool   `json:"masking"`
}

type columnData struct {
	Namespace   string             `json:"namespace"`
	Dataset     string             `json:"dataset"`
	Field       string             `json:"field"`
	AssetID     uuid.UUID          `json:"assetId"`
	InputFields []columnInputField `json:"inputFields"`
}

type columnNode struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Data     columnData    `json:"data"`
	InEdges  []marquezEdge `json:"inEdges"`
	OutEdges []marquezEdge `json:"outEdges"`
}

type columnLineageResponse struct {
	Graph []columnNode `json:"graph"`
}

func fieldNodeID(ns, name, field string) string {
	return "datasetField:" + ns + ":" + name + ":" + field
}

func (a *API) columnLineage(c echo.Context) error {
	nodeID := c.QueryParam("nodeId")
	if nodeID == "" {
		return badRequest("nodeId", "nodeId is required, e.g. nodeId=datasetField:warehouse:orders:amount")
	}
	depth, err := queryInt(c, "depth", lineage.MarquezDefault, 1, lineage.MaxDepth)
	if err != nil {
		return err
	}
	down := false
	if s := c.QueryParam("withDownstream"); s != "" {
		if down, err = strconv.ParseBool(s); err != nil {
			return badRequest("withDownstream", "withDownstream must be true or false")
		}
	}
	nodes, err := a.cfg.Lineage.ColumnLineage(c.Request().Context(), nodeID, depth, down)
	if err != nil {
		return err
	}
	names := map[uuid.UUID][2]string{}
	for _, n := range nodes {
		names[n.AssetID] = [2]string{n.Dataset.Namespace, n.Dataset.Name}
	}
	id := func(f lineage.FieldRef) string {
		nn := names[f.AssetID]
		return fieldNodeID(nn[0], nn[1], f.Field)
	}
	out := columnLineageResponse{Graph: make([]columnNode, 0, len(nodes))}
	for _, n := range nodes {
		me := id(n.FieldRef)
		cn := columnNode{ID: me, Type: "DATASET_FIELD", InEdges: []marquezEdge{}, OutEdges: []marquezEdge{},
			Data: columnData{Namespace: n.Dataset.Namespace, Dataset: n.Dataset.Name, Field: n.Field, AssetID: n.AssetID, InputFields: []columnInputField{}}}
		for _, in := range n.Inputs {
			nn := names[in.AssetID]
			cn.Data.InputFields = append(cn.Data.InputFields, columnInputField{Namespace: nn[0], Dataset: nn[1], Field: in.Field,
				TransformationType: in.TransformationType, TransformationSubtype: in.TransformationSubtype, Description: in.Description, Masking: in.Masking})
		}
		for _, in := range n.In {
			cn.InEdges = append(cn.InEdges, marquezEdge{Origin: id(in), Destination: me})
		}
		for _, o := range n.Out {
			cn.OutEdges = append(cn.OutEdges, marquezEdge{Origin: me, Destination: id(o)})
		}
		out.Graph = append(out.Graph, cn)
	}
	return c.JSON(http.StatusOK, out)
}
