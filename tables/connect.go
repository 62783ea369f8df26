package tables

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/rest" // registers the "rest" catalog type
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/lib/pq"  // "postgres" driver for SQL catalogs
	_ "modernc.org/sqlite" // "sqlite" driver for SQL catalogs
)

// ConnectionConfig is one Iceberg catalog connection in the configuration file.
type ConnectionConfig struct {
	// Name identifies the connection in Tidemark; it is also the catalog name iceberg-go's SQL
	// catalog stores on every row, unless Catalog says otherwise.
	Name string `json:"name"`
	// Type is "sql" (iceberg-go's SQL catalog on SQLite or PostgreSQL) or "rest".
	Type string `json:"type"`
	// URI is the SQL catalog's database (a SQLite file DSN or a postgres:// URL) or the REST
	// catalog's base URL.
	URI string `json:"uri"`
	// Dialect is "sqlite" or "postgres" for SQL catalogs.
	Dialect   string `json:"dialect,omitempty"`
	Catalog   string `json:"catalog,omitempty"`
	Warehouse string `json:"warehouse,omitempty"`
	// Namespace is the asset namespace the tables get (default "iceberg://<name>"); name the
	// connection as your engines name the catalog, so OpenLineage "catalog" facets match.
	Namespace string `json:"namespace,omitempty"`
	// Properties are passed to iceberg-go as they are (credentials, s3.endpoint, ...).
	Properties map[string]string `json:"properties,omitempty"`
}

// Config is the Iceberg catalog configuration file.
type Config struct {
	Connections []ConnectionConfig `json:"connections"`
	// IOProperties are the iceberg-go IO properties for tables registered by metadata
	// location (s3.endpoint, s3.region, credentials, ...).
	IOProperties map[string]string `json:"io_properties,omitempty"`
	// Warehouses are warehouses served over the Iceberg REST catalog protocol, each with its
	// own settings (beside --iceberg-warehouses, which names locations only).
	Warehouses []WarehouseConfig `json:"warehouses,omitempty"`
}

// WarehouseConfig is one served warehouse in the configuration file.
type WarehouseConfig struct {
	Name     string `json:"name"`
	Location string `json:"location"`
	// Namespace is the asset namespace its tables get (default "iceberg://<name>").
	Namespace string `json:"namespace,omitempty"`
	// IOProperties are the iceberg-go IO properties Tidemark uses for it (default: the file's
	// io_properties). Its keys sign and vend; they are never logged or answered unless vend is
	// keys.
	IOProperties map[string]string `json:"io_properties,omitempty"`
	// Layout is "uuid" (default: <location>/<levels>/<name>-<uuid>) or "name".
	Layout string `json:"layout,omitempty"`
	// Storage is how clients reach the location (answered in every table load).
	Storage struct {
		Endpoint  string `json:"endpoint,omitempty"`
		Region    string `json:"region,omitempty"`
		PathStyle *bool  `json:"path_style,omitempty"`
	} `json:"storage,omitempty"`
	// Access is how storage access is handed out per table.
	Access struct {
		Vend            string `json:"vend,omitempty"` // "", "sts" or "keys"
		RoleARN         string `json:"role_arn,omitempty"`
		STSEndpoint     string `json:"sts_endpoint,omitempty"`
		SessionDuration string `json:"session_duration,omitempty"` // a Go duration, 15m to 12h
		RemoteSigning   bool   `json:"remote_signing,omitempty"`
	} `json:"access,omitempty"`
}

// warehouse turns the configuration into a Warehouse (checked when the service is built).
func (c WarehouseConfig) warehouse() (Warehouse, error) {
	w := Warehouse{Name: c.Name, Location: c.Location, Namespace: c.Namespace, Layout: c.Layout,
		Storage: StorageSettings{Endpoint: c.Storage.Endpoint, Region: c.Storage.Region, PathStyle: c.Storage.PathStyle},
		Access:  Access{Vend: c.Access.Vend, RoleARN: c.Access.RoleARN, STSEndpoint: c.Access.STSEndpoint, RemoteSigning: c.Access.RemoteSigning}}
	if len(c.IOProperties) > 0 {
		w.Props = iceberg.Properties(maps.Clone(c.IOProperties))
	}
	if c.Access.SessionDuration != "" {
		d, err := time.ParseDuration(c.Access.SessionDuration)
		if err != nil {
			return Warehouse{}, fmt.Errorf("tables: warehouse %s: session_duration %q: give a duration such as 1h", c.Name, c.Access.SessionDuration)
		}
		w.Access.SessionDuration = d
	}
	return w, nil
}

// LoadConfig reads a configuration file and returns the options it sets (IO properties, served
// warehouses) and its connections (not yet opened; pass them with WithConnections).
func LoadConfig(path string) ([]Option, []*Connection, error) {
	opts, conns, _, err := LoadConfigWarehouses(path)
	return opts, conns, err
}

// LoadConfigWarehouses is LoadConfig that also says how many warehouses the file serves.
func LoadConfigWarehouses(path string) ([]Option, []*Connection, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("tables: iceberg catalogs: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, nil, 0, fmt.Errorf("tables: iceberg catalogs: %s: %w", path, err)
	}
	var conns []*Connection
	for i, c := range cfg.Connections {
		conn, err := NewConnection(c)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%w (iceberg catalogs %s, connection %d)", err, path, i+1)
		}
		conns = append(conns, conn)
	}
	opts := []Option{WithIOProperties(cfg.IOProperties)}
	for i, wc := range cfg.Warehouses {
		w, err := wc.warehouse()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%w (iceberg catalogs %s, warehouse %d)", err, path, i+1)
		}
		opts = append(opts, WithWarehouses(w))
	}
	return opts, conns, len(cfg.Warehouses), nil
}

// Connection is a configured Iceberg catalog, opened on first use and kept open; a failed open
// is retried on the next use.
type Connection struct {
	Name      string
	Namespace string
	Props     iceberg.Properties

	open func(ctx context.Context) (icecat.Catalog, error)
	mu   sync.Mutex
	cat  icecat.Catalog
}

// NewConnection validates a connection's configuration.
func NewConnection(c ConnectionConfig) (*Connection, error) {
	if c.Name == "" || strings.ContainsAny(c.Name, " /") {
		return nil, fmt.Errorf("tables: name %q: give each connection a name without spaces or slashes", c.Name)
	}
	props := iceberg.Properties{}
	maps.Copy(props, c.Properties)
	if c.Warehouse != "" {
		props["warehouse"] = c.Warehouse
	}
	if c.URI == "" {
		return nil, fmt.Errorf("tables: connection %s: uri is empty", c.Name)
	}
	props["uri"] = c.URI
	catName := c.Name
	if c.Catalog != "" {
		catName = c.Catalog
	}
	switch c.Type {
	case "sql":
		switch c.Dialect {
		case "sqlite":
			props[sqlcat.DriverKey] = "sqlite"
		case "postgres":
			props[sqlcat.DriverKey] = "postgres"
		default:
			return nil, fmt.Errorf("tables: connection %s: dialect %q: use sqlite or postgres", c.Name, c.Dialect)
		}
		props[sqlcat.DialectKey] = c.Dialect
		// Tidemark only reads a catalog: never create catalog tables in someone's database.
		if _, ok := props["init_catalog_tables"]; !ok {
			props["init_catalog_tables"] = "false"
		}
	case "rest":
	default:
		return nil, fmt.Errorf("tables: connection %s: type %q: use sql or rest", c.Name, c.Type)
	}
	props["type"] = c.Type
	ns := c.Namespace
	if ns == "" {
		ns = "iceberg://" + c.Name
	}
	return &Connection{Name: c.Name, Namespace: ns, Props: props, open: func(ctx context.Context) (icecat.Catalog, error) {
		return icecat.Load(ctx, catName, props)
	}}, nil
}

// NewCatalogConnection wraps an already open catalog (tests, embedding).
func NewCatalogConnection(name, namespace string, props iceberg.Properties, cat icecat.Catalog) *Connection {
	if namespace == "" {
		namespace = "iceberg://" + name
	}
	return &Connection{Name: name, Namespace: namespace, Props: props, cat: cat}
}

// Catalog returns the open catalog, opening it if needed.
func (c *Connection) Catalog(ctx context.Context) (icecat.Catalog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cat != nil {
		return c.cat, nil
	}
	if c.open == nil {
		return nil, fmt.Errorf("tables: connection %s is closed", c.Name)
	}
	cat, err := c.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("tables: open Iceberg catalog %s: %w", c.Name, err)
	}
	c.cat = cat
	return cat, nil
}

// Close closes the catalog if this connection opened it.
func (c *Connection) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cat == nil || c.open == nil {
		return nil
	}
	cl, ok := c.cat.(io.Closer)
	c.cat = nil
	if ok {
		return cl.Close()
	}
	return nil
}
